/* jobs.c: the work handed to the worker threads: the figures before the
 * kill, and the releases with the figures after them; and what
 * process_mrelease's answer says of each target.
 *
 * The contract: the kill never waits for a reading. What is not read
 * MR_READ_BOUND_MS after the readings began (counted once for the run) is
 * given up (mr_read_before); a release that does not return within the
 * bound is left behind on its thread (mr_run_jobs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"

/* Where a job is: waiting, begun, or its release returned (release_r is
 * set) and it reads the figures after. */
enum job_step { STEP_QUEUED, STEP_BEGUN, STEP_RELEASED };

/* A release works on its own duplicate of the target's pidfd and closes
 * only that, whenever it returns: the run's descriptors are never touched
 * from a worker thread. A reading needs none: it reads /proc/PID, and the
 * main thread, which holds the pidfd, checks that the process is still
 * there when it takes the figures (a pid is not reused before its process
 * is reaped), so that they are its own. */
struct job {
	struct mr_job base;
	enum mr_job_kind kind;
	size_t target; /* index into run->targets */
	int pidfd;     /* the release's own duplicate; -1 for a reading */
	pid_t mm_pid;
	const char *proc;
	enum mr_measure_mode mode;
	int step;      /* how far it got, and since when (both atomic: the main
			* thread reads them while a worker runs the job) */
	int64_t since;
	int read_r, release_r;
	struct mr_mem before, after;
	int64_t release_us;
	unsigned int retries;
	size_t slot;   /* in run_jobs' list of jobs out */
};

static void job_run(struct mr_job *base)
{
	struct job *j = (struct job *)base;
	int64_t start;

	__atomic_store_n(&j->since, mr_now_us(), __ATOMIC_RELAXED);
	__atomic_store_n(&j->step, STEP_BEGUN, __ATOMIC_RELEASE);
	if (j->kind == MR_JOB_READ) {
		j->read_r = mr_measure(j->proc, j->mode, j->mm_pid, j->pidfd, &j->before);
		return;
	}
	start = mr_now_us();
	j->release_r = mr_release(j->pidfd, &j->retries);
	j->release_us = mr_now_us() - start;
	__atomic_store_n(&j->since, mr_now_us(), __ATOMIC_RELAXED);
	__atomic_store_n(&j->step, STEP_RELEASED, __ATOMIC_RELEASE);
	/* After it, RSS is all that is shown, but for PSS with smaps. */
	if (j->release_r == 0 || j->release_r == -ESRCH)
		mr_measure(j->proc, j->mode == MR_MEASURE_STATUS ? MR_MEASURE_RSS : j->mode, j->mm_pid,
			   j->pidfd, &j->after);
}

static void job_drop(struct mr_job *base)
{
	struct job *j = (struct job *)base;

	if (j->pidfd >= 0)
		close(j->pidfd);
	free(j);
}

static struct job *job_new(struct mr_act *a, enum mr_job_kind kind, size_t i)
{
	const struct mr_target *t = &a->run->targets[i];
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	*j = (struct job){
		.base = { .run = job_run, .drop = job_drop },
		.kind = kind,
		.target = i,
		.pidfd = kind == MR_JOB_READ ? -1 : fcntl(t->pidfd, F_DUPFD_CLOEXEC, 3),
		.mm_pid = t->mm_pid,
		.proc = a->run->cfg.proc,
		.mode = a->run->cfg.measure,
	};
	mr_mem_unknown(&j->before);
	mr_mem_unknown(&j->after);
	if (kind != MR_JOB_READ && j->pidfd < 0) {
		free(j);
		return NULL;
	}
	return j;
}

/* A reading of the figures that failed with errnum. The first error told
 * stays (a /proc/PID/stat that could not be read says more than the status
 * after). */
static void read_failed(struct mr_run *run, struct mr_target *t, int errnum)
{
	if (t->figures != MR_FIG_UNREAD && t->figures != MR_FIG_READ)
		return;
	t->figures = MR_FIG_ERRNO;
	t->fig_file = run->cfg.measure == MR_MEASURE_SMAPS ? "smaps_rollup" : "status";
	t->fig_errnum = errnum;
}

