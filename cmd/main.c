/* main.c: mrelease's front end: options, selection, action, report. */
#define _GNU_SOURCE
#include <argp.h>
#include <signal.h>
#include <sys/resource.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

struct options {
	bool kill, dry_run, json, quiet, verbose, recursive, wait, read_stdin;
	enum mr_measure_mode measure;
	unsigned int wait_ms;
	unsigned int jobs; /* 0: one per CPU of the affinity set */
	struct mr_sched sched;
	struct mr_pidlist pids;
	const char **cgroups;
	size_t ncgroups;
};

enum { OPT_NO_RECURSIVE = 0x100 };

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* A killed cgroup is scanned again for processes forked before their parent
 * died, this many times at most. */
#define MAX_ROUNDS 100
/* A task freezes as soon as it runs; tasks that never will (in
 * uninterruptible sleep, or held by the v1 freezer) are the very ones
 * mrelease is for. The kernel's cgroup.kill deals with concurrent forks by
 * itself, so the freeze is a second guard and gets no more than this
 * before the kill goes ahead. */
#define FREEZE_TIMEOUT_MS 5

/* One release run: what act() and its helpers share. */
struct act {
	const struct options *o;
	struct mr_run *run;
	struct mr_release_opts ro;
	struct mr_release_stats stats;
	bool *frozen; /* per cgroup: we froze it and must thaw it */
	sigset_t sigmask; /* the mask before signals were held */
};

static const struct argp_option argp_options[] = {
	{ "kill", 'k', NULL, 0, "Send SIGKILL through each pidfd, then release", 1 },
	{ "cgroup", 'c', "PATH", 0,
	  "Every process in cgroup PATH and its descendants (v2 or v1; a relative PATH is "
	  "taken under the cgroup2 mount); repeatable", 1 },
	{ "no-recursive", OPT_NO_RECURSIVE, NULL, 0,
	  "With --cgroup, leave out descendant cgroups", 1 },
	{ "nice", 'n', "N", 0, "Release at nice value N (-20..19)", 2 },
	{ "affinity", 'a', "CPULIST", 0, "Release on these CPUs, e.g. 0,2-3", 2 },
	{ "jobs", 'j', "N", 0, "Release on N threads (default: CPUs in the affinity set)", 2 },
	{ "measure", 'm', "MODE", 0,
	  "Memory figures from smaps (smaps_rollup, the default), status (O(1) counters) "
	  "or none", 3 },
	{ "wait", 'w', "SECONDS", OPTION_ARG_OPTIONAL,
	  "After releasing, wait until every target has exited (default 10 s)", 3 },
	{ "dry-run", 'd', NULL, 0, "Measure and report only; send and release nothing, even with --kill", 3 },
	{ "json", 'J', NULL, 0, "Print one JSON document instead of the table", 4 },
	{ "quiet", 'q', NULL, 0, "Print no report, only errors", 4 },
	{ "verbose", 'v', NULL, 0, "Explain fallbacks and retries on stderr", 4 },
	{ 0 }
};

static const char doc[] =
	"Free the memory of dying processes now, with process_mrelease(2).\n\n"
	"Each PID is opened as a pidfd and every later act goes through it. A PID of - "
	"reads whitespace-separated PIDs from standard input. Without --kill, only "
	"processes that are already exiting are released."
	"\v"
	"Exit status:\n"
	"  0   every target released or gone (with --dry-run: measured)\n"
	"  1   no target released or gone: every one failed\n"
	"  2   usage error; nothing was done\n"
	"  3   fatal error\n"
	"  64  some targets released or gone, some failed";

const char *argp_program_version = "mrelease " MR_VERSION;
const char *argp_program_bug_address = NULL;

