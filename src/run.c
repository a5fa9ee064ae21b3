/* run.c: a whole run, top to bottom: select the targets (the pids named,
 * the members of the cgroups, or with --dying every process), open each
 * as a pidfd, read their figures on the worker threads, kill, release on
 * the worker threads, and wait if asked to.
 *
 * The contracts, each kept by one function below:
 * - The kill never waits for a reading: figures are read on worker threads,
 *   and what is not read MR_READ_BOUND_MS after the readings began (counted
 *   once for the run) is given up (read_before).
 * - A v2 cgroup, recursively, is killed with one write to cgroup.kill: the
 *   kernel kills everything in the subtree at that moment, forks and
 *   migrations included. Nothing is listed or signalled after it
 *   (kill_by_file).
 * - Where cgroup.kill cannot say what was asked (v1, --no-recursive, a
 *   kernel without cgroup.kill), the cgroup is killed until empty: list it,
 *   open each pid, check that it is still a member, SIGKILL it, and list
 *   again, until a listing finds no member that has not been killed, as
 *   systemd does (kill_until_empty).
 * - A cgroup that holds mrelease, one of its ancestors, pid 1 or a process
 *   it cannot see (outside its pid namespace: listed as 0 on v2, left out
 *   on v1) is not killed at all: checked at the first listing, and again
 *   at the listing just before the write and before each listing's kills
 *   (check_listing). Refused once the run has begun, the run stops there,
 *   and what it killed before is released.
 * - A signal that interrupts the run stops it: no further signal is sent
 *   (stopped, before each one).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

/* Descriptors kept aside from the pidfds, for the main thread (at most
 * three at once: a cgroup walk's directory and its listing, or the write to
 * cgroup.kill, or a /proc file), and per thread for its file and its jobs'
 * duplicates. */
#define FD_RESERVE 4
#define FD_PER_THREAD (JOBS_PER_THREAD + 1)
/* A release that has not returned this long is left behind (the bound is
 * --wait's time, and at least this much, even with --wait 0). */
#define BOUND_MIN_MS 1000
/* Kill until empty: at most this many listings of one cgroup, and no longer
 * than the bound. A killed process cannot fork, so each listing finds only
 * what was made before the kill before it. */
#define ROUNDS_MAX 64
/* Jobs handed to the pool ahead of the threads: each holds a descriptor. */
#define JOBS_PER_THREAD 2

/* A pid to select, from a name or a listing. */
struct pick {
	pid_t pid;
	int cgroup;
	uint64_t ino;
	bool named, stdin;
};

/* What one run shares between its steps; only run.c sees it. */
struct act {
	struct mr_run *run;
	struct mr_pool *pool;
	sigset_t held;        /* the signals that interrupt a run */
	int64_t read_left_us; /* what is left of MR_READ_BOUND_MS */
	int64_t act_start;
	size_t cap;           /* of run->targets */
	size_t room;          /* pidfds that may still be opened */
	unsigned int retries;
	size_t stuck;
	bool nosys;
	bool begun;           /* the figures before the first act are taken */
	int nested;           /* mrelease is in a nested pid namespace: 1, 0,
			       * or -errno when that cannot be told */
};

void mr_run_init(struct mr_run *run, const struct mr_config *cfg)
{
	*run = (struct mr_run){
		.cfg = *cfg,
		.mem_available_before_kb = MR_UNKNOWN,
		.mem_available_after_kb = MR_UNKNOWN,
		.kill_us = MR_UNKNOWN,
		.elapsed_us = MR_UNKNOWN,
		.nice_applied = true,
		.affinity_applied = true,
	};
	if (!run->cfg.proc)
		run->cfg.proc = "/proc";
	if (!run->cfg.start_us)
		run->cfg.start_us = mr_now_us();
	run->self = getpid();
}

void mr_note_add(struct mr_run *run, struct mr_note note)
{
	struct mr_note *v = reallocarray(run->notes, run->nnotes + 1, sizeof(*v));

	/* Notes only explain; without memory for one, the run goes on. */
	if (!v)
		return;
	run->notes = v;
	v[run->nnotes++] = note;
}

static void note(struct mr_run *run, enum mr_note_kind kind, int cgroup, size_t n, int errnum)
{
	mr_note_add(run, (struct mr_note){ .kind = kind, .cgroup = cgroup, .n = n, .errnum = errnum });
}

static int fatal(struct mr_run *run, int r, const char *what)
{
	snprintf(run->fatal, sizeof(run->fatal), "%s", what);
	return r;
}

static bool ended(const struct mr_target *t)
{
	return t->state >= MR_RELEASED;
}

/* A signal that interrupts the run has come: from now on nothing more is
 * sent. Asked before every signal and every write to cgroup.kill. */
static bool stopped(struct act *a)
{
	sigset_t pending, both;

	if (!a->run->interrupted && sigpending(&pending) == 0) {
		sigandset(&both, &pending, &a->held);
		a->run->interrupted = !sigisemptyset(&both);
	}
	return a->run->interrupted;
}

/* ---- jobs on the worker threads ------------------------------------------ */

