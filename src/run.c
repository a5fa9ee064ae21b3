/* run.c: a whole run, top to bottom (mr_run), and nothing else in src/
 * calls it: select the targets (the pids named, the members of the
 * cgroups, or with --dying every process); size the batches and the
 * threads to the limit on open files; then the phases, each once over
 * every target, as act.h describes them: the first touch, the grace, the
 * kills, the releases, the waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"
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

/* How many pidfds fit at once, and the threads: the pidfds come first. A
 * thread takes its descriptors only from what leaves at least half of the
 * free ones (or one for each pick) to the pidfds, so that a small limit
 * means fewer threads, down to none, never a target without a pidfd; the
 * kill never needs a thread. Then the descriptor table is grown to hold a
 * batch of pidfds, each with the duplicate its release job takes, while
 * mrelease has one thread (mr_fd_grow). The threads to start. */
static unsigned int room(struct mr_act *a)
{
	struct mr_run *run = a->run;
	unsigned int asked = plan_jobs(a), jobs = asked;
	size_t free, keep, batch, want;

	a->fd_kept = MR_FD_RESERVE + MR_FD_POOL;
	free = mr_fd_room(run->cfg.proc, a->fd_kept, &a->fd_used, &a->fd_limit);
	keep = a->npicks < free - free / 2 ? a->npicks : free - free / 2;
	if ((free - keep) / MR_FD_PER_THREAD < jobs)
		jobs = (unsigned int)((free - keep) / MR_FD_PER_THREAD);
	if (jobs < asked)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_THREADS_ROOM, .cgroup = -1,
						   .n = jobs, .m = asked });
	a->fd_kept += (size_t)jobs * MR_FD_PER_THREAD;
	a->most = free - (size_t)jobs * MR_FD_PER_THREAD;
	batch = a->most < a->npicks ? a->most : a->npicks;
	want = a->fd_used + a->fd_kept + 2 * batch;
	mr_fd_grow(want < a->fd_limit ? want : a->fd_limit);
	return jobs;
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
	return start_pool(a, room(a));
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

/* The last two phases: the releases of the targets in state, then the
 * waits (--wait, or without process_mrelease the exits in its place), one
 * deadline for the run, after its last kill. */
static int release_and_wait(struct mr_act *a, enum mr_state state)
{
	int r = mr_release_in(a, state, INT64_MAX);

	if (r || a->run->interrupted)
		return r;
	return mr_wait_exits(a);
}

/* A kill: the first touch of every target (with --grace, the first signal
 * to each; without, the kill of each pid named), the grace, the kills of
 * the pids named still left and of the cgroups, then the releases and the
 * waits. Refused at a cgroup, or short of memory: what was killed is
 * released all the same. */
static int kill_run(struct mr_act *a)
{
	struct mr_run *run = a->run;
	int r, w;

	r = mr_touch(a, run->cfg.grace ? mr_first_signal : mr_kill_batch);
	if (!r && run->cfg.grace && !run->interrupted)
		r = mr_grace(a);
	if (!r && !run->interrupted)
		r = mr_kill_named(a);
	if (!r && !run->interrupted)
		r = mr_kill_cgroups(a);
	if (r == -ECANCELED)
		mr_stop_rest(run);
	if (run->interrupted)
		return r;
	w = release_and_wait(a, MR_KILLED);
	return r ? r : w;
}

/* Release what is dying: the first touch reads the figures; then the
 * releases and the waits. */
static int release_run(struct mr_act *a)
{
	int r = mr_touch(a, mr_read_before);

	if (r || a->run->interrupted)
		return r;
	return release_and_wait(a, MR_OPENED);
}

/* Say what a run would do: the writes to cgroup.kill first, then each
 * target in its first touch, then what only the whole selection tells. */
static int dry_run(struct mr_act *a)
{
	int r;

	mr_predict_writes(a->run);
	r = mr_touch(a, mr_predict);
	mr_predict_end(a);
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
	if (run->cfg.dry_run)
		r = dry_run(&a);
	else if (run->cfg.kill)
		r = kill_run(&a);
	else
		r = release_run(&a);
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
