/* release.c: signals through a pidfd, process_mrelease with retries, and
 * waiting for exits. Each works on a descriptor it is given and never
 * closes it. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
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

/* 0 when the kernel accepted the signal; -ESRCH when the process is gone. */
int mr_pidfd_signal(int pidfd, int sig)
{
	return mr_sys_pidfd_send_signal(pidfd, sig) ? -errno : 0;
}

/* Strip a dying process's address space. 0, or -errno: -ESRCH it has none
 * left (gone, or its exit already took it), -EINVAL it is not dying (or
 * shares its address space with a live process), -ENOSYS no such call. */
int mr_release(int pidfd, unsigned int *retries)
{
	useconds_t delay = RETRY_FIRST_US;

	for (int tries = 0;; tries++) {
		int e;

		if (mr_sys_process_mrelease(pidfd) == 0)
			return 0;
		e = errno;
		if ((e != EAGAIN && e != EINTR) || tries == RETRIES)
			return -e;
		(*retries)++;
		usleep(delay);
		delay *= 2;
	}
}

/* Wait until each of the n pidfds polls readable (its process has exited
 * and can be reaped), or deadline_us: gone[i] says which did. While waiting
 * the signal mask is mask, and a signal caught then ends the wait with
 * -EINTR. Polled at least once, so that a deadline already past still sees
 * the exits that have happened. */
int mr_wait_exit(const int *pidfds, size_t n, int64_t deadline_us, const sigset_t *mask, bool *gone)
{
	struct pollfd *fds = calloc(n ? n : 1, sizeof(*fds));
	size_t left = n;
	int r = 0;

	if (!fds)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		fds[i] = (struct pollfd){ .fd = pidfds[i], .events = POLLIN };
		gone[i] = false;
	}
	for (bool first = true; left; first = false) {
		int64_t wait = deadline_us - mr_now_us();
		struct timespec ts;

		if (wait <= 0 && !first)
			break;
		wait = wait < 0 ? 0 : wait;
		ts = (struct timespec){ wait / 1000000, (wait % 1000000) * 1000 };
		if (ppoll(fds, n, &ts, mask) < 0) {
			r = -errno;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			if (fds[i].revents & POLLIN) {
				gone[i] = true;
				fds[i].fd = -1; /* ppoll skips it from now on */
				left--;
			}
		}
	}
	free(fds);
	return r;
}
