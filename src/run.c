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
 *   the kill), each member is killed through its own pidfd, and the cgroup
 *   is listed again after each kill, until no late fork turns up. A late
 *   fork is a process made in a kill window: from a listing to the end of
 *   the kill loop that follows it (pidfs numbers processes in the order
 *   they are made, so watermarks taken at both ends tell). With --grace,
 *   seconds pass between the SIGTERM and the SIGKILL: the first window
 *   closes at the SIGTERM, and one more listing just before the SIGKILL
 *   takes the members' descendants, told by their parents, who are still
 *   alive then (a child is given to another parent the moment its own
 *   dies). Anything else found is left alone: an older process that moved
 *   in, or a new one that arrived from elsewhere (a restarted service).
 *   Without pidfs (before Linux 6.9) only the descendants are found.
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

/* A release or an open that has not returned this long after the last
 * progress, with nothing else left to do, is left behind; at least this
 * much even with --wait 0. */
#define BOUND_MIN_MS 1000
/* Second listings of cgroups killed through pidfds: a late fork's own late
 * forks turn up in the next one; a killed process cannot fork again. */
#define LATE_ROUNDS 16

struct pick {
	struct mr_pidspec spec;
	int cgroup;
	bool named;
};

/* What the phases of one run share. */
struct act {
	struct mr_run *run;
	struct mr_pool *pool;
	int64_t act_start;     /* the first signal or release */
	bool late_forks;       /* some cgroup is killed through pidfds */
	bool batched;          /* short of descriptors: no second listing */
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

static void note(struct mr_run *run, enum mr_note_kind kind, pid_t pid, int cgroup, int why)
{
	mr_note_add(run, (struct mr_note){ .kind = kind, .pid = pid, .cgroup = cgroup, .why = why });
}

static int fatal(struct mr_run *run, int r, const char *what)
{
	snprintf(run->fatal, sizeof(run->fatal), "%s", what);
	return r;
}

/* ---- one target, on a worker thread ------------------------------------- */

/* Open a target and check what it is. A pid named by the user is a target
 * as it is. One found only in a cgroup must still be the process that was
 * listed, and still in the cgroup, once its pidfd is open: its pid may
 * have gone to another process since. A kernel thread found there is left
 * out, as mrelease and pid 1 are, not failed. */
void mr_run_open(const struct mr_run *run, struct mr_target *t)
{
	int in;

	mr_target_open(run, t);
	if (t->named || t->cgroup < 0)
		return;
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
	/* Made after the listing: not the process listed. */
	if (!t->rescanned && run->listed_end_ino && t->ino > run->listed_end_ino) {
		t->dropped = true;
		t->error = MR_E_INODE;
		mr_target_close(t);
		return;
	}
	in = mr_cgroup_holds(run->cfg.proc, &run->cgroups[t->cgroup], t->pid, run->cfg.recursive);
	if (!mr_target_alive(t)) {
		t->status = MR_EXITED;
	} else if (in == 0) {
		t->dropped = true;
		mr_target_close(t);
	} else if (in < 0) {
		/* Never killed through a pidfd that may not be the member's. */
		mr_target_fail(t, MR_E_MEMBERSHIP, -in);
	}
}

/* The figures before (once opened) or after (once released or gone). */
void mr_run_figures(const struct mr_run *run, enum mr_job job, struct mr_target *t,
		    enum mr_measure_mode mode)
{
	int r;