/* A target that is not dying, and was sent nothing: with --dying it is
 * left alone; named without --kill, it fails (dumping core, or not
 * exiting). One sent the --grace signal only is not dying yet: the kill
 * follows. */
void mr_end_not_dying(struct mr_run *run, struct mr_target *t, bool dumping)
{
	if (run->cfg.dying)
		mr_target_end(t, MR_LEFT_OUT, MR_R_NOT_DYING, 0);
	else if (!t->signal)
		mr_target_end(t, MR_FAILED, dumping ? MR_R_COREDUMP : MR_R_NOT_EXITING, 0);
}

/* Why process_mrelease refused t as not dying: killed by cgroup.kill, it
 * had left the cgroup before the write, or (opened only after the write)
 * its pid names another process, alive, by then; it is dumping core (a
 * kill ends the dump only once every thread has reached it); killed, it
 * shares its address space with a live process outside; or it was never
 * dying. */
static void not_dying(struct mr_run *run, struct mr_target *t)
{
	const struct mr_cgroup *cg = t->cgroup >= 0 ? &run->cgroups[t->cgroup] : NULL;
	bool by_file = cg && cg->kill == MR_CGKILL_FILE && !t->named, dumping = false;
	int dying = -1;

	if (t->signal == SIGKILL && by_file &&
	    mr_cgroup_holds(run->cfg.proc, cg, t->pid, t->pidfd, run->cfg.recursive) == 0) {
		mr_target_end(t, MR_LEFT_OUT, MR_R_LEFT, 0);
		return;
	}
	/* Read only where it changes what is said: not for each process
	 * --dying finds alive. */
	if (t->signal == SIGKILL || (!t->signal && !run->cfg.dying))
		dying = mr_proc_dying(run->cfg.proc, t->mm_pid, &dumping);
	if (t->signal == SIGKILL && t->late && dying == 0)
		mr_target_end(t, MR_LEFT_OUT, MR_R_GONE, 0);
	else if (t->signal == SIGKILL)
		mr_target_end(t, MR_FAILED, dumping ? MR_R_COREDUMP : MR_R_SHARED_MM, 0);
	else
		mr_end_not_dying(run, t, dumping);
}

/* What process_mrelease said of t. */
static void released(struct mr_act *a, struct mr_target *t, const struct job *j)
{
	bool dumping;

	t->release_us = j->release_us;
	switch (j->release_r) {
	case 0: mr_target_end(t, MR_RELEASED, MR_R_NONE, 0); break;
	case -ESRCH: mr_target_end(t, MR_EXITED, MR_R_NONE, 0); break;
	case -EINVAL: not_dying(a->run, t); break;
	/* process_mrelease has no EPERM of its own: a seccomp filter said it. */
	case -EPERM: mr_target_end(t, MR_FAILED, MR_R_FILTERED, EPERM); break;
	/* Without process_mrelease, the exit is waited for instead; but
	 * not that of a process not killed that /proc says is not dying. */
	case -ENOSYS:
		a->nosys = true;
		if (!t->signal && mr_proc_dying(a->run->cfg.proc, t->mm_pid, &dumping) == 0)
			not_dying(a->run, t);
		break;
	default: mr_target_end(t, MR_FAILED, MR_R_RELEASE, -j->release_r); break;
	}
}

static void apply(struct mr_act *a, struct job *j)
{
	struct mr_run *run = a->run;
	struct mr_target *t = &run->targets[j->target];

	a->retries += j->retries;
	if (j->kind == MR_JOB_READ && !mr_target_alive(t)) {
		/* Gone: what was read may be another process's. */
		t->before = (struct mr_mem){ 0, 0, 0, 0 };
		t->figures = MR_FIG_READ;
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	} else if (j->kind == MR_JOB_READ && j->read_r == 0) {
		t->before = j->before;
		t->figures = MR_FIG_READ;
	} else if (j->kind == MR_JOB_READ) {
		read_failed(run, t, -j->read_r);
	}
	if (j->kind == MR_JOB_READ)
		return;
	t->after = j->after;
	released(a, t, j);
}