static void parse_pid_arg(struct argp_state *state, struct options *o, const char *arg)
{
	struct mr_pidspec spec;
	int r;

	if (strcmp(arg, "-") == 0) {
		o->read_stdin = true;
		return;
	}
	if (mr_parse_pidspec(arg, &spec))
		argp_error(state, "'%s': not a valid pid (1..%d, or PID:INODE)", arg, MR_PID_MAX);
	r = mr_pidlist_add(&o->pids, spec);
	if (r == -E2BIG)
		argp_error(state, "more than %d pids", MR_PID_MAX);
	if (r)
		err(MR_EXIT_FATAL, "pid list");
}

static long parse_number(struct argp_state *state, const char *opt, const char *arg,
			 long min, long max)
{
	long v;

	if (mr_parse_long(arg, min, max, &v))
		argp_error(state, "%s '%s': expected a whole number from %ld to %ld", opt, arg,
			   min, max);
	return v;
}

static void parse_affinity(struct argp_state *state, struct options *o, const char *arg)
{
	cpu_set_t online, both;
	int r;

	if (mr_parse_cpulist(arg, &o->sched.cpus))
		argp_error(state, "--affinity '%s': not a CPU list such as 0,2-3", arg);
	if ((r = mr_cpus_online(&online))) {
		errno = -r;
		err(MR_EXIT_FATAL, "/sys/devices/system/cpu/online");
	}
	CPU_AND(&both, &o->sched.cpus, &online);
	if (!CPU_EQUAL(&both, &o->sched.cpus))
		argp_error(state, "--affinity '%s': names a CPU that is not online", arg);
	o->sched.set_affinity = true;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct options *o = state->input;

	switch (key) {
	case 'k': o->kill = true; break;
	case 'c': {
		const char **c = reallocarray(o->cgroups, o->ncgroups + 1, sizeof(*c));

		if (!c)
			err(MR_EXIT_FATAL, "cgroup list");
		o->cgroups = c;
		o->cgroups[o->ncgroups++] = arg;
		break;
	}
	case OPT_NO_RECURSIVE: o->recursive = false; break;
	case 'n':
		o->sched.nice = (int)parse_number(state, "--nice", arg, -20, 19);
		o->sched.set_nice = true;
		break;
	case 'a': parse_affinity(state, o, arg); break;
	case 'j': o->jobs = (unsigned int)parse_number(state, "--jobs", arg, 1, 1024); break;
	case 'm':
		if (strcmp(arg, "smaps") == 0)
			o->measure = MR_MEASURE_SMAPS;
		else if (strcmp(arg, "status") == 0)
			o->measure = MR_MEASURE_STATUS;
		else if (strcmp(arg, "none") == 0)
			o->measure = MR_MEASURE_NONE;
		else
			argp_error(state, "--measure '%s': expected smaps, status or none", arg);
		break;
	case 'w':
		o->wait = true;
		if (arg)
			o->wait_ms = 1000 * (unsigned int)parse_number(state, "--wait", arg, 0, 86400);
		break;
	case 'd': o->dry_run = true; break;
	case 'J': o->json = true; break;
	case 'q': o->quiet = true; break;
	case 'v': o->verbose = true; break;
	case ARGP_KEY_ARG: parse_pid_arg(state, o, arg); break;
	case ARGP_KEY_END:
		if (o->pids.len == 0 && !o->read_stdin && o->ncgroups == 0)
			argp_error(state, "no PID or --cgroup given");
		if (o->json && o->quiet)
			argp_error(state, "--json and --quiet contradict each other");
		break;
	default: return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Every target holds a pidfd from selection to the end of the run: let
 * the run use as many descriptors as the hard limit allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void read_stdin_pids(struct options *o)
{
	char bad[48]; /* a word of up to 31 characters and "..." */
	int r;

	if (!o->read_stdin)
		return;
	r = mr_pidlist_read(&o->pids, stdin, bad, sizeof(bad));
	if (r == -EINVAL || r == -ERANGE)
		errx(MR_EXIT_USAGE, "standard input: '%s': not a valid pid (1..%d, or PID:INODE)",
		     bad, MR_PID_MAX);
	if (r == -E2BIG)
		errx(MR_EXIT_USAGE, "standard input: more than %d pids", MR_PID_MAX);
	if (r) {
		errno = -r;
		err(MR_EXIT_FATAL, "standard input");
	}
}

/* A pid picked for release, and the cgroup it was found in (or -1). */
struct pick {
	struct mr_pidspec spec;
	int cgroup;
};

/* By pid; a pid found in a cgroup sorts before the same pid named alone,
 * so that it is counted in its cgroup. */
static int by_pid(const void *a, const void *b)
{
	pid_t xp = ((const struct pick *)a)->spec.pid, yp = ((const struct pick *)b)->spec.pid;
	const struct pick *x = a, *y = b;

	if (xp != yp)
		return (xp > yp) - (xp < yp);
	return (x->cgroup < y->cgroup) - (x->cgroup > y->cgroup);
}

static void resolve_cgroups(const struct options *o, struct mr_run *run)
{
	int r;

	if (!o->ncgroups)
		return;
	if ((r = mr_cgmounts_read(&run->mounts, "/proc/self/mountinfo"))) {
		errno = -r;
		err(MR_EXIT_FATAL, "/proc/self/mountinfo");
	}
	run->cgroups = calloc(o->ncgroups, sizeof(*run->cgroups));
	if (!run->cgroups)
		err(MR_EXIT_FATAL, "cgroup list");
	for (size_t i = 0; i < o->ncgroups; i++) {
		r = mr_cgroup_resolve(&run->mounts, o->cgroups[i], &run->cgroups[i]);
		if (r == -EXDEV)
			errx(MR_EXIT_USAGE, "cgroup '%s': not inside a cgroup file system",
			     o->cgroups[i]);
		if (r == -EINVAL)
			errx(MR_EXIT_USAGE, "cgroup '%s': not a cgroup directory (\"..\" is not "
			     "accepted)", o->cgroups[i]);
		if (r == -ENOENT && !mr_cgmounts_v2(&run->mounts) && o->cgroups[i][0] != '/')
			errx(MR_EXIT_USAGE, "cgroup '%s': no cgroup2 mount to take it under",
			     o->cgroups[i]);
		if (r) {
			errno = -r;
			err(MR_EXIT_USAGE, "cgroup '%s'", o->cgroups[i]);
		}
		run->ncgroups++;
	}
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

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* A member listed in a cgroup may have exited, and its pid gone to another
 * process, before we opened it: that member has exited, and the process
 * now behind the pid is none of ours. */
static void check_member(const struct options *o, const struct mr_run *run, struct mr_target *t)
{
	if (t->status == MR_FAILED && t->error == MR_E_NO_PROCESS) {
		t->status = MR_EXITED;
		t->error = MR_E_NONE;
		return;
	}
	if (t->status != MR_PENDING)
		return;
	if (mr_cgroup_holds(&run->cgroups[t->cgroup], t->pid, o->recursive) != 1 ||
	    !mr_target_alive(t)) {
		t->status = MR_EXITED;
		t->comm[0] = '\0';
	}
}

/* Add the picks that are not targets yet, open them, and return how many
 * were new. */
static size_t add_targets(const struct options *o, struct mr_procinfo *pi, struct mr_run *run,
			  struct pick *picks, size_t n)
{
	struct mr_target *t;
	pid_t *known;
	size_t added = 0;

	known = calloc(run->ntargets ? run->ntargets : 1, sizeof(*known));
	t = reallocarray(run->targets, (run->ntargets + n) ? (run->ntargets + n) : 1, sizeof(*t));
	if (!known || !t)
		err(MR_EXIT_FATAL, "target list");
	run->targets = t;
	for (size_t i = 0; i < run->ntargets; i++)
		known[i] = run->targets[i].pid;
	qsort(known, run->ntargets, sizeof(*known), cmp_pid);
	qsort(picks, n, sizeof(*picks), by_pid);
	for (size_t i = 0; i < n; i++) {
		if ((i && picks[i].spec.pid == picks[i - 1].spec.pid) ||
		    known_pid(known, run->ntargets - added, picks[i].spec.pid))
			continue;
		t = &run->targets[run->ntargets++];
		mr_target_init(t, picks[i].spec, picks[i].cgroup);
		mr_target_open(pi, t);
		if (t->cgroup >= 0)
			check_member(o, run, t);
		added++;
	}
	free(known);
	return added;
}

/* The members of every cgroup, as picks appended to *picks. */
static void cgroup_picks(const struct options *o, struct mr_run *run, struct pick **picks,
			 size_t *n)
{
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_pidlist members = { 0 };
		struct pick *p;
		int r;

		r = mr_cgroup_members(&run->cgroups[c], o->recursive, &members);
		if (r) {
			errno = -r;
			err(MR_EXIT_FATAL, "cgroup %s", run->cgroups[c].path);
		}
		p = reallocarray(*picks, *n + members.len + 1, sizeof(*p));
		if (!p)
			err(MR_EXIT_FATAL, "target list");
		*picks = p;
		for (size_t i = 0; i < members.len; i++)
			p[(*n)++] = (struct pick){ members.v[i], (int)c };
		mr_pidlist_free(&members);
	}
}

/* Open every named pid and every member of every cgroup once. */
static void select_targets(const struct options *o, struct mr_procinfo *pi, struct mr_run *run)
{
	struct pick *picks = calloc(o->pids.len + 1, sizeof(*picks));
	size_t n = 0;

	if (!picks)
		err(MR_EXIT_FATAL, "target list");
	for (size_t i = 0; i < o->pids.len; i++)
		picks[n++] = (struct pick){ o->pids.v[i], -1 };
	cgroup_picks(o, run, &picks, &n);
	add_targets(o, pi, run, picks, n);
	free(picks);
}

/* Members that came after the first snapshot (forked before their parent
 * was killed); the number of new targets. */
static size_t rescan(const struct options *o, struct mr_procinfo *pi, struct mr_run *run)
{
	struct pick *picks = NULL;
	size_t n = 0, added;

	cgroup_picks(o, run, &picks, &n);
	added = add_targets(o, pi, run, picks, n);
	free(picks);
	return added;
}

static void measure_before(struct mr_procinfo *pi, struct mr_run *run, size_t from)
{
	for (size_t i = from; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];
		int r;

		if (t->status != MR_PENDING)
			continue;
		r = mr_measure(pi, t, &t->before);
		if (r == -ESRCH)
			t->status = MR_EXITED;
		else if (r)
			mr_target_fail(t, MR_E_UNREADABLE, -r);
	}
}

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
	for (size_t i = 0; i < NELEMS(held_signals); i++) {
		sigaddset(&set, held_signals[i]);
		sigaction(held_signals[i], &sa, NULL);
	}
	sigprocmask(SIG_BLOCK, &set, old);
}