	if (job == MR_JOB_OPEN && t->status == MR_PENDING && !t->dropped) {
		r = mr_measure(run->cfg.proc, mode, t, &t->before);
		if (r == -ESRCH)
			t->status = MR_EXITED;
		else if (r && !t->proc_file) {
			t->proc_file = mode == MR_MEASURE_SMAPS ? "smaps_rollup" : "status";
			t->proc_errnum = -r;
		}
	} else if (job != MR_JOB_OPEN && (t->status == MR_RELEASED || t->status == MR_EXITED)) {
		mr_measure(run->cfg.proc, mode, t, &t->after);
	}
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
		       bool first)
{
	struct mr_cgroup *cg = &run->cgroups[c];
	struct mr_pidlist members = { 0 };
	size_t outside;
	int r = mr_cgroup_members(cg, run->cfg.recursive, &members, &outside);

	if (first)
		cg->outside = outside;
	for (size_t i = 0; !r && i < members.len; i++) {
		pid_t pid = members.v[i].pid;
		const char *comm;
		enum mr_error why = protected_member(run, pid, &comm);

		if (why == MR_E_NONE) {
			r = add_pick(v, n, cap, (struct pick){ members.v[i], c, false });
			continue;
		}
		cg->holds_protected = true;
		if (first) {
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

/* Every pid named and every member of every cgroup, once each. A pid both
 * named and found in a cgroup is counted in the cgroup but stays named: a
 * target whatever its cgroup, with the PID:INODE it was named by. */
static int gather(struct mr_run *run, const struct mr_pidlist *named)
{
	struct pick *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	int r = 0;

	for (size_t i = 0; !r && i < named->len; i++)
		r = add_pick(&v, &n, &cap, (struct pick){ named->v[i], -1, true });
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
	for (size_t i = 0; i < n; i++) {
		struct mr_target *t = &run->targets[k - 1];

		if (i == 0 || v[i].spec.pid != v[i - 1].spec.pid) {
			t = &run->targets[k++];
			mr_target_init(t, v[i].spec, v[i].cgroup);
		}
		if (v[i].named) {
			t->named = true;
			t->want_ino = v[i].spec.ino;
		}
	}
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
			note(run, MR_N_CGKILL_PIDFD, 0, (int)c, why);
		}
	}
}

/* ---- acting ------------------------------------------------------------ */

/* Still to be acted on. A stuck target (its release never returned) is not
 * tried again, but is still killed: stuck_too. */
static bool to_act(const struct mr_target *t, bool stuck_too)
{
	return t->status == MR_PENDING && !t->dropped && (stuck_too || !t->stuck);
}

/* The targets of t[0..n) still to be acted on, into items. */
static size_t pending(struct mr_target *t, size_t n, struct mr_target **items, bool stuck_too)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (to_act(&t[i], stuck_too))
			items[k++] = &t[i];
	return k;
}

/* Keep in items[0..n) those still to be acted on; their number. */
static size_t keep_pending(struct mr_target **items, size_t n, bool stuck_too)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (to_act(items[i], stuck_too))
			items[k++] = items[i];
	return k;
}

/* Largest first, so that the most memory comes back soonest; unmeasured
 * targets last, in pid order. */
static int by_rss_desc(const void *a, const void *b)
{
	const struct mr_target *x = *(struct mr_target *const *)a;
	const struct mr_target *y = *(struct mr_target *const *)b;

	if (x->before.rss_kb != y->before.rss_kb)
		return x->before.rss_kb < y->before.rss_kb ? 1 : -1;
	return (x > y) - (x < y);
}

/* A phase on the pool. A signal that ends it ends the run, except while
 * trying releases in --grace (-EINTR: the caller goes on to the kill). */
static int phase(struct act *a, enum mr_job job, struct mr_target **items, size_t n)
{
	struct mr_run *run = a->run;
	size_t stuck = 0;
	int r;

	if (job == MR_JOB_RELEASE)
		qsort(items, n, sizeof(*items), by_rss_desc);
	r = mr_pool_run(a->pool, job, items, n, run->bound_ms);
	for (size_t i = 0; i < n; i++) {
		if (!items[i]->stuck || items[i]->status != MR_PENDING)
			continue;
		stuck++;
		/* Stuck while trying a release, it is still to be killed. */
		if (job != MR_JOB_TRY_RELEASE)
			mr_target_fail(items[i], MR_E_STUCK, (int)job);
	}
	if (stuck)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_STUCK, .n = stuck, .why = (int)job });
	if (r == -EINTR && job == MR_JOB_TRY_RELEASE)
		return r;
	if (r == -EINTR) {
		run->interrupted = true;
		return 0;
	}
	return r ? fatal(run, r, "worker threads") : 0;
}

/* Kill windows, in pidfs inode numbers: a process made in one was made
 * between a listing and the end of the kill that followed it. */
static void window_open(struct mr_run *run)
{
	if (run->win_open || run->nwin == MR_WINDOWS)
		return;
	mr_pid_watermark(&run->win_lo[run->nwin]);
	run->win_open = true;
}

