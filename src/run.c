/* run.c: a whole run, top to bottom. It gathers the targets (the pids
 * named and the members of the cgroups, less what must never be touched),
 * has them opened and their figures read on the worker threads, signals
 * them from the main thread, has them released on the worker threads, and
 * waits for them if asked to.
 *
 * Killing a cgroup:
 * - A v2 cgroup and its descendants are killed with cgroup.kill: one write,
 *   and the kernel also kills whatever forks while it runs. Nothing is
 *   frozen, and nothing is listed again afterwards, so a process that
 *   arrives later (a service restarted into the same cgroup) is never
 *   touched.
 * - Where cgroup.kill cannot be used (cgroup v1; --no-recursive; a cgroup
 *   that holds mrelease, pid 1 or, without --force, one of mrelease's
 *   ancestors; --grace, where seconds pass between the first signal and
 *   the kill), each member is killed through its own pidfd. A member forked
 *   between the listing and the first signal is found by listing once
 *   more. pidfs numbers processes in the order they are made, so a process
 *   made after a watermark taken before the listing, and before one taken
 *   before the first signal, is such a late fork. One made after the first
 *   signal, or an older one that moved in, is left alone. Without pidfs
 *   (before Linux 6.9) there is no second listing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrelease.h"

/* Descriptors kept aside, beyond one per worker, for what the run reads
 * while it holds the pidfds: cgroup directories, /proc files, meminfo. */
#define FD_RESERVE 8

struct pick {
	struct mr_pidspec spec;
	int cgroup;
};

/* What the phases of one run share. */
struct act {
	struct mr_run *run;
	struct mr_pool *pool;
	uint64_t listed_ino; /* watermark before the listing, or 0 */
	uint64_t signal_ino; /* watermark before the first signal, or 0 */
	int64_t act_start;   /* the first signal or release */
	bool late_forks;     /* some cgroup is killed through pidfds */
};

void mr_run_init(struct mr_run *run, const struct mr_config *cfg)
{
	*run = (struct mr_run){
		.cfg = *cfg,
		.mem_available_before_kb = MR_UNKNOWN,
		.mem_available_after_kb = MR_UNKNOWN,
		.kill_us = MR_UNKNOWN,
		.elapsed_us = MR_UNKNOWN,
	};
	if (!run->cfg.proc)
		run->cfg.proc = "/proc";
	if (!run->cfg.start_us)
		run->cfg.start_us = mr_now_us();
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

static int fatal(struct mr_run *run, int r, const char *what)
{
	snprintf(run->fatal, sizeof(run->fatal), "%s", what);
	return r;
}

/* ---- gathering ---------------------------------------------------------- */

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

/* Why a cgroup member is left out of the selection, or MR_E_NONE: mrelease
 * itself, pid 1, and without --force mrelease's ancestors. Not failures:
 * they were never asked for by number. */
static enum mr_error protected_member(const struct mr_run *run, pid_t pid, const char **comm)
{
	*comm = NULL;
	if (pid == getpid())
		return MR_E_SELF;
	if (pid == 1)
		return MR_E_INIT;
	for (size_t i = 0; i < run->nancestors && !run->cfg.force; i++) {
		if (run->ancestors[i].pid == pid) {
			*comm = run->ancestors[i].comm;
			return MR_E_ANCESTOR;
		}
	}
	return MR_E_NONE;
}

/* The members of cgroup c, as picks; protected ones are noted instead, and
 * mark their cgroup as one cgroup.kill must not be used on. */
static int list_cgroup(struct mr_run *run, int c, struct pick **v, size_t *n, size_t *cap,
		       bool note)
{
	struct mr_cgroup *cg = &run->cgroups[c];
	struct mr_pidlist members = { 0 };
	int r = mr_cgroup_members(cg, run->cfg.recursive, &members);

	for (size_t i = 0; !r && i < members.len; i++) {
		pid_t pid = members.v[i].pid;
		const char *comm;
		enum mr_error why = protected_member(run, pid, &comm);

		if (why == MR_E_NONE) {
			r = add_pick(v, n, cap, (struct pick){ members.v[i], c });
			continue;
		}
		cg->holds_protected = true;
		if (note) {
			struct mr_note nt = { .kind = MR_N_LEFT_OUT, .pid = pid, .cgroup = c, .why = why };

			if (comm)
				memcpy(nt.comm, comm, sizeof(nt.comm));
			mr_note_add(run, nt);
		}
	}
	mr_pidlist_free(&members);
	return r;
}

/* By pid; a pid found in a cgroup sorts before the same pid named alone,
 * so that it is counted in its cgroup. */
static int by_pid(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->spec.pid != y->spec.pid)
		return (x->spec.pid > y->spec.pid) - (x->spec.pid < y->spec.pid);
	return (x->cgroup < y->cgroup) - (x->cgroup > y->cgroup);
}

