/* main.c: mr-bench, the mrelease benchmark driver (issue 5).  It starts
 * fresh victims, ends them in several ways -- plain SIGKILL or cgroup.kill
 * and wait, the floor (mr-floor), mrelease --kill, pkill -m, and munmap of
 * the same memory in one process -- and times how long each takes to give
 * the memory back, as a ratio to the floor and to pkill -m; it also times
 * mrelease's own start-up.  It prints a table, and can write JSON.  Run it
 * as root through tests/bench/run; tests/bench/README.md explains it. */
#define _GNU_SOURCE
#include <argp.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"

static const struct {
	const char *name;
	scenario_fn *run;
} scenarios[NSCENARIOS] = {
	[SC_IDLE] = { "idle", scenario_idle },
	[SC_STARVED] = { "starved", scenario_starved },
	[SC_STUCK] = { "stuck", scenario_stuck },
	[SC_GRACE] = { "grace", scenario_grace },
	[SC_FOLLOW] = { "follow", scenario_follow },
	[SC_OOM] = { "oom", scenario_oom },
	[SC_CGROUP] = { "cgroup", scenario_cgroup },
	[SC_MANY] = { "many", scenario_many },
	[SC_TINY] = { "tiny", scenario_tiny },
	[SC_BATCHES] = { "batches", scenario_batches },
	[SC_SWEEP] = { "sweep", scenario_sweep },
	[SC_KILLUS] = { "killus", scenario_killus },
	[SC_STARTUP] = { "startup", scenario_startup },
	[SC_PROTECT] = { "protect", scenario_protect },
	[SC_OVERHEAD] = { "overhead", scenario_overhead },
};

/* ---- options ---- */

static const char doc[] =
	"mr-bench -- time how fast mrelease gives memory back, as a ratio to the floor "
	"(mr-floor: pidfd_open, SIGKILL, process_mrelease and nothing else) and to pkill -m\v"
	"Scenarios: idle, starved (SCHED_IDLE victim under a nice -20 busy loop on CPU 1), "
	"stuck (cgroup-v1 freezer), grace (a victim that ignores SIGTERM: --kill --grace "
	"against --kill), follow (a stuck victim killed by mr-bench while mrelease --follow "
	"runs with its defaults, or on a timer, against SIGKILL alone and the floor), oom (a "
	"stuck victim killed by the OOM killer of its memory cgroup, with mrelease --follow "
	"running and without), cgroup (64 victims in one cgroup: "
	"mrelease --cgroup against cgroup.kill), many (128 stuck victims), tiny (1 to 256 "
	"stuck victims of 1 MiB: the cost per target, fitted), batches (2000 stuck victims of 1 "
	"MiB, pids on stdin, with and without RLIMIT_NOFILE 64: what a batch costs), sweep (one "
	"stuck victim of 64 MiB to 2 GiB: ms per GiB), killus (mrelease's kill_us at 64 MiB "
	"and 4 GiB), startup (mrelease --dry-run --kill against /bin/true), protect "
	"(oom_score_adj and mlockall at start, timed by strace -T), overhead (--measure costs "
	"of --dry-run --kill).  Needs root, a cgroup-v1 memory controller (to tell when memory "
	"is back) and, for stuck victims, a cgroup-v1 freezer (follow and oom: cgroup2 and "
	"tracefs as well, which mr-bench mounts for them if no one has; oom: userfaultfd).  Exit "
	"status: 0 done (targets may still be missed), 2 usage error, 3 fatal error, 130 "
	"interrupted.  Usually run as 'sudo tests/bench/run --build-dir build'; "
	"tests/bench/README.md explains it.";

enum {
	OPT_KILL_RUNS = 256, OPT_OVERHEAD_RUNS, OPT_ONLY, OPT_QUICK, OPT_PKILL, OPT_GRACE,
	OPT_FLOOR
};

