/* main.c: the options, and a run in order: parse, protect, read the pids,
 * resolve the cgroups, run, report. src/run.c does the run; report.c
 * shows it; signals.c holds the signals meanwhile. */
#define _GNU_SOURCE
#include <argp.h>
#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

enum { OPT_NO_RECURSIVE = 0x100, OPT_FORCE, OPT_USAGE };

static const struct argp_option argp_options[] = {
	{ "kill", 'k', NULL, 0, "Send SIGKILL through each pidfd, then release", 1 },
	{ "grace", 'g', "SECONDS", 0,
	  "With --kill, send SIGTERM first and give each target up to SECONDS (0 to 86400, "
	  "e.g. 2.5) to exit by itself", 1 },
	{ "cgroup", 'c', "PATH", 0,
	  "Every process in cgroup PATH and its descendants (v2 or v1; a relative PATH is "
	  "taken under the cgroup2 mount); repeatable", 1 },
	{ "no-recursive", OPT_NO_RECURSIVE, NULL, 0,
	  "With --cgroup, leave out descendant cgroups", 1 },
	{ "force", OPT_FORCE, NULL, 0,
	  "Accept the root of a cgroup hierarchy, and mrelease's own ancestors, as targets", 1 },
	{ "nice", 'n', "N", 0, "Release at nice value N (-20..19)", 2 },
	{ "affinity", 'a', "CPULIST", 0, "Release on these CPUs, e.g. 0,2-3", 2 },
	{ "jobs", 'j', "N", 0, "Release on N threads (default: CPUs in the affinity set)", 2 },
	{ "measure", 'm', "MODE", 0,
	  "Memory figures from smaps (smaps_rollup, the default), status (O(1) counters) "
	  "or none", 3 },
	{ "wait", 'w', "SECONDS", 0,
	  "After releasing, wait up to SECONDS (0 to 86400, e.g. 0.5) for every target to exit", 3 },
	{ "dry-run", 'd', NULL, 0,
	  "Measure and report only; send and release nothing, even with --kill", 3 },
	{ "json", 'J', NULL, 0, "Print one JSON document instead of the table", 4 },
	{ "quiet", 'q', NULL, 0, "Print no report, only errors", 4 },
	{ "verbose", 'v', NULL, 0, "Explain what was decided, fallbacks and retries on stderr", 4 },
	{ "help", 'h', NULL, 0, "Give this help list", -1 },
	{ NULL, '?', NULL, OPTION_ALIAS, NULL, 0 },
	{ "usage", OPT_USAGE, NULL, 0, "Give a short usage message", -1 },
	{ "version", 'V', NULL, 0, "Print program version", -1 },
	{ 0 }
};

static const char doc[] =
	"Free the memory of dying processes now, with process_mrelease(2).\n\n"
	"Each PID is opened as a pidfd and every later act goes through it. A PID of - "
	"reads whitespace-separated PIDs from standard input. Without --kill, only "
	"processes that are already exiting are released. mrelease itself, pid 1 and "
	"kernel threads are never targets; mrelease's ancestors and the root of a cgroup "
	"hierarchy only with --force."
	"\v"
	"Exit status:\n"
	"  0   every target released or gone (with --dry-run: opened)\n"
	"  1   no target released or gone, or no process selected\n"
	"  2   usage error; nothing was done\n"
	"  3   fatal error (after any signal was sent, the report comes first)\n"
	"  64  some targets released or gone, some not\n"
	"With --wait, a target released but still running counts as not done.\n"
	"Interrupted by SIGINT, SIGTERM or SIGHUP, mrelease reports, then dies of it.\n\n"
	"Examples:\n"
	"  kill -9 1234; mrelease 1234          free a killed process that is stuck\n"
	"  mrelease --kill --cgroup system.slice/batch.service\n"
	"  pgrep -f worker | mrelease --kill --json -\n\n"
	"See mrelease(1).";