/* After the report: die of a signal that came during the run, as the
 * caller expects of an interrupted command. */
static void release_signals(void)
{
	sigset_t pending, set;

	sigpending(&pending);
	sigemptyset(&set);
	for (size_t i = 0; i < NELEMS(held_signals); i++) {
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

	for (size_t i = 0; i < a->run->ncgroups; i++) {
		struct mr_cgroup *cg = &a->run->cgroups[i];
		int r;

		if (!cg->v2 || !a->o->recursive)
			continue;
		r = mr_cgroup_freeze(cg, true, FREEZE_TIMEOUT_MS);
		if (r == 0 || r == -ETIMEDOUT)
			a->frozen[i] = true;
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

static void thaw_cgroups(struct act *a)
{
	for (size_t i = 0; i < a->run->ncgroups; i++) {
		int r;

		if (!a->frozen[i])
			continue;
		r = mr_cgroup_freeze(&a->run->cgroups[i], false, 0);
		if (r) {
			errno = -r;
			warn("cgroup %s: cannot thaw", a->run->cgroups[i].path);
		}
		a->frozen[i] = false;
	}
}

/* Release targets[from..]: kill them first with --kill. */
static void release_round(struct act *a, size_t from, bool first)
{
	struct mr_run *run = a->run;
	size_t n = run->ntargets - from;
	struct mr_target **ptrs;
	int r;

	ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!ptrs)
		err(MR_EXIT_FATAL, "target list");
	for (size_t i = 0; i < n; i++)
		ptrs[i] = &run->targets[from + i];
	a->ro.kill_first = first && a->o->kill && run->ncgroups ? kill_cgroups : NULL;
	r = mr_release_all(ptrs, n, &a->ro, &a->stats);
	free(ptrs);
	run->stats.nosys |= a->stats.nosys;
	run->stats.retries += a->stats.retries;
	if (r && a->stats.sched_error) {
		errno = -r;
		err(MR_EXIT_FATAL, "cannot set the releasing threads' nice value or CPUs; "
		    "nothing was sent");
	}
	if (r) {
		thaw_cgroups(a);
		errno = -r;
		err(MR_EXIT_FATAL, "cannot start the releasing threads");
	}
}

static unsigned int default_jobs(const struct options *o)
{
	cpu_set_t cpus;

	if (o->sched.set_affinity)
		return (unsigned int)CPU_COUNT(&o->sched.cpus);
	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		return 1;
	return (unsigned int)CPU_COUNT(&cpus);
}

static void act(const struct options *o, struct mr_procinfo *pi, struct mr_run *run)
{
	struct act a = {
		.o = o,
		.run = run,
		.ro = {
			.kill = o->kill,
			.jobs = o->jobs ? o->jobs : default_jobs(o),
			.wait_ms = o->wait_ms,
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
	a.frozen = calloc(run->ncgroups + 1, sizeof(*a.frozen));
	if (!a.frozen)
		err(MR_EXIT_FATAL, "cgroup list");
	if (o->verbose)
		warnx("releasing %zu target%s on %u thread%s", run->ntargets,
		      run->ntargets == 1 ? "" : "s", a.ro.jobs, a.ro.jobs == 1 ? "" : "s");

	start = mr_now_us();
	for (unsigned int round = 0;; round++) {
		release_round(&a, from, round == 0);
		from = run->ntargets;
		if (!o->kill || !run->ncgroups || round == MAX_ROUNDS)
			break;
		if (!rescan(o, pi, run))
			break;
		if (o->verbose)
			warnx("%zu more process%s joined the cgroups during the kill",
			      run->ntargets - from, run->ntargets - from == 1 ? "" : "es");
		measure_before(pi, run, from);
	}
	thaw_cgroups(&a);
	free(a.frozen);
	if (run->stats.nosys)
		warnx("process_mrelease is not available (Linux before 5.15, or a seccomp "
		      "filter); waited for the targets to exit instead");
	if (o->verbose && run->stats.retries)
		warnx("process_mrelease was retried %u times", run->stats.retries);
	if (o->wait) {
		struct mr_target **ptrs = calloc(run->ntargets + 1, sizeof(*ptrs));

		if (!ptrs)
			err(MR_EXIT_FATAL, "target list");
		for (size_t i = 0; i < run->ntargets; i++)
			ptrs[i] = &run->targets[i];
		r = mr_wait_exit(ptrs, run->ntargets, o->wait_ms, &a.sigmask);
		free(ptrs);
		if (r == -EINTR)
			warnx("interrupted while waiting; reporting what was done");
		else if (r) {
			errno = -r;
			err(MR_EXIT_FATAL, "waiting for the targets to exit");
		}
	}
	run->elapsed_us = mr_now_us() - start;
}

static void measure_after(struct mr_procinfo *pi, struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		/* What a failed target holds afterwards says nothing about us:
		 * it may have exited by itself, or shares its memory. */
		if (t->status == MR_RELEASED || t->status == MR_EXITED)
			mr_measure(pi, t, &t->after);
	}
}

static void measure_cgroups(struct mr_run *run, bool after)
{
	for (size_t i = 0; i < run->ncgroups; i++) {
		struct mr_cgroup *cg = &run->cgroups[i];

		mr_cgroup_memory_kb(cg, after ? &cg->memory_after_kb : &cg->memory_before_kb);
		if (!after)
			continue;
		cg->members = cg->released = cg->failed = 0;
		for (size_t k = 0; k < run->ntargets; k++) {
			const struct mr_target *t = &run->targets[k];

			if (t->cgroup != (int)i)
				continue;
			cg->members++;
			cg->released += t->status == MR_RELEASED;
			cg->failed += t->status == MR_FAILED;
		}
	}
}

static void report(const struct options *o, const struct mr_run *run)
{
	char buf[256];

	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];

		if (t->status == MR_FAILED)
			warnx("pid %d: %s", (int)t->pid, mr_target_strerror(t, buf, sizeof(buf)));
	}
	if (o->json)
		mr_report_json(stdout, run);
	else if (!o->quiet)
		mr_report_text(stdout, run);
	if (fflush(stdout) == EOF || ferror(stdout))
		err(MR_EXIT_FATAL, "standard output");
}

static void free_run(struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++)
		mr_target_close(&run->targets[i]);
	free(run->targets);
	for (size_t i = 0; i < run->ncgroups; i++)
		mr_cgroup_free(&run->cgroups[i]);
	free(run->cgroups);
	mr_cgmounts_free(&run->mounts);
}