/* Why a job is given up. */
enum give_up { OVERDUE, PAST_DEADLINE, NO_THREAD, INTERRUPTED };

/* A job that did not come back in time. A reading gives up its figures; a
 * release that returned, only the figures after it. A release under way
 * is stuck only when it is overdue; one given up for any other reason (the
 * grace is over, no thread is left, the run is interrupted) leaves its
 * target as it was, to be killed (and released) as the rest of the run
 * decides, but for one that never began for want of a thread. */
static void give_up(struct mr_act *a, struct job *j, int step, enum give_up why)
{
	struct mr_target *t = &a->run->targets[j->target];

	/* Until it has returned, the worker may still count its retries. */
	if (step == STEP_RELEASED)
		a->retries += j->retries;
	if (j->kind == MR_JOB_READ || step == STEP_RELEASED) {
		if (step == STEP_RELEASED)
			released(a, t, j);
		if (t->figures == MR_FIG_UNREAD || t->figures == MR_FIG_READ)
			t->figures = MR_FIG_GIVEN_UP;
	} else if (why == OVERDUE) {
		mr_target_end(t, MR_FAILED, MR_R_STUCK, 0);
		a->stuck++;
	} else if (why == NO_THREAD && step == STEP_QUEUED) {
		mr_target_end(t, MR_FAILED, MR_R_NO_WORKER, 0);
	}
}

/* When a job is overdue: a release that has run for the bound; the
 * figures after a release that returned, once they have taken as long as
 * the readings before the kill may. A job waiting for a thread, or a
 * reading before the kill (the run's deadline bounds those), never is. */
static int64_t overdue_at(const struct mr_run *run, struct job *j, int *step)
{
	int64_t since;

	*step = __atomic_load_n(&j->step, __ATOMIC_ACQUIRE);
	since = __atomic_load_n(&j->since, __ATOMIC_RELAXED);
	if (j->kind == MR_JOB_RELEASE && *step == STEP_BEGUN)
		return since + (int64_t)run->bound_ms * 1000;
	if (*step == STEP_RELEASED)
		return since + (int64_t)MR_READ_BOUND_MS * 1000;
	return INT64_MAX;
}

/* Run kind for the targets in items on the pool until every one is done;
 * or the deadline passes (the rest is given up); or a job is overdue (it is
 * given up, and a thread started in its place); or no thread is left; or a
 * signal interrupts the run. Looked at every MR_READ_BOUND_MS at least, as
 * a job may begin at any time. */