static void window_close(struct mr_run *run)
{
	if (!run->win_open)
		return;
	mr_pid_watermark(&run->win_hi[run->nwin]);
	run->nwin += run->win_lo[run->nwin] && run->win_hi[run->nwin];
	run->win_open = false;
}

static bool in_window(const struct mr_run *run, uint64_t ino)
{
	for (size_t i = 0; ino && i < run->nwin; i++)
		if (ino > run->win_lo[i] && ino < run->win_hi[i])
			return true;
	return false;
}

/* Just before the first signal or release. With --grace the first kill
 * window closes here, at the SIGTERM: what is made after it, during the
 * grace, is a member's only if its parent says so. */
static void begin(struct act *a)
{
	if (a->run->sent)
		return;
	a->run->sent = true;
	a->act_start = mr_now_us();
	if (a->late_forks && a->run->cfg.grace)
		window_close(a->run);
}

/* --grace: SIGTERM, release at once whatever that made exit (a process
 * whose SIGTERM action is the default begins its group exit as the signal
 * is queued, unless it is stopped or frozen), then give the others up to
 * the grace to exit by themselves. A signal caught meanwhile cuts the grace
 * short: the kill follows at once. */
static int grace(struct act *a, struct mr_target **items, size_t n)
{
	struct mr_run *run = a->run;
	size_t k, left;
	int r;

	for (size_t i = 0; i < n; i++)
		mr_target_signal(items[i], SIGTERM);
	k = keep_pending(items, n, false);
	r = phase(a, MR_JOB_TRY_RELEASE, items, k);
	if (r == -EINTR) {
		note(run, MR_N_GRACE_CUT, 0, -1, 0);
		return 0;
	}
	if (r)
		return r;
	k = keep_pending(items, k, false);
	r = mr_wait_exit(items, k, mr_now_us() + (int64_t)run->cfg.grace_ms * 1000,
			 &run->cfg.waitmask, &left);
	if (r == -EINTR)
		note(run, MR_N_GRACE_CUT, 0, -1, 0);
	else if (r)
		return fatal(run, r, "waiting for the grace");
	for (size_t i = 0; i < k - left; i++) {
		items[i]->status = MR_EXITED;
		mr_measure(run->cfg.proc, run->cfg.measure, items[i], &items[i]->after);
	}
	return 0;
}

/* SIGKILL: cgroup.kill for each cgroup planned so, the first time a kill
 * comes, and through its pidfd for every other target still pending
 * (stuck ones included: their release never returned, the kill still
 * goes). */
static void kill_all(struct act *a, struct mr_target **items, size_t n)
{
	struct mr_run *run = a->run;
	bool sent = false;

	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];
		int r;

		if (cg->kill != MR_CGKILL_FILE || cg->kill_sent)
			continue;
		r = mr_cgroup_kill(cg);
		mr_note_add(run, (struct mr_note){ .kind = r ? MR_N_CGKILL_FAILED : MR_N_CGKILL,
						   .cgroup = (int)c, .errnum = -r });
		if (r) {
			cg->kill = MR_CGKILL_PIDFD;
			a->late_forks = true;
			continue;
		}
		cg->kill_sent = sent = true;
		if (cg->outside)
			mr_note_add(run, (struct mr_note){ .kind = MR_N_OUTSIDE, .cgroup = (int)c,
							   .n = cg->outside });
	}
	for (size_t i = 0; i < n; i++) {
		struct mr_target *t = items[i];

		if (!to_act(t, true))
			continue;
		if (t->cgroup >= 0 && run->cgroups[t->cgroup].kill_sent && !t->named)
			t->killed = true;
		else
			mr_target_signal(t, SIGKILL);
		sent |= t->killed;
	}
	if (sent)
		run->kill_us = mr_now_us() - run->cfg.start_us;
	if (a->late_forks)
		window_close(run);
}

/* Leave notes for targets dropped while opening. */
static void note_dropped(struct mr_run *run, struct mr_target *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!t[i].dropped)
			continue;
		if (t[i].error == MR_E_KTHREAD)
			note(run, MR_N_LEFT_OUT, t[i].pid, t[i].cgroup, MR_E_KTHREAD);
		else if (t[i].error == MR_E_INODE)
			note(run, MR_N_REUSED, t[i].pid, t[i].cgroup, 0);
	}
}

