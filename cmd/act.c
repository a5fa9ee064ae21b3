/* act.c: the release run: signals held, cgroups frozen and killed, targets
 * killed and released on worker threads, late arrivals, the wait. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* A killed cgroup is scanned again for processes forked before their parent
 * died, this many times at most. */
#define MAX_ROUNDS 100
/* A task freezes as soon as it runs; tasks that never will (in
 * uninterruptible sleep, or held by the v1 freezer) are the very ones
 * mrelease is for. The kernel's cgroup.kill deals with concurrent forks by
 * itself, so the freeze is a second guard and gets no more than this
 * before the kill goes ahead. */
#define FREEZE_TIMEOUT_MS 5

/* One release run: what mr_act() and its helpers share. */
struct act {
	const struct mr_options *o;
	struct mr_run *run;
	struct mr_release_opts ro;
	struct mr_release_stats stats;
	sigset_t sigmask; /* the mask before signals were held */
};

/* The cgroups this run froze, for thaw_cgroups() at exit too. */
static const struct mr_run *frozen_run;
static bool *frozen_by_us;

static const int held_signals[] = { SIGINT, SIGTERM, SIGHUP };
static volatile sig_atomic_t caught_signal;

static void catch_signal(int sig)
{
	caught_signal = sig;
}

/* From the first signal sent to the report, SIGINT, SIGTERM and SIGHUP are
 * held, so that an interrupted run still reports what it did; only --wait
 * lets them in, to end the wait. The worker threads inherit the mask. */
static void hold_signals(sigset_t *old)
{
	struct sigaction sa = { .sa_handler = catch_signal };
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < MR_NELEMS(held_signals); i++) {
		sigaddset(&set, held_signals[i]);
		sigaction(held_signals[i], &sa, NULL);
	}
	sigprocmask(SIG_BLOCK, &set, old);
}

/* After the report: die of a signal that came during the run, as the
 * caller expects of an interrupted command. */