enum job_kind {
	JOB_READ,    /* the figures before */
	JOB_RELEASE, /* release, then the figures after */
};

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
	enum job_kind kind;
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
	if (j->kind == JOB_READ) {
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

static struct job *job_new(struct act *a, enum job_kind kind, size_t i)
{
	const struct mr_target *t = &a->run->targets[i];
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	*j = (struct job){
		.base = { .run = job_run, .drop = job_drop },
		.kind = kind,
		.target = i,
		.pidfd = kind == JOB_READ ? -1 : fcntl(t->pidfd, F_DUPFD_CLOEXEC, 3),
		.mm_pid = t->mm_pid,
		.proc = a->run->cfg.proc,
		.mode = a->run->cfg.measure,
	};
	mr_mem_unknown(&j->before);
	mr_mem_unknown(&j->after);
	if (kind != JOB_READ && j->pidfd < 0) {
		free(j);
		return NULL;
	}
	return j;
}

/* A reading of the figures that failed with errnum. The first error told
 * stays (a /proc/PID/stat that could not be read says more than the status
 * after). */
static void unread(struct mr_run *run, struct mr_target *t, int errnum)
{
	if (t->figures != MR_FIG_READ)
		return;
	t->figures = MR_FIG_ERRNO;
	t->fig_file = run->cfg.measure == MR_MEASURE_SMAPS ? "smaps_rollup" : "status";
	t->fig_errnum = errnum;
}

/* A target that is not dying, and was sent nothing: with --dying it is
 * left alone; named without --kill, it fails (dumping core, or not
 * exiting). One sent the --grace signal only is not dying yet: the kill
 * follows. */
static void end_not_dying(struct mr_run *run, struct mr_target *t, bool dumping)
{
	if (run->cfg.dying)
		mr_target_end(t, MR_LEFT_OUT, MR_R_NOT_DYING, 0);
	else if (!t->signal)
		mr_target_end(t, MR_FAILED, dumping ? MR_R_COREDUMP : MR_R_NOT_EXITING, 0);
}

/* Why process_mrelease refused t as not dying: it is dumping core (a kill
 * ends the dump only once every thread has reached it); killed by
 * cgroup.kill, it had left the cgroup before the write; killed, it shares
 * its address space with a live process outside; or it was never dying. */
static void not_dying(struct mr_run *run, struct mr_target *t)
{
	const struct mr_cgroup *cg = t->cgroup >= 0 ? &run->cgroups[t->cgroup] : NULL;
	bool by_file = cg && cg->kill == MR_CGKILL_FILE && !t->named, dumping = false;

	if (t->signal == SIGKILL && by_file &&
	    mr_cgroup_holds(run->cfg.proc, cg, t->pid, t->pidfd, run->cfg.recursive) == 0) {
		mr_target_end(t, MR_LEFT_OUT, MR_R_LEFT, 0);
		return;
	}
	/* Read only where it changes what is said: not for each process
	 * --dying finds alive. */
	if (t->signal == SIGKILL || (!t->signal && !run->cfg.dying))
		(void)mr_proc_dying(run->cfg.proc, t->mm_pid, &dumping);
	if (t->signal == SIGKILL)
		mr_target_end(t, MR_FAILED, dumping ? MR_R_COREDUMP : MR_R_SHARED_MM, 0);
	else
		end_not_dying(run, t, dumping);
}

/* What process_mrelease said of t. */
static void released(struct act *a, struct mr_target *t, const struct job *j)
{
	bool dumping;

	t->release_us = j->release_us;
	switch (j->release_r) {
	case 0: mr_target_end(t, MR_RELEASED, MR_R_NONE, 0); break;
	case -ESRCH: mr_target_end(t, MR_EXITED, MR_R_NONE, 0); break;
	case -EINVAL: not_dying(a->run, t); break;
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

static void apply(struct act *a, struct job *j)
{
	struct mr_run *run = a->run;
	struct mr_target *t = &run->targets[j->target];

	a->retries += j->retries;
	if (j->kind == JOB_READ && !mr_target_alive(t)) {
		/* Gone: what was read may be another process's. */
		t->before = (struct mr_mem){ 0, 0, 0, 0 };
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	} else if (j->kind == JOB_READ && j->read_r == 0) {
		t->before = j->before;
	} else if (j->kind == JOB_READ) {
		unread(run, t, -j->read_r);
	}
	if (j->kind == JOB_READ)
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
static void give_up(struct act *a, struct job *j, int step, enum give_up why)
{
	struct mr_target *t = &a->run->targets[j->target];

	/* Until it has returned, the worker may still count its retries. */
	if (step == STEP_RELEASED)
		a->retries += j->retries;
	if (j->kind == JOB_READ || step == STEP_RELEASED) {
		if (step == STEP_RELEASED)
			released(a, t, j);
		if (t->figures == MR_FIG_READ)
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
	if (j->kind == JOB_RELEASE && *step == STEP_BEGUN)
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
static int run_jobs(struct act *a, enum job_kind kind, const size_t *items, size_t n,
		    int64_t deadline)
{
	struct mr_run *run = a->run;
	/* Readings hold no descriptor: all go at once; releases too, as far
	 * as descriptors allow, so that the threads need not wait for the main
	 * thread between two (after cgroup.kill, the processes it woke take
	 * the CPUs from it). */
	size_t window = !run->threads ? 1 : kind == JOB_READ ? n :
			(size_t)run->threads * JOBS_PER_THREAD + (a->room < n ? a->room : n);
	struct job **out = calloc(window ? window : 1, sizeof(*out));
	size_t next = 0, busy = 0;

	if (!out)
		return fatal(run, -ENOMEM, "job list");
	while (next < n || busy) {
		int64_t wake, now = mr_now_us();
		struct mr_job *done;
		enum give_up why;
		int step, r;

		while (next < n && busy < window) {
			struct job *j = job_new(a, kind, items[next]);

			if (!j && kind == JOB_READ)
				unread(run, &run->targets[items[next]], errno);
			else if (!j)
				mr_target_end(&run->targets[items[next]], MR_FAILED, MR_R_RELEASE, errno);
			next++;
			if (j) {
				j->slot = busy;
				out[busy++] = j;
				mr_pool_submit(a->pool, &j->base);
			}
		}
		if (!busy)
			break;
		wake = now + (int64_t)MR_READ_BOUND_MS * 1000;
		/* Readings are bounded by the deadline alone. */
		for (size_t i = 0; kind == JOB_RELEASE && i < busy; i++)
			if (overdue_at(run, out[i], &step) < wake)
				wake = overdue_at(run, out[i], &step);
		r = mr_pool_collect(a->pool, deadline < wake ? deadline : wake, &run->cfg.waitmask, &done);
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
				if (kind == JOB_READ)
					run->targets[items[next]].figures = MR_FIG_GIVEN_UP;
				else if (why == NO_THREAD)
					mr_target_end(&run->targets[items[next]], MR_FAILED, MR_R_NO_WORKER, 0);
			break;
		}
	}
	free(out);
	return 0;
}

/* The indices of the targets in state. */
static size_t *in_state(struct mr_run *run, enum mr_state state, size_t *n)
{
	size_t *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < run->ntargets; i++)
		if (run->targets[i].state == state)
			v[(*n)++] = i;
	return v;
}

/* Largest first, so that the most memory comes back soonest. */
static int by_rss_desc(const void *x, const void *y, void *arg)
{
	const struct mr_run *run = arg;
	int64_t a = run->targets[*(const size_t *)x].before.rss_kb;
	int64_t b = run->targets[*(const size_t *)y].before.rss_kb;

	return (a < b) - (a > b);
}

/* ---- selection ----------------------------------------------------------- */

static int add_pick(struct pick **v, size_t *n, size_t *cap, struct pick p)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct pick *w = reallocarray(*v, c, sizeof(*w));

		if (!w)
			return -ENOMEM;
		*v = w;
		*cap = c;
	}
	(*v)[(*n)++] = p;
	return 0;
}

/* By pid; where a pid was both named and listed, the named pick first, and
 * one named on the command line before one read from standard input. */
static int by_pid(const void *x, const void *y)
{
	const struct pick *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	if (a->named != b->named)
		return (int)b->named - (int)a->named;
	return (int)a->stdin - (int)b->stdin;
}

/* What a listing of cgroup c holds that forbids killing it: mrelease, an
 * ancestor of it, pid 1, or a member outside our pid namespace (a v1
 * listing leaves those out: from a nested pid namespace, a v1 cgroup is
 * not killed at all). Recorded in run->refused. */
static bool check_listing(struct act *a, int c, const struct mr_pidlist *l, size_t outside)
{
	struct mr_run *run = a->run;
	struct mr_refused *f = &run->refused;

	*f = (struct mr_refused){ .cgroup = c };
	for (size_t i = 0; i < l->len && !f->what; i++) {
		const struct mr_ancestor *anc = mr_ancestor_of(run, l->v[i].pid);

		f->pid = l->v[i].pid;
		if (f->pid == run->self)
			f->what = MR_REFUSE_SELF;
		else if (anc) {
			f->what = MR_REFUSE_ANCESTOR;
			memcpy(f->comm, anc->comm, sizeof(f->comm));
		} else if (f->pid == 1) {
			f->what = MR_REFUSE_INIT;
		}
	}
	if (!f->what && outside)
		f->what = MR_REFUSE_OUTSIDE;
	else if (!f->what && !run->cgroups[c].v2 && a->nested)
		f->what = MR_REFUSE_UNSEEN;
	if (f->what == MR_REFUSE_OUTSIDE || f->what == MR_REFUSE_UNSEEN)
		f->pid = 0;
	return f->what != MR_REFUSE_NONE;
}

static bool kills_cgroups(const struct mr_run *run)
{
	return run->cfg.kill && run->ncgroups;
}

/* Every process there is, for --dying without a cgroup. */
static int list_proc(struct mr_run *run, struct pick **v, size_t *n, size_t *cap)
{
	DIR *d = opendir(run->cfg.proc);
	struct dirent *e;
	int r = 0;

	if (!d)
		return -errno;
	while (!r && (e = readdir(d))) {
		pid_t pid;

		if (mr_parse_pid(e->d_name, &pid) == 0)
			r = add_pick(v, n, cap, (struct pick){ .pid = pid, .cgroup = -1 });
	}
	closedir(d);
	return r;
}

/* Picks for the pids named, and the members of every cgroup (or every
 * process, with --dying alone), sorted by pid, once each. */
static int gather(struct act *a, const struct mr_pidlist *named, struct pick **out, size_t *count)
{
	struct mr_run *run = a->run;
	struct pick *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	int r = 0;

	for (size_t i = 0; !r && i < named->len; i++)
		r = add_pick(&v, &n, &cap, (struct pick){ named->v[i].pid, -1, named->v[i].ino, true,
							  named->v[i].stdin });
	if (!r && run->cfg.dying && !run->ncgroups && (r = list_proc(run, &v, &n, &cap)))
		fatal(run, r, run->cfg.proc);
	for (size_t c = 0; !r && c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];
		struct mr_pidlist l = { 0 };

		if ((r = mr_cgroup_members(cg, run->cfg.recursive, &l, &cg->outside))) {
			snprintf(run->fatal, sizeof(run->fatal), "cgroup %s: cannot list its members",
				 cg->path);
		} else if (kills_cgroups(run) && check_listing(a, (int)c, &l, cg->outside)) {
			r = -ECANCELED;
		} else if (cg->outside) {
			note(run, MR_N_OUTSIDE, (int)c, cg->outside, 0);
		}
		for (size_t i = 0; !r && i < l.len; i++)
			r = add_pick(&v, &n, &cap, (struct pick){ .pid = l.v[i].pid, .cgroup = (int)c });
		mr_pidlist_free(&l);
	}
	if (r) {
		free(v);
		return r == -ENOMEM ? fatal(run, r, "target list") : r;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_pid);
	for (size_t i = 0; i < n; i++) {
		if (k && v[k - 1].pid == v[i].pid) {
			/* Named and listed: named, counted in its cgroup. */
			if (v[k - 1].cgroup < 0)
				v[k - 1].cgroup = v[i].cgroup;
			continue;
		}
		v[k++] = v[i];
	}
	*out = v;
	*count = k;
	return 0;
}

/* Append t to the run's targets: the new one, or NULL without memory. */
static struct mr_target *add_target(struct act *a, const struct mr_target *t)
{
	struct mr_run *run = a->run;

	if (run->ntargets == a->cap) {
		size_t c = a->cap ? 2 * a->cap : 64;
		struct mr_target *v = reallocarray(run->targets, c, sizeof(*v));

		if (!v)
			return NULL;
		run->targets = v;
		a->cap = c;
	}
	run->targets[run->ntargets] = *t;
	return &run->targets[run->ntargets++];
}

/* Open a pick into a target, in *out; pidfd: one opened for it already
 * (counted in the room then, and taken over), or -1. A named pid with no
 * process is kept only as a number (a list of a million of them stays
 * small): then *out is NULL. */
static int open_pick(struct act *a, const struct pick *p, int pidfd, struct mr_target **out)
{
	struct mr_run *run = a->run;
	struct mr_target t;

	*out = NULL;
	mr_target_init(&t, p->pid, p->cgroup);
	t.named = p->named;
	t.stdin = p->stdin;
	t.pidfd = pidfd;
	if (a->room || pidfd >= 0)
		mr_target_open(run, &t, p->ino);
	else
		mr_target_end(&t, MR_FAILED, MR_R_OPEN, EMFILE);
	if (pidfd < 0)
		a->room -= t.pidfd >= 0;
	else
		a->room += t.pidfd < 0;
	/* Opened while it was a member, gone since: it exited (of the kill
	 * that followed, or by itself). */
	if (pidfd >= 0 && t.state == MR_LEFT_OUT && t.reason == MR_R_GONE)
		mr_target_end(&t, MR_EXITED, MR_R_NONE, 0);
	if (t.state == MR_FAILED && t.reason == MR_R_NO_PROCESS) {
		pid_t *m = reallocarray(run->missing, run->nmissing + 1, sizeof(*m));

		if (!m)
			return fatal(run, -ENOMEM, "target list");
		run->missing = m;
		m[run->nmissing++] = p->pid;
		return 0;
	}
	if (!(*out = add_target(a, &t))) {
		mr_target_close(&t);
		return fatal(run, -ENOMEM, "target list");
	}
	return 0;
}

static int select_targets(struct act *a, const struct mr_pidlist *named)
{
	struct mr_run *run = a->run;
	struct mr_target *t;
	struct pick *v;
	size_t n;
	int r;

	if (kills_cgroups(run))
		a->nested = mr_pidns_nested(run->cfg.proc);
	if ((r = gather(a, named, &v, &n)))
		return r;
	a->room = mr_fd_room(run->cfg.proc, n, FD_RESERVE + run->threads * FD_PER_THREAD);
	for (size_t i = 0; !r && i < n; i++)
		r = open_pick(a, &v[i], -1, &t);
	free(v);
	return r;
}

/* How each cgroup will be killed: the method is chosen before anything is
 * sent. */
static void plan_kills(struct mr_run *run)
{
	for (size_t c = 0; run->cfg.kill && c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (run->cfg.recursive && mr_cgroup_can_kill(cg))
			cg->kill = MR_CGKILL_FILE;
		else
			cg->kill = MR_CGKILL_UNTIL_EMPTY;
	}
}

/* ---- acting --------------------------------------------------------------- */

/* The figures before the kill (or the release), on the worker threads,
 * within what is left of the run's reading bound. With no thread, nothing
 * is read: the main thread cannot give up a reading that does not return. */
static int read_before(struct act *a)
{
	struct mr_run *run = a->run;
	int64_t start = mr_now_us();
	size_t n, *items;
	int r;

	if (run->cfg.measure == MR_MEASURE_NONE)
		return 0;
	if (!(items = in_state(run, MR_OPENED, &n)))
		return fatal(run, -ENOMEM, "target list");
	for (size_t i = 0; !run->threads && i < n; i++)
		run->targets[items[i]].figures = MR_FIG_NO_THREAD;
	r = run->threads && a->read_left_us > 0 ? run_jobs(a, JOB_READ, items, n, start + a->read_left_us) : 0;
	a->read_left_us -= mr_now_us() - start;
	free(items);
	return r;
}

/* The figures before the first signal, write or release: taken before the
 * last check that the run may go on, so that they cannot delay an act
 * after it. */
static void begin(struct act *a)
{
	if (a->begun)
		return;
	a->begun = true;
	a->act_start = mr_now_us();
	mr_mem_available_kb(&a->run->mem_available_before_kb);
	for (size_t c = 0; c < a->run->ncgroups; c++)
		mr_cgroup_memory_kb(&a->run->cgroups[c], &a->run->cgroups[c].memory_before_kb);
}

/* Send sig through t's pidfd, unless the run is interrupted. */
static bool send(struct act *a, struct mr_target *t, int sig)
{
	int r;

	begin(a);
	if (stopped(a))
		return false;
	a->run->sent = true;
	if ((r = mr_pidfd_signal(t->pidfd, sig)) == 0) {
		t->state = MR_SIGNALLED;
		t->signal = sig;
		if (sig == SIGKILL)
			a->run->kill_us = mr_now_us() - a->run->cfg.start_us;
		return true;
	}
	if (r == -ESRCH)
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	else
		mr_target_end(t, MR_FAILED, sig == SIGKILL ? MR_R_KILL : MR_R_FIRST, -r);
	return false;
}

/* Whether t, a member found in a listing, is in its cgroup now. One that
 * left is left out; one whose membership cannot be read is not signalled
 * through its pidfd, which might no longer be a member's. */
static bool still_member(struct mr_run *run, struct mr_target *t)
{
	int in = mr_cgroup_holds(run->cfg.proc, &run->cgroups[t->cgroup], t->pid, t->pidfd,
				 run->cfg.recursive);

	if (!mr_target_alive(t))
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	else if (in == 0)
		mr_target_end(t, MR_LEFT_OUT, MR_R_LEFT, 0);
	else if (in < 0)
		mr_target_end(t, MR_FAILED, MR_R_MEMBERSHIP, -in);
	return in == 1 && !ended(t);
}

/* Wait until the targets in items[0..n) exit, or deadline: gone[i] says
 * which did. A signal that interrupts the run ends the wait. */
static int wait_targets(struct act *a, const size_t *items, size_t n, int64_t deadline,
			bool *gone)
{
	int *fds = calloc(n ? n : 1, sizeof(*fds));
	int r;

	if (!fds)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		fds[i] = a->run->targets[items[i]].pidfd;
	r = mr_wait_exit(fds, n, deadline, &a->run->cfg.waitmask, gone);
	free(fds);
	if (r == -EINTR)
		a->run->interrupted = true;
	return r == -EINTR ? 0 : r;
}

/* A target that exited by itself: its figures after. */
static void exited(struct mr_run *run, struct mr_target *t)
{
	mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	mr_measure(run->cfg.proc, run->cfg.measure, t->mm_pid, t->pidfd, &t->after);
}

/* --grace: the first signal through each target's pidfd (a cgroup member
 * only while it is one), an immediate release of those it made exit (a
 * signal whose action is the default begins the group exit as it is
 * queued), then up to the grace for the others to exit by themselves. A
 * signal that interrupts the run ends it here: nothing more is sent. */
static int grace(struct act *a)
{
	struct mr_run *run = a->run;
	int64_t end = mr_now_us() + (int64_t)run->cfg.grace_ms * 1000;
	size_t n, *items;
	bool *gone = NULL;
	int r;

	for (size_t i = 0; i < run->ntargets && !stopped(a); i++) {
		struct mr_target *t = &run->targets[i];

		if (t->state == MR_OPENED && (t->named || still_member(run, t)))
			send(a, t, run->cfg.first_signal);
	}
	if (run->interrupted)
		return 0;
	if (!(items = in_state(run, MR_SIGNALLED, &n)))
		return fatal(run, -ENOMEM, "target list");
	if (!(r = run_jobs(a, JOB_RELEASE, items, n, end)) && !run->interrupted) {
		free(items);
		items = in_state(run, MR_SIGNALLED, &n);
		gone = calloc(n ? n : 1, sizeof(*gone));
		r = items && gone ? wait_targets(a, items, n, end, gone) : -ENOMEM;
	}
	for (size_t i = 0; !r && !run->interrupted && i < n; i++) {
		struct mr_target *t = &run->targets[items[i]];
		struct mr_note nt = { .kind = MR_N_GRACE_END, .pid = t->pid, .cgroup = -1,
				      .sig = run->cfg.first_signal, .n = run->cfg.grace_ms };

		if (gone[i]) {
			exited(run, t);
			continue;
		}
		memcpy(nt.comm, t->comm, sizeof(nt.comm));
		mr_note_add(run, nt);
	}
	free(gone);
	free(items);
	return r ? fatal(run, r, "waiting for the grace") : 0;
}

/* Still to be killed: opened, or sent the --grace signal only. */
static bool to_kill(const struct mr_target *t)
{
	return t->state == MR_OPENED || (t->state == MR_SIGNALLED && t->signal != SIGKILL);
}

/* The targets by pid, to find the one a listed pid is. */
struct pidx {
	pid_t pid;
	size_t i;
};

static int by_pid_then_index(const void *x, const void *y)
{
	const struct pidx *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	return (a->i > b->i) - (a->i < b->i);
}

static struct pidx *index_targets(const struct mr_run *run)
{
	struct pidx *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	for (size_t i = 0; v && i < run->ntargets; i++)
		v[i] = (struct pidx){ run->targets[i].pid, i };
	if (v)
		qsort(v, run->ntargets, sizeof(*v), by_pid_then_index);
	return v;
}

/* The newest target with this pid among the n indexed, or -1. */
static ssize_t find_target(const struct pidx *v, size_t n, pid_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].pid <= pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && v[lo - 1].pid == pid ? (ssize_t)v[lo - 1].i : -1;
}

