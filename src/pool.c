/* pool.c: worker threads that run the jobs they are given. Each thread
 * applies the run's nice value and CPUs to itself (both are per thread on
 * Linux), then runs queued jobs one at a time. The pool knows nothing of
 * targets: a job is a function and what it holds.
 *
 * Ownership follows Android lmkd's reaper: a job carries its own copy of
 * whatever it acts on (a duplicate pidfd) and closes only that. A job that
 * does not return in time (process_mrelease or a smaps_rollup read waiting
 * for a stuck mmap_lock) can be abandoned: its thread keeps it until it
 * returns and then drops it, and the pool starts another thread in its
 * place. Nobody else ever touches what an abandoned job holds.
 *
 * The main thread waits for results in ppoll with the run's wait mask, so
 * that a signal always reaches it. With no thread at all (pids.max or
 * RLIMIT_NPROC reached) the main thread runs the jobs itself, one at a time,
 * looking for a signal before each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mrelease.h"

/* Threads started in place of those lost in abandoned jobs. */
#define MAX_REPLACEMENTS 16
/* The workers read small files into buffers on their stacks; 8 MiB each
 * would only be address space to lock. Sanitizers need more room. */
#if defined(__SANITIZE_ADDRESS__)
#define STACK_SIZE ((size_t)1024 * 1024)
#else
#define STACK_SIZE ((size_t)64 * 1024)
#endif

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_ABANDONED };

/* One per thread: the pool's argument to it, and the job it is in. */
struct slot {
	struct mr_pool *pool;
	pthread_t tid;
	struct mr_job *job;
	bool detached;
};

struct mr_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_attr_t attr;
	int efd; /* written when a job is done */
	struct mr_sched sched;
	struct mr_job *queue, **tail; /* waiting to run */
	struct mr_job *done;          /* done, not collected yet */
	unsigned int ndone, want;     /* done, not collected; how many the main
				       * thread waits for */
	struct slot *slots;
	unsigned int threads, ready, lost, replacements, idle;
	int nice_err, affinity_err;
	bool quit;
	unsigned int refs; /* once stopped: the main thread, and each thread
			    * detached in an abandoned job */
};