/* Every pid named and every member of every cgroup, once each. */
static int gather(struct mr_run *run, const struct mr_pidlist *named)
{
	struct pick *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	int r = 0;

	for (size_t i = 0; !r && i < named->len; i++)
		r = add_pick(&v, &n, &cap, (struct pick){ named->v[i], -1 });
	for (size_t c = 0; !r && c < run->ncgroups; c++) {
		if ((r = list_cgroup(run, (int)c, &v, &n, &cap, true)))
			snprintf(run->fatal, sizeof(run->fatal), "cgroup %s: cannot list its members",
				 run->cgroups[c].path);
	}
	if (r) {
		free(v);
		return r == -ENOMEM ? fatal(run, r, "target list") : r;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_pid);
	run->targets = calloc(n ? n : 1, sizeof(*run->targets));
	if (!run->targets) {
		free(v);
		return fatal(run, -ENOMEM, "target list");
	}
	for (size_t i = 0; i < n; i++)
		if (i == 0 || v[i].spec.pid != v[i - 1].spec.pid)
			mr_target_init(&run->targets[k++], v[i].spec, v[i].cgroup);
	run->ntargets = k;
	free(v);
	return 0;
}

/* How each cgroup will be killed. */
static void plan_kills(struct act *a)
{
	struct mr_run *run = a->run;

	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];
		int why = -1;

		if (!run->cfg.kill || run->cfg.dry_run)
			continue;
		if (run->cfg.grace)
			why = MR_WHY_GRACE;
		else if (!cg->v2)
			why = MR_WHY_V1;
		else if (!run->cfg.recursive)
			why = MR_WHY_NO_RECURSIVE;
		else if (cg->holds_protected)
			why = MR_WHY_PROTECTED;
		cg->kill = why < 0 ? MR_CGKILL_FILE : MR_CGKILL_PIDFD;
		if (why >= 0) {
			a->late_forks = true;
			mr_note_add(run, (struct mr_note){ .kind = MR_N_CGKILL_PIDFD,
							   .cgroup = (int)c, .why = why });
		}
	}
}

/* ---- acting ------------------------------------------------------------ */

static size_t pending(struct mr_target *t, size_t n, struct mr_target **items)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (t[i].status == MR_PENDING && !t[i].dropped)
			items[k++] = &t[i];
	return k;
}

/* A phase on the pool; a signal that ends it ends the run. */
static int phase(struct act *a, enum mr_job job, struct mr_target **items, size_t n)
{
	int r = mr_pool_run(a->pool, job, items, n);

	if (r == -EINTR) {
		size_t left = 0;

		for (size_t i = 0; i < n; i++)
			left += items[i]->status == MR_INTERRUPTED;
		a->run->interrupted = true;
		mr_note_add(a->run, (struct mr_note){ .kind = MR_N_INTERRUPTED, .n = left });
		return 0;
	}
	return r ? fatal(a->run, r, "worker threads") : 0;
}

/* Just before the first signal or release. */
static void begin(struct act *a)
{
	if (a->run->sent)
		return;
	a->run->sent = true;
	a->act_start = mr_now_us();
	if (a->late_forks && a->listed_ino)
		mr_pid_watermark(&a->signal_ino);
}

/* --grace: SIGTERM, release at once whatever that made exit (a process
 * whose SIGTERM action is the default begins its group exit as the signal
 * is queued, unless it is stopped or frozen), then give the others up to
 * the grace to exit by themselves. A signal caught meanwhile cuts the grace
 * short: the kill follows at once. */
static int grace(struct act *a, struct mr_target **items, size_t n)
{
	struct mr_run *run = a->run;
	size_t k = 0, left;
	int r;

	for (size_t i = 0; i < n; i++)
		mr_target_signal(items[i], SIGTERM);
	for (size_t i = 0; i < n; i++)
		if (items[i]->status == MR_PENDING)
			items[k++] = items[i];
	if ((r = phase(a, MR_JOB_TRY_RELEASE, items, k)) || run->interrupted)
		return r;
	n = k;
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (items[i]->status == MR_PENDING)
			items[k++] = items[i];
	r = mr_wait_exit(items, k, mr_now_us() + (int64_t)run->cfg.grace_ms * 1000,
			 &run->cfg.waitmask, &left);
	if (r == -EINTR)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_GRACE_CUT });
	else if (r)
		return fatal(run, r, "waiting for the grace");
	for (size_t i = 0; i < k - left; i++) {
		items[i]->status = MR_EXITED;
		mr_measure(run->cfg.proc, run->cfg.measure, items[i], &items[i]->after);
	}
	return 0;
}