/* A target that no listing will make killable: one that failed already,
 * or a kernel thread. */
static bool unkillable(const struct mr_target *t)
{
	return t->state == MR_FAILED || t->reason == MR_R_KTHREAD;
}

/* The target among the first n indexed that pid, listed in cgroup c, is
 * already: one not done with that is still that process (not reaped, so
 * the pid is still its own), or one no listing will make killable. NULL:
 * none, the pid is a newcomer. */
static struct mr_target *listed_target(struct act *a, const struct pidx *idx, size_t n, pid_t pid)
{
	ssize_t k = find_target(idx, n, pid);
	struct mr_target *t = k < 0 || !a->run->targets ? NULL : &a->run->targets[k];

	if (t && (unkillable(t) || (!ended(t) && t->pidfd >= 0 && mr_target_alive(t))))
		return t;
	return NULL;
}

/* A newcomer listed in cgroup c, opened (through pidfd, if one was opened
 * for it already, else -1): in *out, or NULL. */
static int open_newcomer(struct act *a, int c, pid_t pid, int pidfd, struct mr_target **out)
{
	int r = open_pick(a, &(struct pick){ .pid = pid, .cgroup = c }, pidfd, out);

	if (*out)
		(*out)->figures = MR_FIG_LATE;
	return r;
}