void mr_release_signals(void)
{
	sigset_t pending, set;

	sigpending(&pending);
	sigemptyset(&set);
	for (size_t i = 0; i < MR_NELEMS(held_signals); i++) {
		if (sigismember(&pending, held_signals[i]))
			caught_signal = held_signals[i];
		signal(held_signals[i], SIG_DFL);
		sigaddset(&set, held_signals[i]);
	}
	if (caught_signal)
		raise(caught_signal);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* Freeze each whole v2 cgroup so that nothing in it can fork, then kill it
 * with cgroup.kill: fatal signals pass through a v2 freeze, so freezing
 * first costs nothing. Runs once the releasing threads are ready. */
static void kill_cgroups(void *arg)
{
	struct act *a = arg;
	bool was_frozen;

	for (size_t i = 0; i < a->run->ncgroups; i++) {
		struct mr_cgroup *cg = &a->run->cgroups[i];
		int r;

		if (!cg->v2 || !a->o->recursive)
			continue;
		/* Frozen or killed as a whole, such a cgroup would take
		 * mrelease with it; it is refused as a target instead. */
		if (mr_cgroup_holds(cg, getpid(), true) != 0) {
			if (a->o->verbose)
				warnx("cgroup %s: mrelease runs inside it; killing each process "
				      "through its pidfd", cg->path);
			continue;
		}
		/* Thaw afterwards only what we froze: a cgroup frozen before
		 * stays as its owner left it (fatal signals pass the freeze). */
		r = mr_cgroup_frozen(cg, &was_frozen);
		if (!r && !was_frozen) {
			r = mr_cgroup_freeze(cg, true);
			if (!r) {
				frozen_by_us[i] = true;
				r = mr_cgroup_wait_frozen(cg, FREEZE_TIMEOUT_MS);
			}
		}
		if (r && a->o->verbose)
			warnx("cgroup %s: %s; killing without freezing first", cg->path,
			      r == -ETIMEDOUT ? "not frozen in time" :
			      r == -ENOENT ? "no cgroup.freeze" : strerror(-r));
		r = mr_cgroup_kill(cg);
		if (r && a->o->verbose)
			warnx("cgroup %s: %s; killing each process through its pidfd", cg->path,
			      r == -ENOENT ? "no cgroup.kill" : strerror(-r));
	}
}

/* Thaw what kill_cgroups froze. Also run at exit, so that no error path
 * leaves a cgroup frozen behind it. */
static void thaw_cgroups(void)
{
	for (size_t i = 0; frozen_run && i < frozen_run->ncgroups; i++) {
		int r;

		if (!frozen_by_us[i])
			continue;
		r = mr_cgroup_freeze(&frozen_run->cgroups[i], false);
		if (r) {
			errno = -r;
			warn("cgroup %s: cannot thaw", frozen_run->cgroups[i].path);
		}
		frozen_by_us[i] = false;
	}
}

/* Release targets[from..]: kill them first with --kill. */
static void release_round(struct act *a, size_t from, bool first)
{
	struct mr_run *run = a->run;
	size_t n = run->ntargets - from;
	int r;

	a->ro.kill_first = first && a->o->kill && run->ncgroups ? kill_cgroups : NULL;
	r = mr_release_all(run->targets + from, n, &a->ro, &a->stats);
	run->stats.nosys |= a->stats.nosys;
	run->stats.retries += a->stats.retries;
	if (r && a->stats.sched_error) {
		errno = -r;
		err(MR_EXIT_FATAL, "cannot set the releasing threads' nice value or CPUs; "
		    "nothing was sent");
	}
	if (r) {
		errno = -r;
		err(MR_EXIT_FATAL, "cannot start the releasing threads");
	}
}

static unsigned int default_jobs(const struct mr_options *o)
{
	cpu_set_t cpus;

	if (o->sched.set_affinity)
		return (unsigned int)CPU_COUNT(&o->sched.cpus);
	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		return 1;
	return (unsigned int)CPU_COUNT(&cpus);
}

void mr_act(const struct mr_options *o, struct mr_procinfo *pi, struct mr_run *run)
{
	struct act a = {
		.o = o,
		.run = run,
		.ro = {
			.kill = o->kill,
			.jobs = o->jobs ? o->jobs : default_jobs(o),
			.sched = o->sched,
		},
	};
	size_t from = 0;
	int64_t start;
	int r;

	if (o->dry_run) {
		for (size_t i = 0; i < run->ntargets; i++)
			if (run->targets[i].status == MR_PENDING)
				run->targets[i].status = MR_SKIPPED;
		return;
	}
	a.ro.kill_first_arg = &a;
	hold_signals(&a.sigmask);
	frozen_by_us = calloc(run->ncgroups + 1, sizeof(*frozen_by_us));
	if (!frozen_by_us)
		err(MR_EXIT_FATAL, "cgroup list");
	frozen_run = run;
	atexit(thaw_cgroups);
	if (o->verbose)
		warnx("releasing %zu target%s on %u thread%s", run->ntargets,
		      run->ntargets == 1 ? "" : "s", a.ro.jobs, a.ro.jobs == 1 ? "" : "s");

	start = mr_now_us();
	for (unsigned int round = 0;; round++) {
		release_round(&a, from, round == 0);
		from = run->ntargets;
		if (!o->kill || !run->ncgroups || round == MAX_ROUNDS)
			break;
		if (!mr_rescan(o, pi, run))
			break;
		if (o->verbose)
			warnx("%zu more process%s joined the cgroups during the kill",
			      run->ntargets - from, run->ntargets - from == 1 ? "" : "es");
		mr_measure_targets(pi, run, from);
	}
	thaw_cgroups();
	frozen_run = NULL;
	if (run->stats.nosys)
		warnx("process_mrelease is not available (Linux before 5.15, or a seccomp "
		      "filter); waited for the targets to exit instead");
	if (o->verbose && run->stats.retries)
		warnx("process_mrelease was retried %u times", run->stats.retries);
	if (o->wait || run->stats.nosys) {
		r = mr_wait_exit(run->targets, run->ntargets, o->wait_ms, &a.sigmask, o->wait);
		if (r == -EINTR)
			warnx("interrupted while waiting; reporting what was done");
		else if (r) {
			errno = -r;
			err(MR_EXIT_FATAL, "waiting for the targets to exit");
		}
	}
	run->elapsed_us = mr_now_us() - start;
}
