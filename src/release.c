/* release.c: SIGKILL through the pidfd, process_mrelease on worker threads,
 * and waiting for exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
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

int mr_target_kill(struct mr_target *t)
{
	if (mr_sys_pidfd_send_signal(t->pidfd, SIGKILL) == 0) {
		t->killed = true;
		return 0;
	}
	if (errno == ESRCH) {
		t->status = MR_EXITED;
		return -ESRCH;
	}
	mr_target_fail(t, MR_E_ERRNO, errno);
	return -t->errnum;
}

struct pool {
	struct mr_target **order;
	size_t n;
	atomic_size_t next;
	const struct mr_release_opts *o;
	/* The workers report in, then wait for the word to go or to quit. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int ready;
	enum { WAIT, GO, QUIT } phase;
	int sched_error;
	atomic_uint retries;
	atomic_bool nosys;
};

static void release_one(struct pool *p, struct mr_target *t)
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
			atomic_fetch_add(&p->retries, 1);
			usleep(delay);
			delay *= 2;
			continue;
		}
		if (e == ESRCH)
			t->status = MR_EXITED;
		else if (e == EINVAL)
			/* The kernel releases only an address space whose every
			 * user is dying: if we killed it, another live process
			 * shares it (vfork, CLONE_VM). */
			mr_target_fail(t, t->killed ? MR_E_SHARED_MM : MR_E_NOT_EXITING, 0);
		else if (e == ENOSYS) {
			/* Without process_mrelease the best we can do is see
			 * the exit happen: mr_wait_exit() waits for them all. */
			atomic_store(&p->nosys, true);
			t->waiting = true;
		} else
			mr_target_fail(t, MR_E_ERRNO, e);
		break;
	}
	t->release_us = mr_now_us() - start;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	int r = mr_sched_apply(&p->o->sched);
	bool quit;
	size_t i;

	pthread_mutex_lock(&p->lock);
	if (r)
		p->sched_error = r;
	p->ready++;
	pthread_cond_broadcast(&p->cond);
	while (p->phase == WAIT)
		pthread_cond_wait(&p->cond, &p->lock);
	quit = p->phase == QUIT;
	pthread_mutex_unlock(&p->lock);
	if (quit)
		return NULL;
	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		release_one(p, p->order[i]);
	return NULL;
}

/* Largest first, so the most memory comes back soonest; unmeasured
 * targets (MR_UNKNOWN) go last in their given order. */
static int by_rss_desc(const void *a, const void *b)
{
	const struct mr_target *x = *(struct mr_target *const *)a;
	const struct mr_target *y = *(struct mr_target *const *)b;

	if (x->before.rss_kb != y->before.rss_kb)
		return x->before.rss_kb < y->before.rss_kb ? 1 : -1;
	return x < y ? -1 : x > y;
}

/* Kill (with o->kill) and release every pending target on o->jobs threads.
 * The threads apply o->sched before anything is sent: if they cannot, the
 * run stops here with that -errno and no target is touched. */
int mr_release_all(struct mr_target *targets, size_t n, const struct mr_release_opts *o,
		   struct mr_release_stats *stats)
{
	struct pool p = { .o = o };
	unsigned int jobs = o->jobs ? o->jobs : 1;
	pthread_t *threads;
	unsigned int started = 0;
	int r = 0;

	p.order = calloc(n ? n : 1, sizeof(*p.order));
	threads = calloc(jobs, sizeof(*threads));
	if (!p.order || !threads) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (targets[i].status == MR_PENDING)
			p.order[p.n++] = &targets[i];
	qsort(p.order, p.n, sizeof(*p.order), by_rss_desc);
	if (jobs > p.n)
		jobs = p.n ? (unsigned int)p.n : 1;

	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	for (; started < jobs && !r; started++)
		r = -pthread_create(&threads[started], NULL, worker, &p);
	if (r)
		started--;
	pthread_mutex_lock(&p.lock);
	while (p.ready < started)
		pthread_cond_wait(&p.cond, &p.lock);
	if (!r)
		r = p.sched_error;
	pthread_mutex_unlock(&p.lock);

	if (!r && o->kill) {
		size_t k = 0;

		/* Every kill goes out before the first release, so all
		 * targets start dying at once; the ones a kill found gone
		 * or could not signal are done. */
		if (o->kill_first)
			o->kill_first(o->kill_first_arg);
		for (size_t i = 0; i < p.n; i++)
			mr_target_kill(p.order[i]);
		for (size_t i = 0; i < p.n; i++)
			if (p.order[i]->status == MR_PENDING)
				p.order[k++] = p.order[i];
		p.n = k;
	}
	pthread_mutex_lock(&p.lock);
	p.phase = r ? QUIT : GO;
	pthread_cond_broadcast(&p.cond);
	pthread_mutex_unlock(&p.lock);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	pthread_mutex_destroy(&p.lock);
	pthread_cond_destroy(&p.cond);
	stats->nosys = atomic_load(&p.nosys);
	stats->retries = atomic_load(&p.retries);
	stats->sched_error = p.sched_error;
out:
	free(p.order);
	free(threads);
	return r;
}

/* Wait until the targets left waiting by a missing process_mrelease have
 * exited, and with released, the released ones too, all up to one deadline
 * timeout_ms away. A waiting target that exits has exited; those still there
 * at the deadline have failed. While waiting, the signal mask is sigmask (as
 * ppoll takes it): a signal caught then ends the wait with -EINTR, failing
 * the waiting targets and leaving the released ones as they are. */
int mr_wait_exit(struct mr_target *targets, size_t n, unsigned int timeout_ms,
		 const sigset_t *sigmask, bool released)
{
	int64_t deadline = mr_now_us() + (int64_t)timeout_ms * 1000;
	struct mr_target **waiting;
	struct pollfd *fds;
	size_t k = 0;
	int r = 0;

	waiting = calloc(n ? n : 1, sizeof(*waiting));
	fds = calloc(n ? n : 1, sizeof(*fds));
	if (!waiting || !fds) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (targets[i].waiting || (released && targets[i].status == MR_RELEASED))
			waiting[k++] = &targets[i];
	/* Polled at least once, so that a timeout of 0 still sees the exits
	 * that have happened. */
	for (bool first = true; k; first = false) {
		int64_t left = deadline - mr_now_us();
		struct timespec ts;
		size_t still = 0;

		if (left <= 0 && !first)
			break;
		if (left < 0)
			left = 0;
		ts = (struct timespec){ left / 1000000, (left % 1000000) * 1000 };
		for (size_t i = 0; i < k; i++)
			fds[i] = (struct pollfd){ .fd = waiting[i]->pidfd, .events = POLLIN };
		if (ppoll(fds, k, &ts, sigmask) < 0) {
			r = -errno;
			break;
		}
		for (size_t i = 0; i < k; i++) {
			if (!(fds[i].revents & POLLIN))
				waiting[still++] = waiting[i];
			else if (waiting[i]->waiting)
				waiting[i]->status = MR_EXITED;
		}
		k = still;
	}
	for (size_t i = 0; i < k; i++) {
		if (waiting[i]->waiting)
			mr_target_fail(waiting[i], MR_E_NOSYS, 0);
		else if (!r)
			mr_target_fail(waiting[i], MR_E_TIMEOUT, 0);
	}
out:
	free(waiting);
	free(fds);
	return r;
}