static int by_spec_pid(const void *x, const void *y)
{
	const struct mr_pidspec *a = x, *b = y;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

/* List cgroup c for its kill (round cg->rounds), each pid once (a process
 * that moves between two subgroups as they are read is listed twice), and
 * check the listing. 0; -ECANCELED: refused; another -errno: the listing
 * failed, and with it the cgroup's kill. */
static int relist(struct act *a, int c, struct mr_pidlist *l)
{
	struct mr_cgroup *cg = &a->run->cgroups[c];
	bool recursive = cg->kill == MR_CGKILL_FILE || a->run->cfg.recursive;
	size_t outside, k = 0;
	int r;

	cg->rounds++;
	if ((r = mr_cgroup_members(cg, recursive, l, &outside))) {
		cg->kill_errnum = -r;
		return r;
	}
	if (l->len)
		qsort(l->v, l->len, sizeof(*l->v), by_spec_pid);
	for (size_t i = 0; i < l->len; i++)
		if (!k || l->v[k - 1].pid != l->v[i].pid)
			l->v[k++] = l->v[i];
	l->len = k;
	return check_listing(a, c, l, outside) ? -ECANCELED : 0;
}

/* The listing of a cgroup just before its write, and for each pid in it:
 * NOT_NEW for a target already, else a pidfd opened before the write, or
 * -1. */
struct listed {
	struct mr_pidlist l;
	int *fds;
};
enum { NOT_NEW = -2 };

/* Tell the newcomers in x's listing, and give each a pidfd as far as the
 * room allows: a syscall each, and nothing read, so that one killed and
 * reaped at once is still reported. *idx: the targets indexed, made at
 * the first listing that needs it and kept for the next writes (no target
 * is added until every write is made). */
static void hold_newcomers(struct act *a, struct listed *x, struct pidx **idx)
{
	if (x->l.len && !*idx)
		*idx = index_targets(a->run);
	x->fds = *idx || !x->l.len ? malloc((x->l.len ? x->l.len : 1) * sizeof(*x->fds)) : NULL;
	for (size_t i = 0; x->fds && i < x->l.len; i++) {
		pid_t pid = x->l.v[i].pid;

		x->fds[i] = listed_target(a, *idx, a->run->ntargets, pid) ? NOT_NEW : -1;
		if (x->fds[i] == -1 && a->room && (x->fds[i] = mr_sys_pidfd_open(pid)) >= 0)
			a->room--;
	}
}

static void listed_free(struct act *a, struct listed *x)
{
	for (size_t i = 0; x->fds && i < x->l.len; i++)
		if (x->fds[i] >= 0) {
			close(x->fds[i]);
			a->room++;
		}
	free(x->fds);
	mr_pidlist_free(&x->l);
}

/* The v2 contract: one write to cgroup.kill kills everything in the
 * subtree at that moment. The listing just before it is checked, and kept
 * in *x, with a pidfd for each newcomer: the members it found are opened
 * after every write (open_listed), to be released. */
static int kill_by_file(struct act *a, int c, struct listed *x, struct pidx **idx)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];
	int64_t done;
	int r;

	begin(a);
	if ((r = relist(a, c, &x->l)))
		return r == -ECANCELED ? r : 0;
	hold_newcomers(a, x, idx);
	if (stopped(a))
		return 0;
	run->sent = true;
	if ((r = mr_cgroup_kill(cg, &done))) {
		cg->kill_errnum = -r;
		return 0;
	}
	cg->killed = true;
	run->kill_us = done - run->cfg.start_us;
	return 0;
}

