/* pool.c: the worker threads. Each applies the run's nice value and CPUs
 * to itself (both are per thread on Linux), then takes targets one at a
 * time from a shared list: to open them and read their figures, or to
 * release them. The main thread hands out the work and waits for it in
 * ppoll with the run's wait mask, so that a signal always reaches it.
 *
 * Two calls can keep a worker in the kernel for good: reading smaps_rollup
 * and process_mrelease both take the target's mmap_lock, and a process
 * stuck while it holds that lock for writing never lets go. Neither may
 * hold up the run. A worker works on a copy of its target and writes the
 * results back only while the phase it took it from is still on. A phase
 * that makes no progress for STALL_MS gives up the figures still being
 * read (the kill matters more) and gets one more thread for the targets
 * not yet taken.
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
 * figures read). */
enum item_state { ITEM_WAITING, ITEM_TAKEN, ITEM_ACTED, ITEM_DONE };

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
	size_t n, next, acted, done, progress;
	bool figures, quit;
	pthread_t *tids;
	unsigned int threads, ready, busy, extra;
	int sched_error;
	unsigned int retries;
	bool nosys;
};

/* Open a target. A cgroup member must still be one once its pidfd is open:
 * its pid may have gone to another process since the listing. */
static void open_target(const struct mr_run *run, struct mr_target *t)
{
	int in;

	mr_target_open(run, t);
	if (t->cgroup < 0)
		return;
	/* A kernel thread in a cgroup was never asked for by number: it is
	 * left out, as mrelease and pid 1 are, not failed. */
	if (t->status == MR_FAILED && t->error == MR_E_KTHREAD) {
		t->dropped = true;
		mr_target_close(t);
		return;
	}
	if (t->status == MR_FAILED && t->error == MR_E_NO_PROCESS) {
		t->status = MR_EXITED;
		t->error = MR_E_NONE;
	}
	if (t->status != MR_PENDING)
		return;
	in = mr_cgroup_holds(run->cfg.proc, &run->cgroups[t->cgroup], t->pid, run->cfg.recursive);
	if (!mr_target_alive(t))
		t->status = MR_EXITED;
	else if (in != 1) {
		t->dropped = true;
		mr_target_close(t);
	}
}

/* The figures before (once opened) or after (once released or gone). */
static void read_figures(const struct mr_run *run, enum mr_job job, struct mr_target *t)
{
	int r;

	if (job == MR_JOB_OPEN && t->status == MR_PENDING && !t->dropped) {
		r = mr_measure(run->cfg.proc, run->cfg.measure, t, &t->before);
		if (r == -ESRCH)
			t->status = MR_EXITED;
		else if (r && !t->proc_file) {
			t->proc_file = run->cfg.measure == MR_MEASURE_SMAPS ? "smaps_rollup" : "status";
			t->proc_errnum = -r;
		}
	} else if (job != MR_JOB_OPEN && (t->status == MR_RELEASED || t->status == MR_EXITED)) {
		mr_measure(run->cfg.proc, run->cfg.measure, t, &t->after);
	}
}

static bool phase_complete(const struct mr_pool *p)
{
	return p->done == p->n || (!p->figures && p->acted == p->n);
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
	*p->items[i] = *tmp;
	p->state[i] = (unsigned char)st;
	p->acted += st == ITEM_ACTED;
	p->done += st == ITEM_DONE;
	p->progress++;
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
	bool nosys = false, figures;

	p->state[i] = ITEM_TAKEN;
	p->busy++;
	pthread_mutex_unlock(&p->lock);
	if (job == MR_JOB_OPEN)
		open_target(p->run, &tmp);
	else
		mr_target_release(&tmp, job == MR_JOB_TRY_RELEASE, &retries, &nosys);
	pthread_mutex_lock(&p->lock);
	figures = commit(p, gen, i, &tmp, ITEM_ACTED) && p->figures;
	pthread_mutex_unlock(&p->lock);
	if (figures)
		read_figures(p->run, job, &tmp);
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
	run->threads = p->threads;
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
	if (!r && !p->threads)
		r = mr_sched_apply(&p->run->cfg.sched);
	return r;
}

/* No thread: the main thread does it all, and cannot be interrupted. */
static void run_inline(struct mr_pool *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct mr_target *t = p->items[i];
		bool nosys = false;

		if (p->job == MR_JOB_OPEN)
			open_target(p->run, t);
		else
			mr_target_release(t, p->job == MR_JOB_TRY_RELEASE, &p->retries, &nosys);
		p->nosys |= nosys;
		read_figures(p->run, p->job, t);
	}
}

/* End the phase with items unfinished: their results are no longer taken,
 * and those not done were interrupted. Called locked. */
static void abandon(struct mr_pool *p)
{
	p->gen++;
	for (size_t i = 0; i < p->n; i++)
		if (p->state[i] != ITEM_DONE && p->items[i]->status == MR_PENDING)
			p->items[i]->status = MR_INTERRUPTED;
	p->n = p->next = 0;
}

/* Run one phase over n targets and wait for it: 0, or -EINTR when a signal
 * ended the wait (the unfinished targets are then MR_INTERRUPTED). */
int mr_pool_run(struct mr_pool *p, enum mr_job job, struct mr_target **items, size_t n)
{
	struct pollfd pfd = { .fd = p->efd, .events = POLLIN };
	size_t seen;
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
	p->next = p->acted = p->done = 0;
	p->figures = true;
	p->gen++;
	if (!p->threads || p->efd < 0) {
		pthread_mutex_unlock(&p->lock);
		run_inline(p);
		return 0;
	}
	pthread_cond_broadcast(&p->cond);
	while (!phase_complete(p)) {
		struct timespec ts = { STALL_MS / 1000, (STALL_MS % 1000) * 1000000L };

		seen = p->progress;
		pthread_mutex_unlock(&p->lock);
		r = ppoll(&pfd, 1, &ts, &p->run->cfg.waitmask);
		if (r > 0)
			eventfd_read(p->efd, &v);
		r = r < 0 ? -errno : 0;
		pthread_mutex_lock(&p->lock);
		if (r == -EINTR) {
			abandon(p);
			break;
		}
		if (phase_complete(p) || p->progress != seen)
			continue;
		/* Stalled: a worker is stuck on a target's mmap_lock. */
		if (p->figures && p->acted > p->done) {
			p->figures = false;
			mr_note_add(p->run, (struct mr_note){ .kind = MR_N_FIGURES_STALLED,
							     .n = p->acted - p->done });
		}
		if (p->next < p->n && p->extra < MAX_EXTRA && start_thread(p) == 0) {
			p->extra++;
			mr_note_add(p->run, (struct mr_note){ .kind = MR_N_STALLED, .n = 1 });
		}
	}
	if (!r)
		p->gen++; /* the phase is over: late results are dropped */
	pthread_mutex_unlock(&p->lock);
	return r;
}

void mr_pool_stats(const struct mr_pool *p, unsigned int *retries, bool *nosys)
{
	*retries = p->retries;
	*nosys = p->nosys;
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