static const struct argp_option options[] = {
	{ "size", 's', "MIB", 0, "S: memory per scenario in MiB (default 1024)", 0 },
	{ "runs", 'r', "N", 0, "runs per scenario and method (default 5)", 0 },
	{ "kill-runs", OPT_KILL_RUNS, "N", 0,
	  "runs of SIGKILL or cgroup.kill + wait where the victims cannot exit, which only "
	  "wait out --timeout (default 1)", 0 },
	{ "timeout", 't', "SECONDS", 0, "stop waiting for memory after this long (default 10)", 0 },
	{ "overhead-runs", OPT_OVERHEAD_RUNS, "N", 0,
	  "runs of each start-up, overhead and killus measurement (default 20)", 0 },
	{ "grace", OPT_GRACE, "SECONDS", 0, "the --grace given to mrelease in grace (default 1)", 0 },
	{ "pkill", OPT_PKILL, "PATH", 0,
	  "compare with this pkill, which must offer -m (--mrelease, procps-ng 4.0.6 or later); "
	  "default: the first such pkill in PATH", 0 },
	{ "floor", OPT_FLOOR, "PATH", 0, "the floor program (default: mr-floor beside mr-bench)",
	  0 },
	{ "only", OPT_ONLY, "LIST", 0, "run only these scenarios (comma-separated)", 0 },
	{ "json", 'j', "FILE", 0, "also write the results as JSON to FILE", 0 },
	{ "quick", OPT_QUICK, NULL, 0,
	  "smoke run: S = 64 MiB, 1 run, 5 s timeout, 3 overhead runs, --grace 0.2, fewer "
	  "and smaller victims in tiny, batches, sweep and killus", 0 },
	{ 0 }
};

static long parse_num(const char *arg, long min, long max, struct argp_state *state)
{
	long v;

	if (mr_parse_long(arg, min, max, &v))
		argp_error(state, "'%s': not a number from %ld to %ld", arg, min, max);
	return v;
}

static unsigned int parse_secs(const char *arg, unsigned int max_s, struct argp_state *state)
{
	unsigned int ms;

	if (mr_parse_seconds(arg, max_s, &ms))
		argp_error(state, "'%s': not seconds from 0 to %u, such as 5 or 0.5", arg, max_s);
	return ms;
}

static unsigned int parse_only(char *arg, struct argp_state *state)
{
	unsigned int mask = 0;

	for (char *save, *w = strtok_r(arg, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < NSCENARIOS && (!scenarios[i].name || strcmp(w, scenarios[i].name));
		     i++)
			;
		if (i == NSCENARIOS)
			argp_error(state, "'%s': not a scenario", w);
		mask |= 1u << i;
	}
	return mask;
}

