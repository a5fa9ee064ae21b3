/* pool.c: the worker threads. Each applies the run's nice value and CPUs
 * to itself (both are per thread on Linux), then takes targets one at a
 * time from a shared list: to open them and read their figures, or to
 * release them and read their figures again. The main thread hands out the
 * work and waits for it in ppoll with the run's wait mask, so that a
 * signal always reaches it. What a job does to one target is run.c's.
 *
 * Two calls can keep a worker in the kernel for good: reading smaps_rollup
 * and process_mrelease both take the target's mmap_lock, and a process
 * stuck while it holds that lock for writing never lets go. Neither may
 * hold up the run. A worker works on a copy of its target and writes the
 * results back only while the phase it took it from is still on. When no
 * target gets anywhere for STALL_MS, the phase gives up the figures of the
 * targets whose figures are being read (the kill matters more), and gets
 * one more thread for the targets not yet taken. A target whose kill or
 * release has not returned once there is nothing else left to do, and the
 * phase's bound has passed, is marked stuck and left behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mrelease.h"

/* A phase in which no target gets anywhere for this long is stalled. A
 * smaps walk takes about 7 ms a GiB and a release about 60: only a
 * process of tens of GiB takes this long on its own, and then giving up
 * its figures costs nothing but the figures. */
#define STALL_MS 250
#define MAX_EXTRA 8
/* The workers read small files into buffers on their stacks; 8 MiB each
 * would only be address space to lock. Sanitizers need more room. */
#if defined(__SANITIZE_ADDRESS__)
#define STACK_SIZE ((size_t)1024 * 1024)
#else
#define STACK_SIZE ((size_t)64 * 1024)
#endif

/* An item is taken, acted on (opened, or released), then done (its
 * figures read). A stalled phase gives up items that do not get there. */
enum item_state { ITEM_WAITING, ITEM_TAKEN, ITEM_ACTED, ITEM_DONE, ITEM_GIVEN_UP };

struct mr_pool {
	struct mr_run *run; /* the workers read its cfg and cgroups only */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_attr_t attr;
	int efd; /* written when a phase is complete */
	enum mr_job job;
	unsigned int gen; /* a result from another phase is dropped */
	struct mr_target **items;
	unsigned char *state;
	size_t n, next, done, given_up, progress;
	int64_t progress_us; /* when an item last got anywhere */
	bool quit;
	pthread_t *tids;
	unsigned int threads, ready, busy, extra;
	int sched_error;
	unsigned int retries;
	bool nosys;
};

static bool phase_complete(const struct mr_pool *p)
{
	return p->done + p->given_up == p->n;
}

/* Write a result back, if its phase is still on. Called locked. */
static bool commit(struct mr_pool *p, unsigned int gen, size_t i, struct mr_target *tmp,
		   enum item_state st)
{
	if (gen != p->gen) {
		if (st == ITEM_ACTED && p->job == MR_JOB_OPEN)
			mr_target_close(tmp);
		return false;
	}
	/* Given up, yet here after all: it counts as what it is now. */
	if (p->state[i] == ITEM_GIVEN_UP)
		p->given_up--;
	*p->items[i] = *tmp;
	p->state[i] = (unsigned char)st;
	p->done += st == ITEM_DONE;
	p->progress++;
	p->progress_us = mr_now_us();
	if (phase_complete(p) && p->efd >= 0)
		eventfd_write(p->efd, 1);
	return true;
}

/* Do item i of the current phase. Called locked, returns locked. */
static void work_on(struct mr_pool *p, size_t i)
{
	struct mr_target tmp = *p->items[i];
	unsigned int gen = p->gen, retries = 0;
	enum mr_job job = p->job;
	bool nosys = false, go;

	p->state[i] = ITEM_TAKEN;
	p->busy++;
	pthread_mutex_unlock(&p->lock);
	if (job == MR_JOB_OPEN)
		mr_run_open(p->run, &tmp);
	else
		mr_target_release(&tmp, job == MR_JOB_TRY_RELEASE, &retries, &nosys);
	pthread_mutex_lock(&p->lock);
	go = commit(p, gen, i, &tmp, ITEM_ACTED);
	pthread_mutex_unlock(&p->lock);
	if (go)
		mr_run_figures(p->run, job, &tmp, p->run->cfg.measure);
	pthread_mutex_lock(&p->lock);
	p->busy--;
	p->retries += retries;
	p->nosys |= nosys;
	commit(p, gen, i, &tmp, ITEM_DONE);
}