/* Whether the newcomer pid, held through fd (or -1), is a target already:
 * opened for another cgroup's listing, which the same process was in. The
 * same process where pidfds have inodes of their own; else one not reaped. */
static bool targeted(struct act *a, const struct pidx *idx, size_t n, pid_t pid, int fd)
{
	ssize_t k = find_target(idx, n, pid);
	uint64_t ino;

	if (k >= 0 && fd >= 0 && a->run->pidfs && !mr_pidfd_inode(fd, &ino))
		return a->run->targets[k].ino == ino;
	return listed_target(a, idx, n, pid) != NULL;
}

/* The newcomers of cgroup c listed in x, killed by its write: opened, with
 * no figures before; each once, though the listings of several cgroups
 * found it. */
static int open_listed(struct act *a, int c, struct listed *x)
{
	size_t n = a->run->ntargets;
	struct pidx *idx = NULL;
	int r = x->fds ? 0 : fatal(a->run, -ENOMEM, "target list");
	struct mr_target *t;

	for (size_t i = 0; !r && i < x->l.len; i++) {
		if (x->fds[i] == NOT_NEW)
			continue;
		/* Indexed at the first newcomer: most writes find none. */
		if (!idx && !(idx = index_targets(a->run))) {
			r = fatal(a->run, -ENOMEM, "target list");
			break;
		}
		if (!targeted(a, idx, n, x->l.v[i].pid, x->fds[i])) {
			r = open_newcomer(a, c, x->l.v[i].pid, x->fds[i], &t);
		} else if (x->fds[i] >= 0) {
			close(x->fds[i]);
			a->room++;
		}
		x->fds[i] = NOT_NEW;
	}
	free(idx);
	return r;
}

/* One listing's kills: each member not killed yet, checked to be one still,
 * is sent SIGKILL. How many were killed now; in cg->remaining, how many
 * cannot be. */