static int exit_status(const struct mr_run *run)
{
	size_t failed = 0;

	for (size_t i = 0; i < run->ntargets; i++)
		failed += run->targets[i].status == MR_FAILED;
	if (failed == 0)
		return MR_EXIT_OK;
	return failed == run->ntargets ? MR_EXIT_NONE : MR_EXIT_PARTIAL;
}

int main(int argc, char **argv)
{
	struct options o = {
		.recursive = true,
		.measure = MR_MEASURE_SMAPS,
		.wait_ms = 10000,
	};
	struct argp argp = { argp_options, parse_opt, "PID...", doc, NULL, NULL, NULL };
	struct mr_run run = {
		.mem_available_before_kb = MR_UNKNOWN,
		.mem_available_after_kb = MR_UNKNOWN,
		.elapsed_us = MR_UNKNOWN,
	};
	struct mr_procinfo *pi;
	int r;

	argp_err_exit_status = MR_EXIT_USAGE;
	/* getopt names the program by argv[0]; say "mrelease" as err(3) does. */
	argv[0] = program_invocation_short_name;
	argp_parse(&argp, argc, argv, 0, NULL, &o);
	read_stdin_pids(&o);
	resolve_cgroups(&o, &run);
	raise_fd_limit();
	if ((r = mr_procinfo_new(&pi, o.measure))) {
		errno = -r;
		err(MR_EXIT_FATAL, "libproc2");
	}
	run.measure = o.measure;
	run.dry_run = o.dry_run;

	select_targets(&o, pi, &run);
	measure_before(pi, &run, 0);
	measure_cgroups(&run, false);
	mr_mem_available_kb(&run.mem_available_before_kb);
	act(&o, pi, &run);
	measure_after(pi, &run);
	measure_cgroups(&run, true);
	if (!o.dry_run)
		mr_mem_available_kb(&run.mem_available_after_kb);
	report(&o, &run);
	release_signals();

	r = exit_status(&run);
	mr_procinfo_free(pi);
	free_run(&run);
	mr_pidlist_free(&o.pids);
	free(o.cgroups);
	return r;
}