static int descendants(struct act *a);

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
	k = pending(t, n, items, false);
	if ((r = phase(a, MR_JOB_OPEN, items, k)) || run->interrupted)
		goto out;
	note_dropped(run, t, n);
	if (first) {
		mr_mem_available_kb(&run->mem_available_before_kb);
		for (size_t c = 0; c < run->ncgroups; c++)
			mr_cgroup_memory_kb(&run->cgroups[c], &run->cgroups[c].memory_before_kb);
	}
	if (!(k = pending(t, n, items, false)))
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
	}
	if (run->cfg.kill && run->cfg.grace && a->late_forks && !a->batched) {
		/* What the members made during the grace joins the kill. */
		if ((r = descendants(a)) || run->interrupted)
			goto out;
		t = run->targets + from;
		n = run->ntargets - from;
		free(items);
		if (!(items = calloc(n, sizeof(*items))))
			return fatal(run, -ENOMEM, "target list");
	}
	/* Stuck while trying a release under --grace: killed all the same. */
	if (run->cfg.kill)
		kill_all(a, items, pending(t, n, items, true));
	k = pending(t, n, items, false);
	r = phase(a, MR_JOB_RELEASE, items, k);
out:
	free(items);
	return r;
}

/* ---- late forks --------------------------------------------------------- */

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

/* The members of the cgroups killed through pidfds that are not targets
 * yet, as picks. */
static int newcomers(struct act *a, struct pick **v, size_t *n, size_t *cap)
{
	struct mr_run *run = a->run;
	pid_t *known = calloc(run->ntargets ? run->ntargets : 1, sizeof(*known));
	int r = 0;

	if (!known)
		return -ENOMEM;
	for (size_t i = 0; i < run->ntargets; i++)
		known[i] = run->targets[i].pid;
	qsort(known, run->ntargets, sizeof(*known), cmp_pid);
	for (size_t c = 0; c < run->ncgroups && r != -ENOMEM; c++) {
		size_t from = *n, k = from;

		if (run->cgroups[c].kill != MR_CGKILL_PIDFD)
			continue;
		r = list_cgroup(run, (int)c, v, n, cap, false);
		for (size_t i = from; !r && i < *n; i++)
			if (!known_pid(known, run->ntargets, (*v)[i].spec.pid))
				(*v)[k++] = (*v)[i];
		if (!r)
			*n = k;
		else if (r != -ENOMEM)
			mr_note_add(run, (struct mr_note){ .kind = MR_N_RESCAN_FAILED,
							   .cgroup = (int)c, .errnum = -r });
	}
	free(known);
	return r == -ENOMEM ? r : 0;
}

/* Add the members found by a new listing as targets, opened and measured.
 * Returns the index of the first new one in run->targets, via *from. */
static int add_newcomers(struct act *a, size_t *from, size_t *added)
{
	struct mr_run *run = a->run;
	struct mr_target *t, **items;
	size_t n = 0, cap = 0;
	struct pick *v = NULL;
	int r;

	*from = run->ntargets;
	*added = 0;
	if ((r = newcomers(a, &v, &n, &cap)) || !n) {
		free(v);
		return r;
	}
	/* Room for their pidfds; what does not fit fails to open, and is
	 * reported. */
	mr_fd_budget(run->cfg.proc, run->ntargets + n, run->threads + FD_RESERVE);
	t = reallocarray(run->targets, run->ntargets + n, sizeof(*t));
	items = calloc(n, sizeof(*items));
	if (t)
		run->targets = t;
	if (!t || !items) {
		free(v);
		free(items);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		t = &run->targets[*from + i];
		mr_target_init(t, v[i].spec, v[i].cgroup);
		t->rescanned = true;
		items[i] = t;
	}
	free(v);
	run->ntargets += n;
	*added = n;
	r = phase(a, MR_JOB_OPEN, items, n);
	free(items);
	return r;
}

/* Leave a member found by a later listing alone, and say why. */
static void leave(struct mr_run *run, struct mr_target *t)
{
	if (t->status == MR_PENDING && !t->dropped)
		note(run, t->ino && run->listed_ino && t->ino < run->listed_ino ? MR_N_MOVED_IN :
										  MR_N_LATE_ARRIVAL,
		     t->pid, t->cgroup, 0);
	t->dropped = true;
	mr_target_close(t);
}

