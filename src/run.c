/* run.c: a whole run, top to bottom (mr_run): select the targets (the pids
 * named, the members of the cgroups, or with --dying every process), open
 * each as a pidfd, read their figures on the worker threads, kill, release
 * on the worker threads, and wait if asked to; and the state its phases
 * share (run.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "sys.h"

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

void mr_note(struct mr_run *run, enum mr_note_kind kind, int cgroup, size_t n, int errnum)
{
	mr_note_add(run, (struct mr_note){ .kind = kind, .cgroup = cgroup, .n = n, .errnum = errnum });
}

/* A signal that interrupts the run has come: from now on nothing more is
 * sent. Asked before every signal and every write to cgroup.kill. */
bool mr_stopped(struct mr_act *a)
{
	sigset_t pending, both;

	if (!a->run->interrupted && sigpending(&pending) == 0) {
		sigandset(&both, &pending, &a->held);
		a->run->interrupted = !sigisemptyset(&both);
	}
	return a->run->interrupted;
}

/* The indices of the targets in state. */
size_t *mr_in_state(struct mr_run *run, enum mr_state state, size_t *n)
{
	size_t *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < run->ntargets; i++)
		if (run->targets[i].state == state)
			v[(*n)++] = i;
	return v;
}

/* The figures before the first signal, write or release: taken before the
 * last check that the run may go on, so that they cannot delay an act
 * after it. */
void mr_begin(struct mr_act *a)
{
	if (a->begun)
		return;
	a->begun = true;
	a->act_start = mr_now_us();
	mr_mem_available_kb(&a->run->mem_available_before_kb);
	for (size_t c = 0; c < a->run->ncgroups; c++)
		mr_cgroup_memory_kb(&a->run->cgroups[c], &a->run->cgroups[c].memory_before_kb);
}

static int by_pid_then_index(const void *x, const void *y)
{
	const struct mr_pidx *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	return (a->i > b->i) - (a->i < b->i);
}

struct mr_pidx *mr_index_targets(const struct mr_run *run)
{
	struct mr_pidx *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	for (size_t i = 0; v && i < run->ntargets; i++)
		v[i] = (struct mr_pidx){ run->targets[i].pid, i };
	if (v)
		qsort(v, run->ntargets, sizeof(*v), by_pid_then_index);
	return v;
}

/* The newest target with this pid among the n indexed, or -1. */
ssize_t mr_find_target(const struct mr_pidx *v, size_t n, pid_t pid)
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

/* The threads to start: as asked, else one for each CPU mrelease may
 * use; never more than the picks. */
static unsigned int plan_jobs(const struct mr_act *a)
{
	const struct mr_config *cfg = &a->run->cfg;
	unsigned int jobs = cfg->jobs;
	cpu_set_t cpus;

	if (!jobs && cfg->sched.set_affinity)
		jobs = (unsigned int)CPU_COUNT(&cfg->sched.cpus);
	else if (!jobs)
		jobs = sched_getaffinity(0, sizeof(cpus), &cpus) ? 1 : (unsigned int)CPU_COUNT(&cpus);
	return jobs > a->npicks ? (unsigned int)a->npicks : jobs;
}

/* How many pidfds fit at once, beside what the run keeps aside for itself,
 * its pool and its threads (counted before they start); and the descriptor
 * table grown to hold a wave of them, each with the duplicate its release
 * job takes, while mrelease has one thread (mr_fd_grow). */
static void room(struct mr_act *a, unsigned int jobs)
{
	struct mr_run *run = a->run;
	size_t wave, want;

	a->fd_kept = MR_FD_RESERVE + MR_FD_POOL + (size_t)jobs * MR_FD_PER_THREAD;
	a->room = a->most = mr_fd_room(run->cfg.proc, a->fd_kept, &a->fd_used, &a->fd_limit);
	wave = a->room < a->npicks ? a->room : a->npicks;
	want = a->fd_used + a->fd_kept + 2 * wave;
	mr_fd_grow(want < a->fd_limit ? want : a->fd_limit);
}

static int start_pool(struct mr_act *a, unsigned int jobs)
{
	struct mr_run *run = a->run;
	unsigned int started;
	sigset_t blocked;
	int r, err;

	if ((r = mr_pool_start(&a->pool, jobs, &run->cfg.sched, &started, &err)))
		return mr_fatal(run, r, "worker threads");
	run->threads = started;
	if (started < jobs)
		mr_note(run, MR_N_THREADS_SHORT, -1, started, err);
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	sigemptyset(&a->held);
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&blocked, s) == 1 && sigismember(&run->cfg.waitmask, s) == 0)
			sigaddset(&a->held, s);
	a->read_left_us = (int64_t)MR_READ_BOUND_MS * 1000;
	run->bound_ms = run->cfg.wait_ms > MR_BOUND_MIN_MS ? run->cfg.wait_ms : MR_BOUND_MIN_MS;
	return 0;
}