static void parse_pid_arg(struct argp_state *state, struct mr_options *o, const char *arg)
{
	struct mr_pidspec spec;
	int r;

	if (strcmp(arg, "-") == 0) {
		o->read_stdin = true;
		return;
	}
	if ((r = mr_parse_pidspec(arg, &spec)) && isalpha((unsigned char)arg[0]))
		argp_error(state, "'%s': not a valid pid; to select processes by name, use: "
			   "pgrep %s | mrelease%s -", arg, arg, o->cfg.kill ? " --kill" : "");
	if (r)
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

static unsigned int parse_seconds(struct argp_state *state, const char *opt, const char *arg)
{
	unsigned int ms;

	if (mr_parse_seconds(arg, MR_SECONDS_MAX, &ms))
		argp_error(state, "%s '%s': expected seconds from 0 to %d, such as 5 or 0.5", opt,
			   arg, MR_SECONDS_MAX);
	return ms;
}

static void parse_affinity(struct argp_state *state, struct mr_sched *s, const char *arg)
{
	cpu_set_t online, both;
	int r;

	if (mr_parse_cpulist(arg, &s->cpus))
		argp_error(state, "--affinity '%s': not a CPU list such as 0,2-3", arg);
	if ((r = mr_cpus_online(&online))) {
		errno = -r;
		err(MR_EXIT_FATAL, "/sys/devices/system/cpu/online");
	}
	CPU_AND(&both, &s->cpus, &online);
	if (!CPU_EQUAL(&both, &s->cpus))
		argp_error(state, "--affinity '%s': names a CPU that is not online", arg);
	s->set_affinity = true;
}

static void parse_measure(struct argp_state *state, struct mr_config *cfg, const char *arg)
{
	if (strcmp(arg, "smaps") == 0)
		cfg->measure = MR_MEASURE_SMAPS;
	else if (strcmp(arg, "status") == 0)
		cfg->measure = MR_MEASURE_STATUS;
	else if (strcmp(arg, "none") == 0)
		cfg->measure = MR_MEASURE_NONE;
	else
		argp_error(state, "--measure '%s': expected smaps, status or none", arg);
}

static void check_options(struct argp_state *state, const struct mr_options *o)
{
	if (o->pids.len == 0 && !o->read_stdin && o->ncgroups == 0)
		argp_error(state, "no PID or --cgroup given");
	if (o->json && o->quiet)
		argp_error(state, "--json and --quiet contradict each other");
	if (o->cfg.grace && !o->cfg.kill)
		argp_error(state, "--grace needs --kill: without it nothing is sent");
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct mr_options *o = state->input;
	struct mr_config *cfg = &o->cfg;

	switch (key) {
	case 'k': cfg->kill = true; break;
	case 'g':
		cfg->grace_ms = parse_seconds(state, "--grace", arg);
		cfg->grace = true;
		break;
	case 'c': {
		const char **c = reallocarray(o->cgroups, o->ncgroups + 1, sizeof(*c));

		if (!c)
			err(MR_EXIT_FATAL, "cgroup list");
		o->cgroups = c;
		o->cgroups[o->ncgroups++] = arg;
		break;
	}
	case OPT_NO_RECURSIVE: cfg->recursive = false; break;
	case OPT_FORCE: cfg->force = true; break;
	case 'n':
		cfg->sched.nice = (int)parse_number(state, "--nice", arg, -20, 19);
		cfg->sched.set_nice = true;
		break;
	case 'a': parse_affinity(state, &cfg->sched, arg); break;
	case 'j': cfg->jobs = (unsigned int)parse_number(state, "--jobs", arg, 1, 1024); break;
	case 'm': parse_measure(state, cfg, arg); break;
	case 'w':
		cfg->wait_ms = parse_seconds(state, "--wait", arg);
		cfg->wait = true;
		break;
	case 'd': cfg->dry_run = true; break;
	case 'J': o->json = true; break;
	case 'q': o->quiet = true; break;
	case 'v': o->verbose = true; break;
	case 'h':
	case '?': argp_state_help(state, stdout, ARGP_HELP_STD_HELP); break;
	case OPT_USAGE: argp_state_help(state, stdout, ARGP_HELP_USAGE | ARGP_HELP_EXIT_OK); break;
	case 'V': printf("mrelease %s\n", MR_VERSION); exit(MR_EXIT_OK);
	case ARGP_KEY_ARG: parse_pid_arg(state, o, arg); break;
	case ARGP_KEY_END: check_options(state, o); break;
	default: return ARGP_ERR_UNKNOWN;
	}
	return 0;
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

/* "cgroup2", or "cgroup v1 cpu,cpuacct" from a v1 mount's super options
 * less rw and ro ("name=systemd" shown as "systemd"). */
static const char *hierarchy(const struct mr_cgroup *cg, char *buf, size_t len)
{
	char list[256] = "", *copy, *tok, *save = NULL;

	if (cg->v2)
		return "cgroup2";
	if (!(copy = strdup(cg->controllers)))
		return "cgroup v1";
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "rw") == 0 || strcmp(tok, "ro") == 0)
			continue;
		if (strncmp(tok, "name=", 5) == 0)
			tok += 5;
		if (*list)
			strncat(list, ",", sizeof(list) - strlen(list) - 1);
		strncat(list, tok, sizeof(list) - strlen(list) - 1);
	}
	free(copy);
	snprintf(buf, len, "cgroup v1 %s", list);
	return buf;
}