int mr_run_jobs(struct mr_act *a, enum mr_job_kind kind, const size_t *items, size_t n,
		    int64_t deadline)
{
	struct mr_run *run = a->run;
	/* Readings hold no descriptor: all go at once; releases too, as far
	 * as descriptors allow, so that the threads need not wait for the main
	 * thread between two (after cgroup.kill, the processes it woke take
	 * the CPUs from it). */
	size_t spare = a->most > a->open ? a->most - a->open : 0;
	size_t window = !run->threads ? 1 : kind == MR_JOB_READ ? n :
			(size_t)run->threads * MR_JOBS_PER_THREAD + (spare < n ? spare : n);
	struct job **out = calloc(window ? window : 1, sizeof(*out));
	struct mr_job **base = calloc(window ? window : 1, sizeof(*base));
	size_t next = 0, busy = 0;

	if (!out || !base) {
		free(out);
		free(base);
		return mr_fatal(run, -ENOMEM, "job list");
	}
	while (next < n || busy) {
		int64_t wake, now = mr_now_us();
		struct mr_job *done;
		enum give_up why;
		size_t first = busy;
		int step, r;

		while (next < n && busy < window) {
			struct job *j = job_new(a, kind, items[next]);

			if (!j && kind == MR_JOB_READ)
				read_failed(run, &run->targets[items[next]], errno);
			else if (!j)
				mr_target_end(&run->targets[items[next]], MR_FAILED, MR_R_RELEASE, errno);
			next++;
			if (j) {
				j->slot = busy;
				out[busy] = j;
				base[busy++] = &j->base;
			}
		}
		if (busy > first)
			mr_pool_submit(a->pool, &base[first], busy - first);
		if (!busy)
			break;
		wake = now + (int64_t)MR_READ_BOUND_MS * 1000;
		/* Readings are bounded by the deadline alone. */
		for (size_t i = 0; kind == MR_JOB_RELEASE && i < busy; i++)
			if (overdue_at(run, out[i], &step) < wake)
				wake = overdue_at(run, out[i], &step);
		/* Woken for each job done while there are more to hand out, else
		 * once all are. */
		r = mr_pool_collect(a->pool, next < n ? 1 : (unsigned int)busy,
				    deadline < wake ? deadline : wake, &run->cfg.waitmask, &done);
		for (struct mr_job *d = done, *dn; d; d = dn) {
			struct job *j = (struct job *)d;

			dn = d->next;
			apply(a, j);
			out[j->slot] = out[--busy];
			out[j->slot]->slot = j->slot;
			d->drop(d);
		}
		if (r == -EINTR)
			run->interrupted = true;
		now = mr_now_us();
		why = run->interrupted ? INTERRUPTED : now >= deadline ? PAST_DEADLINE :
		      mr_pool_live(a->pool) == 0 ? NO_THREAD : OVERDUE;
		for (size_t i = 0; i < busy;) {
			bool overdue = overdue_at(run, out[i], &step) <= now;

			if (!overdue && why == OVERDUE) {
				i++;
				continue;
			}
			give_up(a, out[i], step, overdue ? OVERDUE : why);
			mr_pool_abandon(a->pool, &out[i]->base);
			out[i] = out[--busy];
			if (i < busy)
				out[i]->slot = i;
		}
		if (why != OVERDUE) {
			for (; next < n; next++)
				if (kind == MR_JOB_READ)
					run->targets[items[next]].figures = MR_FIG_GIVEN_UP;
				else if (why == NO_THREAD)
					mr_target_end(&run->targets[items[next]], MR_FAILED, MR_R_NO_WORKER, 0);
			break;
		}
	}
	free(out);
	free(base);
	return 0;
}

/* Largest first, so that the most memory comes back soonest. */
static int by_rss_desc(const void *x, const void *y, void *arg)
{
	const struct mr_run *run = arg;
	int64_t a = run->targets[*(const size_t *)x].before.rss_kb;
	int64_t b = run->targets[*(const size_t *)y].before.rss_kb;

	return (a < b) - (a > b);
}

/* To be read before its kill or release: held, not killed yet or killed
 * before it could be read (a member killed by its cgroup's write), its
 * figures not read yet. */
static bool to_read(const struct mr_target *t)
{
	return t->pidfd >= 0 && (t->state == MR_OPENED || t->state == MR_KILLED) &&
	       t->figures == MR_FIG_UNREAD;
}

/* The figures before the kill (or the release) of the targets in items
 * that have none yet, on the worker threads, within what is left of the
 * run's reading bound, one for all its batches. With no thread, nothing
 * is read: the main thread cannot give up a reading that does not return. */