/* Whether pidfds have inodes of their own, and the chain of mrelease's
 * ancestors: a listing of a cgroup to kill is checked against it. */
static int know_self(struct mr_act *a)
{
	struct mr_run *run = a->run;
	int r;

	run->pidfs = pidfds_in_pidfs(run->self);
	if ((r = mr_ancestors(run->cfg.proc, &run->ancestors, &run->nancestors)))
		return mr_fatal(run, r, "cannot read the chain of mrelease's ancestors; nothing was "
				"sent");
	return 0;
}

/* Once the picks are known: room for their pidfds, then the threads. */
static int prepare(struct mr_act *a)
{
	unsigned int jobs = plan_jobs(a);

	room(a, jobs);
	return start_pool(a, jobs);
}

/* Before anything is sent: the threads' nice value and CPUs are best
 * effort, said once. */
static void ready(struct mr_act *a)
{
	struct mr_run *run = a->run;
	int nice_err, affinity_err;

	mr_pool_ready(a->pool, &nice_err, &affinity_err);
	run->nice_applied = !run->cfg.sched.set_nice || !nice_err;
	run->affinity_applied = !run->cfg.sched.set_affinity || !affinity_err;
	if (!run->nice_applied)
		mr_note(run, MR_N_NICE, -1, 0, nice_err);
	if (!run->affinity_applied)
		mr_note(run, MR_N_AFFINITY, -1, 0, affinity_err);
	mr_note(run, MR_N_THREADS, -1, run->threads, 0);
}

/* A pidfd is opened: one less fits. The first since the last close begins
 * a wave. */
void mr_take_room(struct mr_act *a)
{
	a->room--;
	if (!a->in_wave)
		a->run->waves++;
	a->in_wave = true;
}

/* A pidfd held for no target, closed: one more fits. */
void mr_close_spare(struct mr_act *a, int fd)
{
	close(fd);
	a->room++;
}

/* The end of a wave: what it killed (or, without --kill, what it opened)
 * released, largest first, its figures read first where its kill came
 * before they could be; then --wait for those exits. */
int mr_end_wave(struct mr_act *a)
{
	struct mr_run *run = a->run;
	int r;

	if (run->interrupted || run->cfg.dry_run)
		return 0;
	if ((r = mr_read_before(a)) ||
	    (r = mr_release_in(a, run->cfg.kill ? MR_KILLED : MR_OPENED)) || run->interrupted)
		return r;
	return mr_wait_exits(a);
}

/* No room for another pidfd in the middle of a cgroup's kill: this wave
 * ends early (what it killed is released, and what it is done with
 * closed), and the next begins. */
int mr_make_room(struct mr_act *a)
{
	int r = mr_end_wave(a);

	mr_close_done(a);
	return r;
}

/* The next wave opened, after the last one's pidfds were closed: its
 * size, 0 when there is nothing left to open, or -errno. The last wave's
 * stay open for the exits waited for before the counters are read. */
static ssize_t next_wave(struct mr_act *a, bool named_only)
{
	if (!mr_picks_left(a, named_only))
		return 0;
	mr_close_done(a);
	a->read_left_us = (int64_t)MR_READ_BOUND_MS * 1000;
	return mr_open_wave(a, named_only);
}

/* One wave of a kill: its figures; its members of cgroups killed already
 * settled by that kill; the grace; the kills of its pids named; where the
 * wave holds every target, each cgroup's kill; then the releases. Refused
 * at a cgroup, or short of memory: what was killed is released all the
 * same. */
static int kill_wave(struct mr_act *a, bool whole)
{
	struct mr_run *run = a->run;
	int r, w;

	if ((r = mr_read_before(a)) || mr_stopped(a))
		return r;
	mr_settle_members(a);
	if (run->cfg.grace && ((r = mr_grace(a)) || run->interrupted))
		return r;
	r = mr_kill_named(a);
	if (!r && whole && !a->cgroups_killed)
		r = mr_kill_cgroups(a);
	if (r == -ECANCELED)
		mr_stop_rest(run);
	if (run->interrupted)
		return r;
	w = mr_end_wave(a);
	return r ? r : w;
}

/* Members of each cgroup that get no --grace signal: they did not fit in
 * a wave before their cgroup's kill. */