/* --quick sets the defaults; explicit options still win. */
static void settle(struct bench_opts *o)
{
	if (o->quick) {
		if (!o->size_set)
			o->size_mib = 64;
		if (!o->runs_set)
			o->runs = 1;
		if (!o->timeout_set)
			o->timeout_ms = 5000;
		if (!o->overhead_set)
			o->overhead_runs = 3;
		if (!o->grace_set)
			o->grace_ms = 200;
	}
	if (o->kill_runs > o->runs)
		o->kill_runs = o->runs;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct bench_opts *o = state->input;

	switch (key) {
	case 's': o->size_mib = parse_num(arg, 64, 1L << 20, state); o->size_set = true; break;
	case 'r': o->runs = parse_num(arg, 1, MAX_RUNS, state); o->runs_set = true; break;
	case OPT_KILL_RUNS: o->kill_runs = parse_num(arg, 0, MAX_RUNS, state); break;
	case 't':
		o->timeout_ms = parse_secs(arg, 3600, state);
		if (!o->timeout_ms)
			argp_error(state, "--timeout 0: nothing could be timed");
		o->timeout_set = true;
		break;
	case OPT_OVERHEAD_RUNS:
		o->overhead_runs = parse_num(arg, 1, MAX_RUNS, state);
		o->overhead_set = true;
		break;
	case OPT_ONLY: o->only = parse_only(arg, state); break;
	case 'j': o->json = arg; break;
	case OPT_PKILL: o->pkill = arg; break;
	case OPT_FLOOR: o->floor = arg; break;
	case OPT_GRACE: o->grace_ms = parse_secs(arg, 60, state); o->grace_set = true; break;
	case OPT_QUICK: o->quick = true; break;
	case ARGP_KEY_ARG:
		if (o->mrelease)
			argp_error(state, "one MRELEASE binary only");
		o->mrelease = arg;
		break;
	case ARGP_KEY_END:
		if (!o->mrelease)
			argp_error(state, "give the path of the mrelease binary");
		settle(o);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ---- set-up ---- */

/* The cgroup2 mount and the v1 freezer and memory hierarchies, as
 * /proc/self/mountinfo has them: never hard-coded, since a hybrid system
 * mounts cgroup2 beside the v1 controllers. */
static void find_mounts(struct bench *b)
{
	const struct mr_cgmount *m;
	struct mr_cgmounts ms;
	int r = mr_cgmounts_read(&ms, "/proc/self/mountinfo");

	if (r) {
		errno = -r;
		err(EXIT_FATAL, "/proc/self/mountinfo");
	}
	if ((m = mr_cgmounts_v1(&ms, "freezer")))
		snprintf(b->v1_freezer, sizeof(b->v1_freezer), "%s", m->path);
	if ((m = mr_cgmounts_v1(&ms, "memory")))
		snprintf(b->v1_memory, sizeof(b->v1_memory), "%s", m->path);
	if ((m = mr_cgmounts_v2(&ms)))
		snprintf(b->v2_root, sizeof(b->v2_root), "%s", m->path);
	mr_cgmounts_free(&ms);
}

/* --floor, or mr-floor in the directory of this program, where the
 * build puts both. */
static void find_floor(struct bench *b)
{
	char self[PATH_MAX];
	ssize_t n;

	if (b->opt.floor) {
		snprintf(b->floor, sizeof(b->floor), "%s", b->opt.floor);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			err(EXIT_FATAL, "/proc/self/exe");
		self[n] = '\0';
		snprintf(b->floor, sizeof(b->floor), "%s/mr-floor", dirname(self));
	}
	if (access(b->floor, X_OK))
		err(EXIT_FATAL, "%s (build the mr-floor target, or give --floor PATH)", b->floor);
}

static void prepare(struct bench *b)
{
	const char *args[] = { "--version", NULL };
	struct tool_result r;

	if (geteuid() != 0)
		errx(EXIT_FATAL, "needs root (cgroups, nice -20): sudo tests/bench/run");
	b->bytes = (size_t)b->opt.size_mib * MIB;
	b->timeout_us = (int64_t)b->opt.timeout_ms * US_PER_MS;
	b->started = mr_now_us();
	read_load(b->load_start, sizeof(b->load_start));
	run_mrelease(b, args, NULL, true, 10 * US_PER_S, &r);
	if (r.status != 0)
		errx(EXIT_FATAL, "%s --version: %s", b->opt.mrelease, r.err[0] ? r.err : "failed");
	r.out[strcspn(r.out, "\n")] = '\0';
	snprintf(b->version, sizeof(b->version), "%s", r.out);
	free(r.out);
	find_floor(b);
	find_mounts(b);
	find_pkill(b);
	if (!b->pkill.found)
		warnx("pkill -m not found: its rows are skipped: %s", b->pkill.why);
	for (int i = 0; i < NSCENARIOS; i++)
		b->sc[i].name = scenarios[i].name;
}

static void run_scenarios(struct bench *b)
{
	for (int i = 0; i < NSCENARIOS; i++) {
		struct scenario *sc = &b->sc[i];

		if (!scenarios[i].run || (b->opt.only && !(b->opt.only & (1u << i))))
			continue;
		sc->ran = true;
		scenarios[i].run(b, sc);
		if (!sc->available)
			warnx("%s: not available: %s", sc->name, sc->why);
	}
}

int main(int argc, char **argv)
{
	static struct bench b = {
		.opt = { .size_mib = 1024, .runs = 5, .kill_runs = 1, .timeout_ms = 10000,
			 .overhead_runs = 20, .grace_ms = 1000 },
	};
	static const struct argp argp = { options, parse_opt, "MRELEASE", doc, NULL, NULL, NULL };

	argp_err_exit_status = EXIT_USAGE;
	argp_parse(&argp, argc, argv, 0, NULL, &b.opt);
	kids_init();        /* signals, and the clean-up on every exit */
	prepare(&b);        /* root, mrelease --version, mr-floor, the cgroup mounts, pkill */
	run_scenarios(&b);
	cleanup();          /* every victim reaped, every cgroup removed */
	read_load(b.load_end, sizeof(b.load_end));
	report_text(&b, stdout);
	if (b.opt.json)
		report_json(&b, b.opt.json);
	return EXIT_DONE;
}