static size_t kill_listed(struct act *a, int c, const struct mr_pidlist *l, int *err)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];
	size_t n = run->ntargets, fresh = 0;
	struct pidx *idx = index_targets(run);

	cg->remaining = 0;
	*err = idx ? 0 : fatal(run, -ENOMEM, "target list");
	for (size_t i = 0; !*err && i < l->len && !stopped(a); i++) {
		struct mr_target *t = listed_target(a, idx, n, l->v[i].pid);

		if (!t && (*err = open_newcomer(a, c, l->v[i].pid, -1, &t)))
			break;
		if (!t || t->signal == SIGKILL)
			continue;
		if (!unkillable(t) && !ended(t) && still_member(run, t) && send(a, t, SIGKILL))
			fresh++;
		cg->remaining += unkillable(t);
	}
	free(idx);
	return fresh;
}

/* Where cgroup.kill cannot say what was asked (v1, --no-recursive, a kernel
 * without cgroup.kill): list, open each pid, check that it is still a
 * member, SIGKILL it; list again, until a listing finds no member that has
 * not been killed. Everything in the cgroup while this runs is killed.
 * Bounded in listings and in time: a cgroup still not empty then is a
 * failure, with the count. */
static int kill_until_empty(struct act *a, int c)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];
	size_t fresh = 1;
	int64_t end;
	int r = 0;

	begin(a);
	end = mr_now_us() + (int64_t)run->bound_ms * 1000;
	while (!r && fresh && cg->rounds < ROUNDS_MAX && (!cg->rounds || mr_now_us() < end) &&
	       !stopped(a)) {
		struct mr_pidlist l = { 0 };

		if (!(r = relist(a, c, &l)))
			fresh = kill_listed(a, c, &l, &r);
		mr_pidlist_free(&l);
	}
	if (r == -ENOMEM)
		cg->kill_errnum = ENOMEM;
	/* Still finding members to kill when the bound came. */
	if (fresh && !r && !run->interrupted)
		cg->remaining += fresh;
	cg->killed = !r && !cg->remaining && !run->interrupted;
	return r == -ECANCELED || r == -ENOMEM ? r : 0;
}

/* The fate of cgroup c's members its kill left as they were, and the note
 * that says how it went. */
static void settle(struct act *a, int c)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];
	bool file = cg->kill == MR_CGKILL_FILE;

	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		if (t->cgroup != c || t->named || !to_kill(t))
			continue;
		if (file && cg->killed) {
			t->state = MR_SIGNALLED;
			t->signal = SIGKILL;
		} else if (cg->kill_errnum) {
			mr_target_end(t, MR_FAILED, MR_R_KILL, cg->kill_errnum);
		} else if (mr_target_alive(t)) {
			/* Found by no later listing: left, or gone. */
			mr_target_end(t, MR_LEFT_OUT, MR_R_LEFT, 0);
		} else {
			mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
		}
	}
	if (cg->kill_errnum)
		note(run, MR_N_KILL_FAILED, c, 0, cg->kill_errnum);
	else if (file)
		note(run, MR_N_CGKILL, c, 0, 0);
	else
		note(run, cg->killed ? MR_N_UNTIL_EMPTY : MR_N_NOT_EMPTY, c,
		     cg->killed ? cg->rounds : cg->remaining, 0);
}

/* SIGKILL for each named target through its pidfd, then the writes to
 * cgroup.kill (before each, nothing is read: newcomers get a pidfd, no
 * more), then the cgroups killed until empty; then the members the writes
 * killed are opened, and every cgroup acted on is settled. -ECANCELED: a cgroup was
 * refused, and the run stops there; -ENOMEM. */
static int kill_all(struct act *a)
{
	struct mr_run *run = a->run;
	struct listed *lists = calloc(run->ncgroups ? run->ncgroups : 1, sizeof(*lists));
	struct pidx *idx = NULL;
	int r = lists ? 0 : fatal(run, -ENOMEM, "target list");

	for (size_t i = 0; !r && i < run->ntargets && !stopped(a); i++)
		if (run->targets[i].named && to_kill(&run->targets[i]))
			send(a, &run->targets[i], SIGKILL);
	for (size_t c = 0; !r && c < run->ncgroups && !stopped(a); c++)
		if (run->cgroups[c].kill == MR_CGKILL_FILE)
			r = kill_by_file(a, (int)c, &lists[c], &idx);
	free(idx);
	for (size_t c = 0; !r && c < run->ncgroups && !stopped(a); c++)
		if (run->cgroups[c].kill == MR_CGKILL_UNTIL_EMPTY)
			r = kill_until_empty(a, (int)c);
	/* What a write killed is killed, whatever stopped the run since; a
	 * kill that failed has failed. */
	for (size_t c = 0; lists && c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];
		int e = 0;

		if (cg->killed && cg->kill == MR_CGKILL_FILE && r != -ENOMEM && !run->interrupted)
			e = open_listed(a, (int)c, &lists[c]);
		if (cg->killed || cg->kill_errnum ||
		    (cg->rounds && !run->interrupted && r != -ECANCELED))
			settle(a, (int)c);
		r = r ? r : e;
		listed_free(a, &lists[c]);
	}
	free(lists);
	return r;
}

/* After a cgroup refused once the run had begun: what was not killed is
 * not, and is not released either. */
static void stop_rest(struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++)
		if (to_kill(&run->targets[i]))
			mr_target_end(&run->targets[i], MR_FAILED, MR_R_STOPPED, 0);
}

/* Release what is to be released, largest first. */
static int release(struct act *a, enum mr_state state)
{
	struct mr_run *run = a->run;
	size_t n, *items = in_state(run, state, &n);
	int r;

	if (!items)
		return fatal(run, -ENOMEM, "target list");
	qsort_r(items, n, sizeof(*items), by_rss_desc, run);
	if (n) {
		begin(a);
		run->sent = true;
	}
	r = run_jobs(a, JOB_RELEASE, items, n, INT64_MAX);
	free(items);
	return r;
}

/* Whether pid, which shares a target's address space, keeps it from being
 * released in the real run: not when the run would kill it too, nor when
 * it is dying itself. */
static bool keeps_mm(pid_t pid, void *arg)
{
	const struct mr_run *run = arg;
	bool dumping;

	for (size_t i = 0; run->cfg.kill && i < run->ntargets; i++)
		if (run->targets[i].pid == pid && run->targets[i].state == MR_PREDICTED)
			return false;
	return mr_proc_dying(run->cfg.proc, pid, &dumping) <= 0;
}

/* The targets predicted to be released whose address space a process that
 * is not dying shares: the kernel would refuse them, as it refuses one
 * that is not dying. */
static void predict_shared(struct mr_run *run)
{
	struct mr_mm_query *q = calloc(run->ntargets ? run->ntargets : 1, sizeof(*q));
	size_t n = 0;
	int r;

	for (size_t i = 0; q && i < run->ntargets; i++)
		if (run->targets[i].state == MR_PREDICTED)
			q[n++] = (struct mr_mm_query){ run->targets[i].pid, run->targets[i].mm_pid, 0 };
	if (!q || (r = mr_mm_sharers(run->cfg.proc, q, n, keeps_mm, run)))
		note(run, MR_N_NO_KCMP, -1, 0, q ? -r : ENOMEM);
	for (size_t i = 0, k = 0; q && k < n; i++) {
		struct mr_target *t = &run->targets[i];

		if (t->state != MR_PREDICTED)
			continue;
		if (q[k++].sharer && run->cfg.kill)
			mr_target_end(t, MR_FAILED, MR_R_SHARED_MM, 0);
		else if (q[k - 1].sharer)
			end_not_dying(run, t, false);
	}
	free(q);
}