/* SIGKILL: cgroup.kill for the cgroups planned so (first batch only), and
 * through its pidfd for every other target. */
static void kill_all(struct act *a, struct mr_target **items, size_t n, bool first)
{
	struct mr_run *run = a->run;
	bool sent = false;

	for (size_t c = 0; first && c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];
		int r;

		if (cg->kill != MR_CGKILL_FILE)
			continue;
		r = mr_cgroup_kill(cg);
		mr_note_add(run, (struct mr_note){ .kind = r ? MR_N_CGKILL_FAILED : MR_N_CGKILL,
						   .cgroup = (int)c, .errnum = -r });
		if (r)
			cg->kill = MR_CGKILL_PIDFD;
		sent |= r == 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct mr_target *t = items[i];

		if (t->status != MR_PENDING)
			continue;
		if (t->cgroup >= 0 && run->cgroups[t->cgroup].kill == MR_CGKILL_FILE)
			t->killed = true;
		else
			mr_target_signal(t, SIGKILL);
		sent |= t->killed;
	}
	if (sent)
		run->kill_us = mr_now_us() - run->cfg.start_us;
}

/* Open, measure, signal and release targets[from..from+n). */
static int batch(struct act *a, size_t from, size_t n, bool first)
{
	struct mr_run *run = a->run;
	struct mr_target *t = run->targets + from;
	struct mr_target **items = calloc(n ? n : 1, sizeof(*items));
	size_t k;
	int r;

	if (!items)
		return fatal(run, -ENOMEM, "target list");
	k = pending(t, n, items);
	if ((r = phase(a, MR_JOB_OPEN, items, k)) || run->interrupted)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (t[i].dropped && t[i].error == MR_E_KTHREAD)
			mr_note_add(run, (struct mr_note){ .kind = MR_N_LEFT_OUT, .pid = t[i].pid,
							   .cgroup = t[i].cgroup,
							   .why = MR_E_KTHREAD });
	if (first) {
		mr_mem_available_kb(&run->mem_available_before_kb);
		for (size_t c = 0; c < run->ncgroups; c++)
			mr_cgroup_memory_kb(&run->cgroups[c], &run->cgroups[c].memory_before_kb);
	}
	k = pending(t, n, items);
	if (!k)
		goto out;
	if (run->cfg.dry_run) {
		for (size_t i = 0; i < k; i++)
			items[i]->status = MR_SKIPPED;
		goto out;
	}
	begin(a);
	if (run->cfg.kill && run->cfg.grace) {
		if ((r = grace(a, items, k)) || run->interrupted)
			goto out;
		k = pending(t, n, items);
	}
	if (run->cfg.kill) {
		kill_all(a, items, k, first);
		k = pending(t, n, items);
	}
	r = phase(a, MR_JOB_RELEASE, items, k);
out:
	free(items);
	return r;
}