static void destroy(struct mr_pool *p)
{
	for (struct mr_job *j = p->done, *next; j; j = next) {
		next = j->next;
		j->drop(j);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	pthread_attr_destroy(&p->attr);
	close(p->efd);
	free(p->slots);
	free(p);
}

/* Called locked; unlocks. The last to let go of a stopped pool frees it. */
static void put(struct mr_pool *p)
{
	bool last = --p->refs == 0;

	pthread_mutex_unlock(&p->lock);
	if (last)
		destroy(p);
}

static void *worker(void *arg)
{
	struct slot *self = arg;
	struct mr_pool *p = self->pool;
	int nice_err, affinity_err;

	mr_sched_apply(&p->sched, &nice_err, &affinity_err);
	pthread_mutex_lock(&p->lock);
	p->ready++;
	p->nice_err = p->nice_err ? p->nice_err : nice_err;
	p->affinity_err = p->affinity_err ? p->affinity_err : affinity_err;
	pthread_cond_broadcast(&p->cond);
	for (;;) {
		struct mr_job *job;

		while (!p->quit && !p->queue) {
			p->idle++;
			pthread_cond_wait(&p->cond, &p->lock);
			p->idle--;
		}
		if (p->quit)
			break;
		job = p->queue;
		if (!(p->queue = job->next))
			p->tail = &p->queue;
		job->state = JOB_RUNNING;
		self->job = job;
		pthread_mutex_unlock(&p->lock);
		job->run(job);
		pthread_mutex_lock(&p->lock);
		self->job = NULL;
		if (job->state == JOB_ABANDONED) {
			/* Back from a job nobody waits for: drop it, and
			 * count this thread live again. */
			p->lost--;
			pthread_mutex_unlock(&p->lock);
			job->drop(job);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		job->state = JOB_DONE;
		job->next = p->done;
		p->done = job;
		/* The main thread takes every job done at once, when as many are
		 * done as it waits for: one wakeup for a batch, not one a job. */
		if (++p->ndone == p->want)
			eventfd_write(p->efd, 1);
	}
	if (self->detached)
		put(p);
	else
		pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Called locked. */
static int start_thread(struct mr_pool *p)
{
	struct slot *s = &p->slots[p->threads];
	int r;

	*s = (struct slot){ .pool = p };
	if ((r = pthread_create(&s->tid, &p->attr, worker, s)))
		return -r;
	p->threads++;
	return 0;
}

/* Start up to n threads. *started says how many could be (with *errnum
 * the reason for the first that could not); with none, the main thread
 * runs the jobs. -errno only when there is no pool at all. */
int mr_pool_start(struct mr_pool **out, unsigned int n, const struct mr_sched *s,
		  unsigned int *started, int *errnum)
{
	struct mr_pool *p = calloc(1, sizeof(*p));
	int r = 0;

	*out = NULL;
	*errnum = 0;
	if (p && !(p->slots = calloc(n + MAX_REPLACEMENTS, sizeof(*p->slots)))) {
		free(p);
		p = NULL;
	}
	if (!p)
		return -ENOMEM;
	p->sched = *s;
	p->tail = &p->queue;
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0) {
		r = -errno;
		free(p->slots);
		free(p);
		return r;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_attr_init(&p->attr);
	pthread_attr_setstacksize(&p->attr, STACK_SIZE);
	pthread_mutex_lock(&p->lock);
	while (p->threads < n && !(r = start_thread(p)))
		;
	pthread_mutex_unlock(&p->lock);
	*errnum = -r;
	*started = p->threads;
	*out = p;
	return 0;
}

/* Wait until every thread has tried the nice value and CPUs, which must be
 * known before anything is sent; the first error of each, or 0. Without
 * threads the main thread applies them to itself. */
void mr_pool_ready(struct mr_pool *p, int *nice_err, int *affinity_err)
{
	pthread_mutex_lock(&p->lock);
	while (p->ready < p->threads)
		pthread_cond_wait(&p->cond, &p->lock);
	*nice_err = p->nice_err;
	*affinity_err = p->affinity_err;
	pthread_mutex_unlock(&p->lock);
	if (!p->threads)
		mr_sched_apply(&p->sched, nice_err, affinity_err);
}

/* Queue the n jobs at once: one lock, and one wakeup of the threads. */
void mr_pool_submit(struct mr_pool *p, struct mr_job **jobs, size_t n)
{
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < n; i++) {
		jobs[i]->next = NULL;
		jobs[i]->state = JOB_QUEUED;
		*p->tail = jobs[i];
		p->tail = &jobs[i]->next;
	}
	/* The threads that are waiting take them; those that are busy will. */
	if (p->idle && n > 1)
		pthread_cond_broadcast(&p->cond);
	else if (p->idle && n)
		pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* A signal let in now: -EINTR. */
static int signalled(const sigset_t *mask)
{
	struct timespec zero = { 0, 0 };

	return ppoll(NULL, 0, &zero, mask) < 0 && errno == EINTR ? -EINTR : 0;
}

/* No thread: run the next queued job here. */
static void run_inline(struct mr_pool *p)
{
	struct mr_job *job = p->queue;

	if (!(p->queue = job->next))
		p->tail = &p->queue;
	job->run(job);
	job->state = JOB_DONE;
	job->next = p->done;
	p->done = job;
	p->ndone++;
}

/* Hand back the jobs done so far, as a list in *done, once want of them
 * (at least one) are done. 0; -ETIMEDOUT when deadline_us passes first
 * (with what was done by then, if any); -EINTR when a signal let in by mask
 * comes (likewise). */
int mr_pool_collect(struct mr_pool *p, unsigned int want, int64_t deadline_us,
		    const sigset_t *mask, struct mr_job **done)
{
	struct pollfd pfd = { .fd = p->efd, .events = POLLIN };
	eventfd_t v;

	*done = NULL;
	for (;;) {
		int64_t wait = deadline_us - mr_now_us();
		struct timespec ts;
		int r = 0;

		pthread_mutex_lock(&p->lock);
		if (!p->threads && p->queue && wait > 0 && !(r = signalled(mask)))
			run_inline(p);
		p->want = want ? want : 1;
		if (r || wait <= 0 || p->ndone >= p->want) {
			*done = p->done;
			p->done = NULL;
			p->ndone = 0;
		}
		pthread_mutex_unlock(&p->lock);
		if (r || *done)
			return r;
		if (wait <= 0)
			return -ETIMEDOUT;
		ts = (struct timespec){ wait / 1000000, (wait % 1000000) * 1000 };
		if (ppoll(&pfd, 1, &ts, mask) < 0 && errno == EINTR)
			return -EINTR;
		eventfd_read(p->efd, &v);
	}
}

/* The caller no longer waits for this job. One not started is dropped now;
 * one running is dropped by its thread when it returns, and another thread
 * takes that one's place. */
void mr_pool_abandon(struct mr_pool *p, struct mr_job *job)
{
	pthread_mutex_lock(&p->lock);
	if (job->state == JOB_RUNNING) {
		job->state = JOB_ABANDONED;
		p->lost++;
		if (p->replacements < MAX_REPLACEMENTS && start_thread(p) == 0)
			p->replacements++;
		pthread_mutex_unlock(&p->lock);
		return;
	}
	for (struct mr_job **j = job->state == JOB_QUEUED ? &p->queue : &p->done; *j;
	     j = &(*j)->next) {
		if (*j != job)
			continue;
		*j = job->next;
		if (job->state == JOB_QUEUED && !*j)
			p->tail = j;
		p->ndone -= job->state == JOB_DONE;
		break;
	}
	pthread_mutex_unlock(&p->lock);
	job->drop(job);
}

/* Threads that can still take a job; with none started, the main thread
 * counts as one. */
unsigned int mr_pool_live(struct mr_pool *p)
{
	unsigned int n;

	pthread_mutex_lock(&p->lock);
	n = p->threads ? p->threads - p->lost : 1;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* Let the workers go. A thread still in an abandoned job cannot be waited
 * for: it is detached, and the last of those to return frees the pool (or
 * the process ends first). */
void mr_pool_stop(struct mr_pool *p)
{
	struct mr_job *q;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->quit = true;
	p->refs = 1;
	pthread_cond_broadcast(&p->cond);
	q = p->queue;
	p->queue = NULL;
	p->tail = &p->queue;
	for (unsigned int i = 0; i < p->threads; i++) {
		if (!p->slots[i].job)
			continue;
		p->slots[i].detached = true;
		p->refs++;
		pthread_detach(p->slots[i].tid);
	}
	pthread_mutex_unlock(&p->lock);
	while (q) {
		struct mr_job *next = q->next;

		q->drop(q);
		q = next;
	}
	for (unsigned int i = 0; i < p->threads; i++)
		if (!p->slots[i].detached)
			pthread_join(p->slots[i].tid, NULL);
	pthread_mutex_lock(&p->lock);
	put(p);
}
