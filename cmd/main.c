/* main.c: the options, and a run in order: select, measure, act, report.
 * select.c chooses the targets, act.c releases them, report.c shows them. */
#define _GNU_SOURCE
#include <argp.h>
#include <sys/resource.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

enum { OPT_NO_RECURSIVE = 0x100 };

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

static void parse_pid_arg(struct argp_state *state, struct mr_options *o, const char *arg)
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

static void parse_affinity(struct argp_state *state, struct mr_options *o, const char *arg)
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
	struct mr_options *o = state->input;

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

static void read_stdin_pids(struct mr_options *o)
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

static void report(const struct mr_options *o, const struct mr_run *run)
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
	struct mr_options o = {
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
	mr_resolve_cgroups(&o, &run);
	raise_fd_limit();
	if ((r = mr_procinfo_new(&pi, o.measure))) {
		errno = -r;
		err(MR_EXIT_FATAL, "libproc2");
	}
	run.measure = o.measure;
	run.dry_run = o.dry_run;

	mr_select_targets(&o, pi, &run);
	mr_measure_targets(pi, &run, 0);
	mr_measure_cgroups(&run, false);
	mr_mem_available_kb(&run.mem_available_before_kb);
	mr_act(&o, pi, &run);
	mr_measure_after(pi, &run);
	mr_measure_cgroups(&run, true);
	if (!o.dry_run)
		mr_mem_available_kb(&run.mem_available_after_kb);
	report(&o, &run);
	mr_release_signals();

	r = exit_status(&run);
	mr_procinfo_free(pi);
	mr_free_run(&run);
	mr_pidlist_free(&o.pids);
	free(o.cgroups);
	return r;
}