static bool known_pid(const pid_t *known, size_t n, pid_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (known[mid] == pid)
			return true;
		if (known[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int cmp_pid(const void *x, const void *y)
{
	pid_t p = *(const pid_t *)x, q = *(const pid_t *)y;

	return (p > q) - (p < q);
}

/* The members of cgroup c that are not targets yet. */
static int newcomers(struct act *a, int c, struct pick **v, size_t *n, size_t *cap)
{
	struct mr_run *run = a->run;
	pid_t *known = calloc(run->ntargets ? run->ntargets : 1, sizeof(*known));
	size_t from = *n, k = from;
	int r;

	if (!known)
		return -ENOMEM;
	for (size_t i = 0; i < run->ntargets; i++)
		known[i] = run->targets[i].pid;
	qsort(known, run->ntargets, sizeof(*known), cmp_pid);
	r = list_cgroup(run, c, v, n, cap, false);
	for (size_t i = from; !r && i < *n; i++)
		if (!known_pid(known, run->ntargets, (*v)[i].spec.pid))
			(*v)[k++] = (*v)[i];
	if (!r)
		*n = k;
	free(known);
	return r;
}

/* Decide what a member found in the second listing is. */
static void classify(struct act *a, struct mr_target *t)
{
	enum mr_note_kind kind;

	if (t->status != MR_PENDING || t->dropped) {
		/* Gone, or not ours: nothing to tell about it. */
		t->dropped = true;
		mr_target_close(t);
		return;
	}
	if (t->ino <= a->listed_ino)
		kind = MR_N_MOVED_IN;
	else if (t->ino >= a->signal_ino)
		kind = MR_N_LATE_ARRIVAL;
	else
		kind = MR_N_LATE_FORK;
	mr_note_add(a->run, (struct mr_note){ .kind = kind, .pid = t->pid, .cgroup = t->cgroup });
	if (kind != MR_N_LATE_FORK) {
		t->dropped = true;
		mr_target_close(t);
	}
}

/* The one second listing of cgroups killed through pidfds: late forks are
 * measured, killed and released; everyone else found is left alone. */
static int late_forks(struct act *a)
{
	struct mr_run *run = a->run;
	struct pick *v = NULL;
	size_t n = 0, cap = 0, from = run->ntargets;
	struct mr_target *t, **items;
	int r = 0;

	if (!a->late_forks || !run->sent)
		return 0;
	for (size_t c = 0; c < run->ncgroups; c++) {
		if (run->cgroups[c].kill != MR_CGKILL_PIDFD)
			continue;
		if (!a->listed_ino || !a->signal_ino) {
			mr_note_add(run, (struct mr_note){ .kind = MR_N_NO_RESCAN, .cgroup = (int)c });
			continue;
		}
		r = newcomers(a, (int)c, &v, &n, &cap);
		if (r == -ENOMEM)
			goto out;
		if (r)
			mr_note_add(run, (struct mr_note){ .kind = MR_N_RESCAN_FAILED,
							   .cgroup = (int)c, .errnum = -r });
		r = 0;
	}
	if (!n)
		goto out;
	t = reallocarray(run->targets, from + n, sizeof(*t));
	items = calloc(n, sizeof(*items));
	if (t)
		run->targets = t;
	if (!t || !items) {
		free(items);
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		mr_target_init(&run->targets[from + i], v[i].spec, v[i].cgroup);
	run->ntargets += n;
	t = run->targets + from;
	n = pending(t, n, items);
	if (!(r = phase(a, MR_JOB_OPEN, items, n)) && !run->interrupted) {
		for (size_t i = 0; i < n; i++)
			classify(a, items[i]);
		n = pending(t, run->ntargets - from, items);
		kill_all(a, items, n, false);
		n = pending(t, run->ntargets - from, items);
		r = phase(a, MR_JOB_RELEASE, items, n);
	}
	free(items);
out:
	free(v);
	return r == -ENOMEM ? fatal(run, r, "target list") : r;
}

/* --wait, and the wait that stands in for a missing process_mrelease. */
static int wait_exits(struct act *a, struct mr_target *t, size_t n, int64_t deadline, bool nosys)
{
	struct mr_run *run = a->run;
	struct mr_target **items;
	size_t k = 0, left;
	int r;

	if (!run->cfg.wait && !nosys)
		return 0;
	if (!(items = calloc(n ? n : 1, sizeof(*items))))
		return fatal(run, -ENOMEM, "target list");
	for (size_t i = 0; i < n; i++) {
		if (t[i].waiting || (run->cfg.wait && t[i].status == MR_RELEASED))
			items[k++] = &t[i];
		else if (run->cfg.wait && t[i].status == MR_EXITED)
			t[i].exited = 1;
	}
	r = mr_wait_exit(items, k, deadline, &run->cfg.waitmask, &left);
	if (r == -EINTR) {
		run->interrupted = true;
		mr_note_add(run, (struct mr_note){ .kind = MR_N_INTERRUPTED, .why = 1, .n = left });
		r = 0;
	}
	for (size_t i = 0; i < k; i++) {
		struct mr_target *w = items[i];
		bool gone = i < k - left;

		if (w->waiting && gone) {
			w->status = MR_EXITED;
			mr_measure(run->cfg.proc, run->cfg.measure, w, &w->after);
		} else if (w->waiting && run->interrupted) {
			w->status = MR_INTERRUPTED;
		} else if (w->waiting) {
			mr_target_fail(w, MR_E_NOSYS, 0);
		}
		w->waiting = false;
		if (run->cfg.wait)
			w->exited = gone ? 1 : 0;
	}
	free(items);
	return r ? fatal(run, r, "waiting for the targets to exit") : 0;
}

/* ---- the run ----------------------------------------------------------- */

static unsigned int default_jobs(const struct mr_config *cfg)
{
	cpu_set_t cpus;

	if (cfg->sched.set_affinity)
		return (unsigned int)CPU_COUNT(&cfg->sched.cpus);
	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		return 1;
	return (unsigned int)CPU_COUNT(&cpus);
}

/* Count each cgroup's members and results; drop the targets that turned
 * out not to be members. */
static void finish(struct mr_run *run)
{
	size_t k = 0;

	for (size_t i = 0; i < run->ntargets; i++) {
		if (run->targets[i].dropped)
			mr_target_close(&run->targets[i]);
		else
			run->targets[k++] = run->targets[i];
	}
	run->ntargets = k;
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (run->cfg.dry_run)
			cg->memory_after_kb = MR_UNKNOWN;
		else
			mr_cgroup_memory_kb(cg, &cg->memory_after_kb);
		cg->members = cg->released = cg->failed = 0;
		for (size_t i = 0; i < run->ntargets; i++) {
			const struct mr_target *t = &run->targets[i];

			if (t->cgroup != (int)c)
				continue;
			cg->members++;
			cg->released += t->status == MR_RELEASED;
			cg->failed += t->status == MR_FAILED;
		}
	}
}

/* Select, signal, release and wait, as run->cfg asks. Returns 0, with each
 * target's fate in it; or -errno with run->fatal naming the step that
 * failed. If run->sent is set then, something was already done, and the
 * run still holds what. */
int mr_run(struct mr_run *run, const struct mr_pidlist *named)
{
	struct act a = { .run = run };
	unsigned int jobs = run->cfg.jobs ? run->cfg.jobs : default_jobs(&run->cfg);
	size_t budget;
	unsigned int retries = 0;
	bool nosys = false;
	int64_t deadline;
	int r;

	/* The threads start first: under load a new thread can wait for a
	 * CPU for milliseconds, and meanwhile the main thread reads the
	 * ancestors and lists the cgroups. Never more threads than pids. */
	if (!run->ncgroups && jobs > named->len)
		jobs = named->len ? (unsigned int)named->len : 1;
	if ((r = mr_pool_start(&a.pool, run, jobs)))
		return fatal(run, r, "worker threads");
	if ((r = mr_ancestors(run->cfg.proc, &run->ancestors, &run->nancestors))) {
		fatal(run, r, "ancestors");
		goto out;
	}
	if (run->cfg.kill && !run->cfg.dry_run && run->ncgroups)
		mr_pid_watermark(&a.listed_ino);
	if ((r = gather(run, named)) || !run->ntargets)
		goto out;
	plan_kills(&a);
	budget = mr_fd_budget(run->ntargets, run->threads + FD_RESERVE);
	if (budget == 0)
		budget = 1;
	if (budget < run->ntargets)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_BATCHES,
						   .n = (run->ntargets + budget - 1) / budget });
	if ((r = mr_pool_ready(a.pool))) {
		fatal(run, r, "cannot set the releasing threads' nice value or CPUs; nothing was sent");
		goto out;
	}
	mr_note_add(run, (struct mr_note){ .kind = MR_N_THREADS, .n = run->threads });
	for (size_t i = 0; !r && !run->interrupted && i < run->ntargets; i += budget) {
		size_t n = run->ntargets - i < budget ? run->ntargets - i : budget;

		r = batch(&a, i, n, i == 0);
		/* Short of descriptors: each batch is done, waited for and
		 * closed before the next is opened. */
		if (!r && budget < run->ntargets) {
			mr_pool_stats(a.pool, &retries, &nosys);
			deadline = mr_now_us() + (int64_t)run->cfg.wait_ms * 1000;
			r = wait_exits(&a, run->targets + i, n, deadline, nosys);
			for (size_t k = i; k < i + n; k++)
				mr_target_close(&run->targets[k]);
		}
	}
	if (!r && !run->interrupted && budget >= run->ntargets)
		r = late_forks(&a);
	mr_pool_stats(a.pool, &retries, &nosys);
	if (!r && !run->interrupted && budget >= run->ntargets) {
		deadline = mr_now_us() + (int64_t)run->cfg.wait_ms * 1000;
		r = wait_exits(&a, run->targets, run->ntargets, deadline, nosys);
	}
	if (retries)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_RETRIES, .n = retries });
	if (nosys)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_NOSYS });
	if (run->sent) {
		run->elapsed_us = mr_now_us() - a.act_start;
		mr_mem_available_kb(&run->mem_available_after_kb);
	}
out:
	mr_pool_stop(a.pool);
	finish(run);
	return r;
}

void mr_run_free(struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++)
		mr_target_close(&run->targets[i]);
	free(run->targets);
	for (size_t i = 0; i < run->ncgroups; i++)
		mr_cgroup_free(&run->cgroups[i]);
	free(run->cgroups);
	mr_cgmounts_free(&run->mounts);
	free(run->ancestors);
	free(run->notes);
	*run = (struct mr_run){ 0 };
}