int mr_read_before(struct mr_act *a, const size_t *items, size_t n)
{
	struct mr_run *run = a->run;
	int64_t start = mr_now_us();
	size_t k = 0, *v;
	int r;

	if (run->cfg.measure == MR_MEASURE_NONE)
		return 0;
	if (!(v = calloc(n ? n : 1, sizeof(*v))))
		return mr_fatal(run, -ENOMEM, "target list");
	for (size_t i = 0; i < n; i++)
		if (to_read(&run->targets[items[i]]))
			v[k++] = items[i];
	for (size_t i = 0; i < k; i++)
		if (!run->threads || a->read_left_us <= 0)
			run->targets[v[i]].figures = run->threads ? MR_FIG_GIVEN_UP : MR_FIG_NO_THREAD;
	r = k && run->threads && a->read_left_us > 0 ?
	    mr_run_jobs(a, MR_JOB_READ, v, k, start + a->read_left_us) : 0;
	if (k)
		a->read_left_us -= mr_now_us() - start;
	free(v);
	return r;
}

static int by_spec(const void *key, const void *x)
{
	pid_t p = ((const struct mr_pidspec *)key)->pid, q = ((const struct mr_pidspec *)x)->pid;

	return (p > q) - (p < q);
}

/* Whether the caller has seen t dying long enough (cfg.aged). */
static bool aged(const struct mr_run *run, const struct mr_target *t)
{
	const struct mr_pidlist *l = run->cfg.aged;
	struct mr_pidspec key = { .pid = t->pid };
	const struct mr_pidspec *s;

	s = l && l->len ? bsearch(&key, l->v, l->len, sizeof(*l->v), by_spec) : NULL;
	return s && (!s->ino || s->ino == t->ino);
}

/* --follow's guard (cfg.robust_guard): a release before a thread's exit has
 * walked its robust futex list leaves nothing for the walk to read, and the
 * waiters of a lock it held, perhaps in another process, asleep for good
 * (robust.c). A target is released now where that cannot happen
 * (mr_robust_clear), or once the caller has seen it dying long enough
 * (cfg.aged); else it is left out, for the caller to come back to. Those
 * to release stay in items; how many, in *n. */
static void guard(struct mr_run *run, size_t *items, size_t *n)
{
	size_t k = 0;

	for (size_t i = 0; i < *n; i++) {
		struct mr_target *t = &run->targets[items[i]];
		int r = aged(run, t) ? 1 : mr_robust_clear(run->cfg.proc, t->mm_pid);

		/* What /proc said is t's only if t is still there after. */
		if (!mr_target_alive(t) || r == -ESRCH)
			mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
		else if (r == -EAGAIN)
			mr_target_end(t, MR_LEFT_OUT, MR_R_ON_CPU, 0);
		else if (r != 1)
			mr_target_end(t, MR_LEFT_OUT, MR_R_ROBUST, 0);
		else
			items[k++] = items[i];
	}
	*n = k;
}

/* A batch of the release phase: the figures of those not read yet (killed
 * by their cgroup's write before they could be), the guard where asked,
 * then the releases. */
static int release_batch(struct mr_act *a, const size_t *items, size_t n)
{
	size_t *v = calloc(n ? n : 1, sizeof(*v));
	int r;

	if (!v)
		return mr_fatal(a->run, -ENOMEM, "target list");
	memcpy(v, items, n * sizeof(*v));
	if (!(r = mr_read_before(a, v, n)) && !a->run->interrupted) {
		if (a->run->cfg.robust_guard)
			guard(a->run, v, &n);
		if (n) {
			mr_begin(a);
			a->run->sent = true;
		}
		r = mr_run_jobs(a, MR_JOB_RELEASE, v, n, a->release_until);
	}
	free(v);
	return r;
}

/* The release phase: every target in state (killed, or opened where
 * nothing is sent, or asked to exit by the --grace signal), largest first
 * so that the most memory comes back soonest, in batches; what has not
 * been released by deadline is given up, the target left as it was. */
int mr_release_in(struct mr_act *a, enum mr_state state, int64_t deadline)
{
	struct mr_run *run = a->run;
	size_t n, *items = mr_in_state(run, state, &n);
	int r;

	if (!items)
		return mr_fatal(run, -ENOMEM, "target list");
	qsort_r(items, n, sizeof(*items), by_rss_desc, run);
	a->release_until = deadline;
	r = n ? mr_batches(a, items, n, release_batch) : 0;
	free(items);
	return r;
}