static void *worker(void *arg)
{
	struct mr_pool *p = arg;
	int r = mr_sched_apply(&p->run->cfg.sched);

	pthread_mutex_lock(&p->lock);
	p->ready++;
	if (r && !p->sched_error)
		p->sched_error = r;
	pthread_cond_broadcast(&p->cond);
	/* A worker that cannot run as asked does no work. */
	while (!r) {
		while (!p->quit && p->next >= p->n)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->quit)
			break;
		work_on(p, p->next++);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static int start_thread(struct mr_pool *p)
{
	int r = pthread_create(&p->tids[p->threads], &p->attr, worker, p);

	if (r)
		return -r;
	p->threads++;
	return 0;
}

/* Start jobs threads; each applies the run's nice value and CPUs to itself
 * and then waits for work. mr_pool_ready() tells whether they could. If no
 * thread can be started at all (pids.max reached during a fork bomb, no
 * memory), the main thread will do the work itself. */
int mr_pool_start(struct mr_pool **out, struct mr_run *run, unsigned int jobs)
{
	struct mr_pool *p = calloc(1, sizeof(*p));
	int r = 0;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->run = run;
	p->tids = calloc(jobs + MAX_EXTRA, sizeof(*p->tids));
	if (!p->tids) {
		free(p);
		return -ENOMEM;
	}
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_attr_init(&p->attr);
	pthread_attr_setstacksize(&p->attr, STACK_SIZE);
	pthread_mutex_lock(&p->lock);
	while (p->efd >= 0 && p->threads < jobs && !(r = start_thread(p)))
		;
	pthread_mutex_unlock(&p->lock);
	if (r || p->efd < 0)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_THREADS_SHORT, .n = p->threads,
						  .errnum = r ? -r : errno });
	run->threads = p->efd >= 0 ? p->threads : 0;
	*out = p;
	return 0;
}

/* Wait until every thread has applied the run's nice value and CPUs, which
 * must be known before anything is sent: 0, or the -errno of the first that
 * could not. Without threads the main thread applies them to itself. */
int mr_pool_ready(struct mr_pool *p)
{
	int r;

	pthread_mutex_lock(&p->lock);
	while (p->ready < p->threads)
		pthread_cond_wait(&p->cond, &p->lock);
	r = p->sched_error;
	pthread_mutex_unlock(&p->lock);
	if (!r && !p->run->threads)
		r = mr_sched_apply(&p->run->cfg.sched);
	return r;
}

/* A signal let in now, between two items: -EINTR. */
static int signalled(const struct mr_pool *p)
{
	struct timespec zero = { 0, 0 };

	return ppoll(NULL, 0, &zero, &p->run->cfg.waitmask) < 0 && errno == EINTR ? -EINTR : 0;
}

/* No thread: the main thread does it all. It looks for a signal between
 * items, and reads the O(1) status counters instead of smaps_rollup, whose
 * page walk could block it for good behind a stuck mmap_lock. */
static int run_inline(struct mr_pool *p)
{
	enum mr_measure_mode mode = p->run->cfg.measure;

	if (mode == MR_MEASURE_SMAPS)
		mode = MR_MEASURE_STATUS;
	for (size_t i = 0; i < p->n; i++) {
		struct mr_target *t = p->items[i];
		bool nosys = false;

		if (signalled(p))
			return -EINTR;
		if (p->job == MR_JOB_OPEN)
			mr_run_open(p->run, t);
		else
			mr_target_release(t, p->job == MR_JOB_TRY_RELEASE, &p->retries, &nosys);
		p->nosys |= nosys;
		mr_run_figures(p->run, p->job, t, mode);
	}
	return 0;
}