/* Every --cgroup, resolved; a root is refused without --force, even for a
 * dry run: it selects every process of the system. */
static void resolve_cgroups(const struct mr_options *o, struct mr_run *run)
{
	char tried[4096], name[256], mountinfo[4096];
	int r;

	if (!o->ncgroups)
		return;
	snprintf(mountinfo, sizeof(mountinfo), "%s/self/mountinfo", run->cfg.proc);
	if ((r = mr_cgmounts_read(&run->mounts, mountinfo))) {
		errno = -r;
		err(MR_EXIT_FATAL, "%s", mountinfo);
	}
	run->cgroups = calloc(o->ncgroups, sizeof(*run->cgroups));
	if (!run->cgroups)
		err(MR_EXIT_FATAL, "cgroup list");
	for (size_t i = 0; i < o->ncgroups; i++) {
		const char *arg = o->cgroups[i];
		struct mr_cgroup *cg = &run->cgroups[i];

		r = mr_cgroup_resolve(&run->mounts, arg, cg, tried, sizeof(tried));
		if (r == -ENOENT && !mr_cgmounts_v2(&run->mounts))
			errx(MR_EXIT_USAGE, "cgroup '%s': no such cgroup, and no cgroup2 mount to "
			     "look for it under", arg);
		if (r == -ENOENT)
			errx(MR_EXIT_USAGE, "cgroup '%s': no such cgroup: %s", arg, tried);
		if (r == -EINVAL)
			errx(MR_EXIT_USAGE, "cgroup '%s': '..' is not accepted", arg);
		if (r == -EXDEV)
			errx(MR_EXIT_USAGE, "cgroup '%s': %s is not inside a cgroup file system", arg,
			     tried);
		if (r == -EMEDIUMTYPE)
			errx(MR_EXIT_USAGE, "cgroup '%s': %s is not a cgroup directory", arg, tried);
		if (r) {
			errno = -r;
			err(MR_EXIT_USAGE, "cgroup '%s': %s", arg, tried);
		}
		run->ncgroups++;
		if (cg->root && !o->cfg.force)
			errx(MR_EXIT_USAGE, "cgroup '%s' is %s, the root of the %s hierarchy: it holds "
			     "every process of the system; refusing it without --force", arg,
			     cg->path, hierarchy(cg, name, sizeof(name)));
	}
}

static void report(const struct mr_options *o, const struct mr_run *run)
{
	mr_report_diagnostics(run, o->verbose);
	if (o->json)
		mr_report_json(stdout, run);
	else if (!o->quiet)
		mr_report_text(stdout, run);
	if (fflush(stdout) == EOF || ferror(stdout))
		warn("standard output");
}

static int exit_status(const struct mr_run *run, int r)
{
	size_t done = 0;

	if (r || ferror(stdout) || ferror(stderr))
		return MR_EXIT_FATAL;
	for (size_t i = 0; i < run->ntargets; i++)
		done += mr_target_done(&run->targets[i]);
	if (done == run->ntargets && done)
		return MR_EXIT_OK;
	return done == 0 ? MR_EXIT_NONE : MR_EXIT_PARTIAL;
}

int main(int argc, char **argv)
{
	struct mr_options o = {
		.cfg = {
			.recursive = true,
			.measure = MR_MEASURE_SMAPS,
			.wait_ms = 10000,
			.start_us = mr_now_us(),
		},
	};
	struct argp argp = { argp_options, parse_opt, "PID...", doc, NULL, NULL, NULL };
	struct mr_run run;
	int r, status;

	argp_err_exit_status = MR_EXIT_USAGE;
	/* getopt names the program by argv[0]; say "mrelease" as err(3) does. */
	argv[0] = program_invocation_short_name;
	argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, &o);
	mr_protect_self();
	read_stdin_pids(&o);
	mr_run_init(&run, &o.cfg);
	resolve_cgroups(&o, &run);
	mr_hold_signals(&run.cfg.waitmask);

	r = mr_run(&run, &o.pids);
	if (r && !run.sent) {
		errno = -r;
		err(MR_EXIT_FATAL, "%s", run.fatal);
	}
	report(&o, &run);
	if (r)
		warnx("%s: %s; reported what was done", run.fatal, strerror(-r));
	status = exit_status(&run, r);
	mr_release_signals(run.interrupted);
	mr_run_free(&run);
	mr_pidlist_free(&o.pids);
	free(o.cgroups);
	return status;
}