/* Whether ppid is a target still pending (alive, and about to be killed)
 * among run->targets[0..n). */
static bool pending_parent(const struct mr_run *run, size_t n, pid_t ppid)
{
	for (size_t i = 0; ppid > 1 && i < n; i++) {
		const struct mr_target *p = &run->targets[i];

		if (p->pid == ppid && to_act(p, true))
			return true;
	}
	return false;
}

/* --grace, just before the SIGKILL: the members' descendants made during
 * the grace (their parents, still alive, say whose they are), and anything
 * made in the first kill window that the first listing missed. They are
 * killed with the members. */
static int descendants(struct act *a)
{
	struct mr_run *run = a->run;
	struct mr_target *t;
	size_t from, n;
	bool *taken, more;
	int r;

	window_open(run);
	if ((r = add_newcomers(a, &from, &n)) || !n || run->interrupted)
		return r == -ENOMEM ? fatal(run, r, "target list") : r;
	if (!(taken = calloc(n, sizeof(*taken))))
		return fatal(run, -ENOMEM, "target list");
	t = run->targets + from;
	for (size_t i = 0; i < n; i++)
		taken[i] = t[i].status == MR_PENDING && in_window(run, t[i].ino);
	/* A child, a grandchild... of a member: until nothing more is taken. */
	do {
		more = false;
		for (size_t i = 0; i < n; i++) {
			bool child;

			if (taken[i] || t[i].status != MR_PENDING || t[i].dropped)
				continue;
			child = pending_parent(run, from, t[i].ppid);
			for (size_t j = 0; !child && j < n; j++)
				child = taken[j] && t[j].pid == t[i].ppid;
			if (child)
				taken[i] = more = true;
		}
	} while (more);
	for (size_t i = 0; i < n; i++) {
		if (!taken[i])
			leave(run, &t[i]);
		else
			note(run, MR_N_LATE_FORK, t[i].pid, t[i].cgroup,
			     !in_window(run, t[i].ino));
	}
	free(taken);
	return 0;
}

/* Listings after the kill, of cgroups killed through pidfds: a member made
 * in a kill window is a late fork, measured, killed and released; any other
 * member found is left alone. Each round opens a window of its own, so a
 * late fork's own forks turn up in the next round. */
static int late_forks(struct act *a)
{
	struct mr_run *run = a->run;
	int r = 0;

	if (!a->late_forks || !run->sent)
		return 0;
	if (!run->nwin)
		for (size_t c = 0; c < run->ncgroups; c++)
			if (run->cgroups[c].kill == MR_CGKILL_PIDFD)
				note(run, MR_N_NO_RESCAN, 0, (int)c, 0);
	for (int round = 0; !r && !run->interrupted && round < LATE_ROUNDS; round++) {
		struct mr_target *t, **items;
		size_t from, n, forks = 0;

		window_open(run);
		if ((r = add_newcomers(a, &from, &n)) || !n || run->interrupted)
			break;
		t = run->targets + from;
		for (size_t i = 0; i < n; i++) {
			if (t[i].status == MR_EXITED || t[i].dropped) {
				t[i].dropped = true;
				mr_target_close(&t[i]);
			} else if (t[i].status != MR_PENDING) {
				/* It failed to open (EMFILE...): reported, not dropped. */
			} else if (in_window(run, t[i].ino)) {
				note(run, MR_N_LATE_FORK, t[i].pid, t[i].cgroup, 0);
				forks++;
			} else {
				leave(run, &t[i]);
			}
		}
		if (!forks)
			break;
		if (!(items = calloc(n, sizeof(*items)))) {
			r = -ENOMEM;
			break;
		}
		kill_all(a, items, pending(t, n, items, false));
		r = phase(a, MR_JOB_RELEASE, items, pending(t, n, items, false));
		free(items);
	}
	window_close(run);
	return r == -ENOMEM ? fatal(run, r, "target list") : r;
}