/* How each cgroup's kill would go: a write to cgroup.kill the kernel would
 * refuse (as to a user who may not write there) fails for every member it
 * would kill. */
static void predict_writes(struct mr_run *run)
{
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (cg->kill == MR_CGKILL_FILE)
			cg->kill_errnum = -mr_cgroup_kill_permitted(cg);
	}
}

/* A cgroup killed until empty would be emptied if every member could be
 * killed. */
static void predict_emptied(struct mr_run *run)
{
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		cg->remaining = 0;
		for (size_t i = 0; i < run->ntargets; i++)
			cg->remaining += run->targets[i].cgroup == (int)c && !run->targets[i].named &&
					 run->targets[i].reason == MR_R_KILL;
		cg->killed = cg->kill && !cg->kill_errnum && !cg->remaining;
	}
}

/* A dry run: what the real run would do with each target and cgroup. A
 * kill the kernel would refuse is told by signal 0 through the pidfd, or
 * for a cgroup.kill by the file's permission; whether a target is dying,
 * by /proc as the kernel decides it (a process that cannot be read there
 * is taken for one that is not); whether a live process shares its
 * address space, by kcmp(2). */
static void predict(struct mr_run *run)
{
	predict_writes(run);
	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];
		const struct mr_cgroup *cg = t->cgroup >= 0 && !t->named ? &run->cgroups[t->cgroup] : NULL;
		bool by_file = cg && cg->kill == MR_CGKILL_FILE, dumping;
		int r, dying;

		if (t->state != MR_OPENED)
			continue;
		dying = mr_proc_dying(run->cfg.proc, t->mm_pid, &dumping);
		if (by_file && cg->kill_errnum)
			mr_target_end(t, MR_FAILED, MR_R_KILL, cg->kill_errnum);
		else if (run->cfg.kill && !by_file && (r = mr_pidfd_signal(t->pidfd, 0)) && r != -ESRCH)
			mr_target_end(t, MR_FAILED, MR_R_KILL, -r);
		else if (run->cfg.kill && dumping)
			mr_target_end(t, MR_FAILED, MR_R_COREDUMP, 0);
		else if (run->cfg.kill || dying > 0)
			t->state = MR_PREDICTED;
		else
			end_not_dying(run, t, dumping);
	}
	predict_shared(run);
	predict_emptied(run);
}

/* ---- waiting ------------------------------------------------------------- */

/* A target that exited by itself may still be freeing its memory:
 * process_mrelease says ESRCH once its address space is detached, and the
 * pages come back as the exit goes on. Its exit (its pidfd polls readable
 * only after that) is waited for, MR_READ_BOUND_MS at most, so that the
 * counters read afterwards (the cgroups', MemAvailable) hold what it freed.
 * Only the figures depend on it: a wait that cannot be made is skipped. */
static void wait_exited(struct act *a)
{
	struct mr_run *run = a->run;
	size_t n, k = 0, *items = in_state(run, MR_EXITED, &n);
	bool *gone = calloc(n ? n : 1, sizeof(*gone));

	for (size_t i = 0; items && i < n; i++)
		if (run->targets[items[i]].pidfd >= 0)
			items[k++] = items[i];
	if (gone && k)
		(void)wait_targets(a, items, k, mr_now_us() + (int64_t)MR_READ_BOUND_MS * 1000, gone);
	free(items);
	free(gone);
}

/* --wait for the released targets to exit; and, without process_mrelease,
 * for the killed ones, in its place. */
static int wait_exits(struct act *a)
{
	struct mr_run *run = a->run;
	size_t *items = calloc(run->ntargets ? run->ntargets : 1, sizeof(*items)), n = 0;
	bool *gone = calloc(run->ntargets ? run->ntargets : 1, sizeof(*gone));
	int r = items && gone ? 0 : -ENOMEM;

	for (size_t i = 0; !r && i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];

		if ((run->cfg.wait && t->state == MR_RELEASED) || (a->nosys && !ended(t)))
			items[n++] = i;
		else if (run->cfg.wait && t->state == MR_EXITED)
			run->targets[i].exited = 1;
	}
	if (!r && n)
		r = wait_targets(a, items, n, mr_now_us() + (int64_t)run->cfg.wait_ms * 1000, gone);
	for (size_t i = 0; !r && i < n; i++) {
		struct mr_target *t = &run->targets[items[i]];

		if (t->state == MR_RELEASED)
			t->exited = gone[i] ? 1 : 0;
		else if (gone[i] && !ended(t))
			exited(run, t);
		else if (!run->interrupted)
			mr_target_end(t, MR_FAILED, MR_R_NOSYS, 0);
	}
	free(items);
	free(gone);
	return r ? fatal(run, r, "waiting for the targets to exit") : 0;
}

/* ---- the run ------------------------------------------------------------- */

/* Whether pidfds live in pidfs, with inodes of their own: told once by one
 * of mrelease's own. */
static bool pidfds_in_pidfs(pid_t self)
{
	int fd = mr_sys_pidfd_open(self);
	bool in = fd >= 0 && mr_pidfd_in_pidfs(fd);

	if (fd >= 0)
		close(fd);
	return in;
}

static unsigned int default_jobs(const struct mr_config *cfg)
{
	cpu_set_t cpus;

	if (cfg->sched.set_affinity)
		return (unsigned int)CPU_COUNT(&cfg->sched.cpus);
	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		return 1;
	return (unsigned int)CPU_COUNT(&cpus);
}

/* Threads first: under load a new thread can wait for a CPU for
 * milliseconds, and meanwhile the main thread reads the ancestors and lists
 * the cgroups. Never more threads than pids named. */
static int start_pool(struct act *a, const struct mr_pidlist *named)
{
	struct mr_run *run = a->run;
	unsigned int jobs = run->cfg.jobs ? run->cfg.jobs : default_jobs(&run->cfg), started;
	sigset_t blocked;
	int r, err;

	if (!run->ncgroups && !run->cfg.dying && jobs > named->len)
		jobs = named->len ? (unsigned int)named->len : 1;
	if ((r = mr_pool_start(&a->pool, jobs, &run->cfg.sched, &started, &err)))
		return fatal(run, r, "worker threads");
	run->threads = started;
	if (started < jobs)
		note(run, MR_N_THREADS_SHORT, -1, started, err);
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	sigemptyset(&a->held);
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&blocked, s) == 1 && sigismember(&run->cfg.waitmask, s) == 0)
			sigaddset(&a->held, s);
	a->read_left_us = (int64_t)MR_READ_BOUND_MS * 1000;
	run->bound_ms = run->cfg.wait_ms > BOUND_MIN_MS ? run->cfg.wait_ms : BOUND_MIN_MS;
	return 0;
}