static void say_no_grace(struct mr_act *a)
{
	struct mr_run *run = a->run;

	for (size_t c = 0; run->cfg.grace && c < run->ncgroups; c++) {
		size_t n = 0;

		for (size_t i = 0; i < a->npicks; i++)
			n += a->picks[i].cgroup == (int)c && !a->picks[i].named && !a->picks[i].opened;
		if (n)
			mr_note_add(run, (struct mr_note){ .kind = MR_N_NO_GRACE, .cgroup = (int)c,
							   .n = n, .sig = run->cfg.first_signal });
	}
}

/* Kill and release, in waves of as many targets as fit at once. When every
 * target fits, that is one wave, and the cgroups are killed in it, after
 * the pids named. Otherwise the pids named go first, in waves; then each
 * cgroup is killed whole, its members opened as room allows; then the
 * members no listing of that kill found (they left, or went) are settled,
 * in waves too. */
static int kill_run(struct mr_act *a)
{
	struct mr_run *run = a->run;
	bool whole = a->room >= a->npicks;
	ssize_t n;
	int r = 0, w;

	while (!r && !run->interrupted && !run->refused.what && (n = next_wave(a, !whole)))
		r = n < 0 ? (int)n : kill_wave(a, whole);
	if (whole || r || run->interrupted || run->refused.what || !run->ncgroups)
		return r;
	say_no_grace(a);
	if ((r = mr_kill_cgroups(a)) == -ECANCELED)
		mr_stop_rest(run);
	if (run->interrupted)
		return r;
	w = mr_end_wave(a);
	r = r ? r : w;
	while (!r && !run->interrupted && (n = next_wave(a, false)))
		r = n < 0 ? (int)n : kill_wave(a, false);
	return r;
}

/* Release what is dying (or, in a dry run, say what a run would do), in
 * waves of as many targets as fit at once. */
static int release_run(struct mr_act *a)
{
	struct mr_run *run = a->run;
	ssize_t n;
	int r = 0;

	while (!r && !run->interrupted && (n = next_wave(a, false))) {
		if (n < 0)
			r = (int)n;
		else if ((r = mr_read_before(a)))
			break;
		else if (run->cfg.dry_run)
			mr_predict(a);
		else
			r = mr_end_wave(a);
	}
	if (run->cfg.dry_run)
		mr_predict_cgroups(run);
	return r;
}

/* Select, kill, release and wait, as run->cfg asks. Returns 0, with each
 * target's fate in it; -ECANCELED when a cgroup was refused (run->refused
 * says which and why; run->sent whether anything had gone out before, and
 * then what was killed is released all the same); or another -errno with
 * run->fatal naming the step that failed. A run changes nothing of the
 * process that another run would find changed: it can be made again. */
int mr_run(struct mr_run *run, const struct mr_pidlist *named)
{
	struct mr_act a = { .run = run };
	int r;

	if ((r = know_self(&a)) || (r = mr_select(&a, named)) || !a.npicks || (r = prepare(&a)))
		goto out;
	mr_plan_kills(run);
	ready(&a);
	r = run->cfg.kill && !run->cfg.dry_run ? kill_run(&a) : release_run(&a);
	if (run->sent) {
		run->elapsed_us = mr_now_us() - a.act_start;
		if (!r && !run->interrupted)
			mr_wait_exited(&a);
		mr_mem_available_kb(&run->mem_available_after_kb);
	}
out:
	mr_pool_stop(a.pool);
	mr_finish(&a);
	free(a.picks);
	return r;
}

/* Ready run for another with the same configuration, cgroups and mounts:
 * what the last one found and did is freed and forgotten. */
void mr_run_reset(struct mr_run *run)
{
	struct mr_config cfg = run->cfg;
	struct mr_cgroup *cgroups = run->cgroups;
	struct mr_cgmounts mounts = run->mounts;
	size_t ncgroups = run->ncgroups;

	run->cgroups = NULL;
	run->ncgroups = 0;
	run->mounts = (struct mr_cgmounts){ 0 };
	mr_run_free(run);
	mr_run_init(run, &cfg);
	run->cgroups = cgroups;
	run->ncgroups = ncgroups;
	run->mounts = mounts;
	for (size_t c = 0; c < ncgroups; c++)
		mr_cgroup_reset(&cgroups[c]);
}

void mr_run_free(struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++)
		mr_target_close(&run->targets[i]);
	free(run->targets);
	free(run->missing);
	free(run->unreached);
	for (size_t i = 0; i < run->ncgroups; i++)
		mr_cgroup_free(&run->cgroups[i]);
	free(run->cgroups);
	mr_cgmounts_free(&run->mounts);
	free(run->ancestors);
	free(run->notes);
	*run = (struct mr_run){ 0 };
}