/* ---- waiting ------------------------------------------------------------- */

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
		if (t[i].dropped)
			continue;
		if (t[i].waiting || (run->cfg.wait && t[i].status == MR_RELEASED))
			items[k++] = &t[i];
		else if (run->cfg.wait && t[i].status == MR_EXITED)
			t[i].exited = 1;
	}
	r = mr_wait_exit(items, k, deadline, &run->cfg.waitmask, &left);
	if (r == -EINTR) {
		run->interrupted = run->interrupted_waiting = true;
		r = 0;
	}
	for (size_t i = 0; i < k; i++) {
		struct mr_target *w = items[i];
		bool gone = i < k - left;

		if (w->waiting && gone) {
			w->status = MR_EXITED;
			mr_measure(run->cfg.proc, run->cfg.measure, w, &w->after);
		} else if (w->waiting && !run->interrupted) {
			mr_target_fail(w, MR_E_NOSYS, 0);
		}
		if (!w->waiting || gone)
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

/* What is left once the work is over: targets not done are interrupted, or
 * stuck; those that turned out not to be members go; each cgroup's members
 * and results are counted. */
static void finish(struct mr_run *run)
{
	size_t k = 0, interrupted = 0;

	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		if (t->status == MR_PENDING && run->interrupted)
			t->status = MR_INTERRUPTED;
		else if (t->status == MR_PENDING && t->stuck)
			mr_target_fail(t, MR_E_STUCK, MR_JOB_TRY_RELEASE);
		if (t->waiting && run->interrupted)
			t->status = MR_INTERRUPTED;
		interrupted += t->status == MR_INTERRUPTED;
		if (t->dropped)
			mr_target_close(t);
		else
			run->targets[k++] = *t;
	}
	run->ntargets = k;
	if (run->interrupted)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_INTERRUPTED, .n = interrupted,
						   .why = run->interrupted_waiting });
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (!run->cfg.dry_run)
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
	bool nosys = false, batched;
	unsigned int retries = 0;
	int64_t deadline;
	size_t budget;
	int r;

	run->bound_ms = run->cfg.wait_ms > BOUND_MIN_MS ? run->cfg.wait_ms : BOUND_MIN_MS;
	/* The threads start first: under load a new thread can wait for a
	 * CPU for milliseconds, and meanwhile the main thread reads the
	 * ancestors and lists the cgroups. Never more threads than pids. */
	if (!run->ncgroups && jobs > named->len)
		jobs = named->len ? (unsigned int)named->len : 1;
	if ((r = mr_pool_start(&a.pool, run, jobs)))
		return fatal(run, r, "worker threads");
	if ((r = mr_ancestors(run->cfg.proc, &run->ancestors, &run->nancestors))) {
		fatal(run, r, "cannot read the chain of mrelease's ancestors; nothing was sent");
		goto out;
	}
	if (run->cfg.kill && !run->cfg.dry_run && run->ncgroups) {
		window_open(run);
		run->listed_ino = run->win_lo[0];
	}
	if ((r = gather(run, named)) || !run->ntargets)
		goto out;
	plan_kills(&a);
	budget = mr_fd_budget(run->cfg.proc, run->ntargets, run->threads + FD_RESERVE);
	if (budget == 0)
		budget = 1;
	a.batched = batched = budget < run->ntargets;
	if (batched)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_BATCHES, .cgroup = -1,
						   .n = (run->ntargets + budget - 1) / budget });
	if (run->listed_ino && (a.late_forks || batched))
		mr_pid_watermark(&run->listed_end_ino);
	/* Without a kill through pidfds, the window has no use. */
	if (!a.late_forks)
		run->win_open = false;
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
		if (!r && !run->interrupted && batched) {
			mr_pool_stats(a.pool, &retries, &nosys);
			deadline = mr_now_us() + (int64_t)run->cfg.wait_ms * 1000;
			r = wait_exits(&a, run->targets + i, n, deadline, nosys);
			for (size_t k = i; k < i + n; k++)
				mr_target_close(&run->targets[k]);
		}
	}
	if (!r && !run->interrupted && !batched)
		r = late_forks(&a);
	mr_pool_stats(a.pool, &retries, &nosys);
	if (!r && !run->interrupted && !batched) {
		deadline = mr_now_us() + (int64_t)run->cfg.wait_ms * 1000;
		r = wait_exits(&a, run->targets, run->ntargets, deadline, nosys);
	}
	if (retries)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_RETRIES, .n = retries });
	if (nosys)
		note(run, MR_N_NOSYS, 0, -1, 0);
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