/* No item got anywhere for STALL_MS. Called locked. */
static void stall(struct mr_pool *p, int64_t bound_us)
{
	size_t figures = 0;

	/* The figures being read are given up; the run goes on without. */
	for (size_t i = 0; i < p->n; i++) {
		if (p->state[i] == ITEM_ACTED) {
			p->state[i] = ITEM_GIVEN_UP;
			p->given_up++;
			figures++;
		}
	}
	if (figures)
		mr_note_add(p->run, (struct mr_note){ .kind = MR_N_FIGURES_STALLED, .n = figures });
	/* The targets not taken yet get another thread. */
	if (p->next < p->n && p->extra < MAX_EXTRA && start_thread(p) == 0) {
		p->extra++;
		mr_note_add(p->run, (struct mr_note){ .kind = MR_N_STALLED, .n = 1 });
	}
	/* With nothing left to take, an act that has not returned within the
	 * bound is left behind: it may never return. */
	if (p->next < p->n || mr_now_us() - p->progress_us < bound_us)
		return;
	for (size_t i = 0; i < p->n; i++) {
		if (p->state[i] == ITEM_TAKEN) {
			p->state[i] = ITEM_GIVEN_UP;
			p->given_up++;
			p->items[i]->stuck = true;
		}
	}
}

/* The phase is over: late results are dropped from now on, and the targets
 * whose figures were given up say so. Called locked. */
static void close_phase(struct mr_pool *p)
{
	p->gen++;
	for (size_t i = 0; i < p->n; i++) {
		struct mr_target *t = p->items[i];

		if (p->state[i] == ITEM_GIVEN_UP && !t->stuck && !t->proc_file) {
			t->proc_file = p->run->cfg.measure == MR_MEASURE_STATUS ? "status" :
										  "smaps_rollup";
			t->proc_errnum = MR_GAVE_UP;
		}
	}
	p->n = p->next = 0;
}

/* Run one phase over n targets and wait for it. Returns 0, or -EINTR when
 * a signal ended the wait: then the targets not acted on are as they were.
 * A target whose act has not returned bound_ms after the last progress,
 * with nothing else left to do, is marked stuck. */
int mr_pool_run(struct mr_pool *p, enum mr_job job, struct mr_target **items, size_t n,
		unsigned int bound_ms)
{
	struct pollfd pfd = { .fd = p->efd, .events = POLLIN };
	int64_t bound_us = (int64_t)bound_ms * 1000;
	eventfd_t v;
	int r = 0;

	if (!n)
		return 0;
	free(p->state);
	p->state = calloc(n, 1);
	if (!p->state)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	p->job = job;
	p->items = items;
	p->n = n;
	p->next = p->done = p->given_up = 0;
	p->progress_us = mr_now_us();
	p->gen++;
	if (!p->run->threads) {
		pthread_mutex_unlock(&p->lock);
		r = run_inline(p);
		pthread_mutex_lock(&p->lock);
		close_phase(p);
		pthread_mutex_unlock(&p->lock);
		return r;
	}
	/* A completion left over from the phase before is no news. */
	eventfd_read(p->efd, &v);
	pthread_cond_broadcast(&p->cond);
	while (!phase_complete(p)) {
		struct timespec ts = { STALL_MS / 1000, (STALL_MS % 1000) * 1000000L };
		size_t seen = p->progress;
		int e;

		pthread_mutex_unlock(&p->lock);
		e = ppoll(&pfd, 1, &ts, &p->run->cfg.waitmask);
		if (e > 0)
			eventfd_read(p->efd, &v);
		r = e < 0 ? -errno : 0;
		pthread_mutex_lock(&p->lock);
		if (r == -EINTR)
			break;
		r = 0;
		if (e == 0 && !phase_complete(p) && p->progress == seen)
			stall(p, bound_us);
	}
	close_phase(p);
	pthread_mutex_unlock(&p->lock);
	return r;
}

void mr_pool_stats(struct mr_pool *p, unsigned int *retries, bool *nosys)
{
	pthread_mutex_lock(&p->lock);
	*retries = p->retries;
	*nosys = p->nosys;
	pthread_mutex_unlock(&p->lock);
}

/* Let the workers go. One still stuck in the kernel cannot be waited for:
 * it ends with the process, and the pool stays allocated for it. */
void mr_pool_stop(struct mr_pool *p)
{
	bool stuck;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->quit = true;
	p->gen++;
	pthread_cond_broadcast(&p->cond);
	stuck = p->busy > 0;
	pthread_mutex_unlock(&p->lock);
	if (stuck)
		return;
	for (unsigned int i = 0; i < p->threads; i++)
		pthread_join(p->tids[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	pthread_attr_destroy(&p->attr);
	if (p->efd >= 0)
		close(p->efd);
	free(p->state);
	free(p->tids);
	free(p);
}
