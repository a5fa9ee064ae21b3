/* release.c: signals through the pidfd, process_mrelease with retries,
 * waiting for exits, and the pid watermarks that tell late forks from late
 * arrivals. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

/* process_mrelease answers EAGAIN when it could not take every page this
 * time (a blocking mmu notifier, a contended lock) and EINTR when a signal
 * came while it waited for mmap_lock; both are worth another try soon. */
#define RETRIES 8
#define RETRY_FIRST_US 500

int64_t mr_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* SIGKILL or SIGTERM through the pidfd. A process that is gone has exited;
 * one we may not signal has failed, and says so. */
int mr_target_signal(struct mr_target *t, int sig)
{
	if (mr_sys_pidfd_send_signal(t->pidfd, sig) == 0) {
		if (sig == SIGKILL)
			t->killed = true;
		else
			t->termed = true;
		return 0;
	}
	if (errno == ESRCH) {
		t->status = MR_EXITED;
		return -ESRCH;
	}
	mr_target_fail(t, sig == SIGKILL ? MR_E_KILL : MR_E_TERM, errno);
	return -t->errnum;
}

/* Strip a dying target's address space. With once (during --grace), a
 * target that is not dying yet stays pending: the kernel releases only a
 * process whose group exit has begun. */
void mr_target_release(struct mr_target *t, bool once, unsigned int *retries, bool *nosys)
{
	unsigned int delay = RETRY_FIRST_US;
	int64_t start = mr_now_us();
	int e;

	for (int tries = 0;; tries++) {
		if (mr_sys_process_mrelease(t->pidfd) == 0) {
			t->status = MR_RELEASED;
			break;
		}
		e = errno;
		if ((e == EAGAIN || e == EINTR) && tries < RETRIES) {
			(*retries)++;
			usleep(delay);
			delay *= 2;
			continue;
		}
		if (e == ESRCH)
			t->status = MR_EXITED;
		else if (e == EINVAL && once)
			return;
		else if (e == EINVAL)
			/* The kernel releases only an address space whose every
			 * user is dying: if we killed it, another live process
			 * shares it (vfork, CLONE_VM). */
			mr_target_fail(t, t->killed ? MR_E_SHARED_MM : MR_E_NOT_EXITING, 0);
		else if (e == ENOSYS) {
			/* Without process_mrelease the best we can do is see
			 * the exit happen. */
			*nosys = true;
			t->waiting = true;
		} else
			mr_target_fail(t, MR_E_ERRNO, e);
		break;
	}
	t->release_us = mr_now_us() - start;
}

/* Wait until the n targets in waiting have exited (their pidfds poll
 * readable), up to deadline_us. Those that exit are moved to the front;
 * *left counts the others, at the back. While waiting the signal mask is
 * mask: a signal caught then ends the wait with -EINTR. Polled at least
 * once, so that a deadline already past still sees the exits that have
 * happened. */
int mr_wait_exit(struct mr_target **waiting, size_t n, int64_t deadline_us,
		 const sigset_t *mask, size_t *left)
{
	struct pollfd *fds = calloc(n ? n : 1, sizeof(*fds));
	size_t gone = 0;
	int r = 0;

	*left = n;
	if (!fds)
		return -ENOMEM;
	for (bool first = true; gone < n; first = false) {
		int64_t wait = deadline_us - mr_now_us();
		struct timespec ts;

		if (wait <= 0 && !first)
			break;
		if (wait < 0)
			wait = 0;
		ts = (struct timespec){ wait / 1000000, (wait % 1000000) * 1000 };
		for (size_t i = gone; i < n; i++)
			fds[i] = (struct pollfd){ .fd = waiting[i]->pidfd, .events = POLLIN };
		if (ppoll(fds + gone, n - gone, &ts, mask) < 0) {
			r = -errno;
			break;
		}
		for (size_t i = gone; i < n; i++) {
			if (fds[i].revents & POLLIN) {
				struct mr_target *t = waiting[i];

				waiting[i] = waiting[gone];
				waiting[gone++] = t;
			}
		}
	}
	*left = n - gone;
	free(fds);
	return r;
}

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* include/uapi/linux/pidfd.h, Linux 6.9 */
#endif

/* A thread that opens a pidfd for itself and reports its pidfs inode. */
static void *watermark_thread(void *arg)
{
	uint64_t *ino = arg;
	int fd = mr_sys_pidfd_open_flags(gettid(), PIDFD_THREAD);

	if (fd >= 0) {
		mr_pidfd_inode(fd, ino);
		close(fd);
	}
	return NULL;
}

/* The pidfs inode of a task made just now: pidfs numbers every pid in the
 * order it is allocated, so every process made before this call has a
 * smaller one, every process made after it a larger one. 0 where there is
 * no pidfs (before Linux 6.9), or no thread could be made. */
int mr_pid_watermark(uint64_t *ino)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	*ino = 0;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN + 16384);
	r = pthread_create(&t, &attr, watermark_thread, ino);
	pthread_attr_destroy(&attr);
	if (r)
		return -r;
	pthread_join(t, NULL);
	return 0;
}