/* Before anything is sent: the threads' nice value and CPUs are best
 * effort, said once. */
static void ready(struct act *a)
{
	struct mr_run *run = a->run;
	int nice_err, affinity_err;

	mr_pool_ready(a->pool, &nice_err, &affinity_err);
	run->nice_applied = !run->cfg.sched.set_nice || !nice_err;
	run->affinity_applied = !run->cfg.sched.set_affinity || !affinity_err;
	if (!run->nice_applied)
		note(run, MR_N_NICE, -1, 0, nice_err);
	if (!run->affinity_applied)
		note(run, MR_N_AFFINITY, -1, 0, affinity_err);
	note(run, MR_N_THREADS, -1, run->threads, 0);
}

/* Kill and release. */
static int kill_run(struct act *a)
{
	struct mr_run *run = a->run;
	int r, w;

	if ((r = read_before(a)) || stopped(a))
		return r;
	if (run->cfg.grace && ((r = grace(a)) || run->interrupted))
		return r;
	/* Refused at a cgroup, or short of memory: what was killed is
	 * released all the same. */
	if ((r = kill_all(a)) == -ECANCELED)
		stop_rest(run);
	if (run->interrupted)
		return r;
	w = release(a, MR_SIGNALLED);
	return w ? w : r;
}

/* Members found by a later listing were appended: the report goes by pid.
 * Without memory for it, the order stays as selected. */
static void sort_by_pid(struct mr_run *run)
{
	struct pidx *idx = index_targets(run);
	struct mr_target *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	for (size_t i = 0; idx && v && i < run->ntargets; i++)
		v[i] = run->targets[idx[i].i];
	if (idx && v && run->ntargets)
		memcpy(run->targets, v, run->ntargets * sizeof(*v));
	free(idx);
	free(v);
}

/* Whether a target with this pid was sent SIGKILL (targets in pid order). */
static bool got_kill(const struct mr_run *run, pid_t pid)
{
	size_t lo = 0, hi = run->ntargets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (run->targets[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < run->ntargets && run->targets[lo].pid == pid; lo++)
		if (run->targets[lo].signal == SIGKILL)
			return true;
	return false;
}

/* What is left once the work is over: targets not done were interrupted;
 * each cgroup's members and results are counted; and the targets are put
 * in pid order, for the report. */
static void finish(struct act *a)
{
	struct mr_run *run = a->run;
	size_t unfinished = 0, undying = 0, left_out = 0, given_up = 0, kept = 0;

	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		if (!ended(t) && t->state != MR_PREDICTED) {
			t->state = MR_INTERRUPTED;
			unfinished++;
		}
		undying += t->state == MR_LEFT_OUT && t->reason == MR_R_NOT_DYING;
		left_out += t->state == MR_LEFT_OUT;
		given_up += t->figures == MR_FIG_GIVEN_UP && t->state != MR_LEFT_OUT;
		mr_target_close(t);
	}
	if (run->interrupted)
		note(run, MR_N_INTERRUPTED, -1, unfinished, 0);
	if (run->cfg.dying) {
		note(run, MR_N_NOT_DYING, -1, undying, 0);
		note(run, MR_N_LEFT_OTHER, -1, left_out - undying, 0);
	}
	if (given_up)
		note(run, MR_N_GIVEN_UP, -1, given_up, 0);
	if (a->stuck)
		note(run, MR_N_STUCK, -1, a->stuck, 0);
	if (a->retries)
		note(run, MR_N_RETRIES, -1, a->retries, 0);
	if (a->nosys)
		note(run, MR_N_NOSYS, -1, 0, 0);
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (run->sent)
			mr_cgroup_memory_kb(cg, &cg->memory_after_kb);
		cg->members = cg->released = cg->failed = cg->left_out = 0;
		for (size_t i = 0; i < run->ntargets; i++) {
			const struct mr_target *t = &run->targets[i];

			if (t->cgroup != (int)c)
				continue;
			cg->left_out += t->state == MR_LEFT_OUT;
			cg->members += t->state != MR_LEFT_OUT;
			cg->released += t->state == MR_RELEASED;
			cg->failed += t->state == MR_FAILED;
		}
	}
	sort_by_pid(run);
	/* A note that the grace ended says a KILL follows: kept where one did
	 * (a signal, or a cgroup refused, can stop the run before it). */
	for (size_t i = 0; i < run->nnotes; i++)
		if (run->notes[i].kind != MR_N_GRACE_END || got_kill(run, run->notes[i].pid))
			run->notes[kept++] = run->notes[i];
	run->nnotes = kept;
}

/* Select, kill, release and wait, as run->cfg asks. Returns 0, with each
 * target's fate in it; -ECANCELED when a cgroup was refused (run->refused
 * says which and why; run->sent whether anything had gone out before, and
 * then what was killed is released all the same); or another -errno with
 * run->fatal naming the step that failed. */
int mr_run(struct mr_run *run, const struct mr_pidlist *named)
{
	struct act a = { .run = run };
	int r;

	if ((r = start_pool(&a, named)))
		return r;
	run->pidfs = pidfds_in_pidfs(run->self);
	if ((r = mr_ancestors(run->cfg.proc, &run->ancestors, &run->nancestors))) {
		fatal(run, r, "cannot read the chain of mrelease's ancestors; nothing was sent");
		goto out;
	}
	if ((r = select_targets(&a, named)) || !run->ntargets)
		goto out;
	plan_kills(run);
	ready(&a);
	if (run->cfg.dry_run) {
		r = read_before(&a);
		predict(run);
	} else if (run->cfg.kill) {
		r = kill_run(&a);
	} else if (!(r = read_before(&a))) {
		r = release(&a, MR_OPENED);
	}
	if ((!r || (r == -ECANCELED && run->sent)) && !run->interrupted && !run->cfg.dry_run) {
		int w = wait_exits(&a);

		r = w ? w : r;
	}
	if (run->sent) {
		run->elapsed_us = mr_now_us() - a.act_start;
		if (!r && !run->interrupted)
			wait_exited(&a);
		mr_mem_available_kb(&run->mem_available_after_kb);
	}
out:
	mr_pool_stop(a.pool);
	finish(&a);
	return r;
}

void mr_run_free(struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++)
		mr_target_close(&run->targets[i]);
	free(run->targets);
	free(run->missing);
	for (size_t i = 0; i < run->ncgroups; i++)
		mr_cgroup_free(&run->cgroups[i]);
	free(run->cgroups);
	mr_cgmounts_free(&run->mounts);
	free(run->ancestors);
	free(run->notes);
	*run = (struct mr_run){ 0 };
}
