/* main.c: the options, and a run in order: refuse a privileged exec, parse,
 * protect, read the pids, resolve the cgroups, run, report. src/run.c does
 * the run; report.c shows it; signals.c holds the signals meanwhile. */
#define _GNU_SOURCE
#include <argp.h>
#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

enum { OPT_NO_RECURSIVE = 0x100, OPT_FORCE, OPT_USAGE, OPT_DYING, OPT_FOLLOW, OPT_PRESSURE,
       OPT_INTERVAL, OPT_NO_SIGNALS, OPT_NO_PRESSURE, OPT_SETTLE, OPT_METRICS };

static const struct argp_option argp_options[] = {
	{ "kill", 'k', NULL, 0, "Send SIGKILL through each pidfd (a v2 cgroup: cgroup.kill), "
	  "then release", 1 },
	{ "grace", 'g', "SECONDS", 0,
	  "With --kill, send SIGTERM (or --signal) first and give the targets up to SECONDS "
	  "(0 to 86400, at most three decimals, e.g. 2.5) to exit by themselves", 1 },
	{ "signal", 's', "SIG", 0, "With --grace, the first signal, by name or number as kill -l "
	  "writes it (default TERM)", 1 },
	{ "cgroup", 'c', "PATH", 0,
	  "Every process in cgroup PATH and its descendants (v2 or v1; ./x and ../x from the "
	  "working directory; other relative and /x paths under the cgroup2 mount; a line of "
	  "/proc/PID/cgroup); repeatable", 1 },
	{ "unit", 'u', "NAME", 0, "The cgroup of the system manager's unit NAME (foo.service, "
	  "bar.scope, baz.slice; foo alone is foo.service), in the root or a slice of the cgroup2 "
	  "mount; repeatable", 1 },
	{ "dying", OPT_DYING, NULL, 0, "Release every process that is already dying (with "
	  "--cgroup or --unit: in those cgroups); nothing is sent", 1 },
	{ "no-recursive", OPT_NO_RECURSIVE, NULL, 0,
	  "With --cgroup or --unit, leave out descendant cgroups", 1 },
	{ "force", OPT_FORCE, NULL, OPTION_HIDDEN, NULL, 1 },
	{ "nice", 'n', "N", 0, "Release at nice value N (-20..19) if permitted", 2 },
	{ "affinity", 'a', "CPULIST", 0, "Release on these CPUs (e.g. 0,2-3) if permitted", 2 },
	{ "jobs", 'j', "N", 0, "Release on N threads (default: CPUs in the affinity set)", 2 },
	{ "measure", 'm', "MODE", 0,
	  "Memory figures from status (O(1) counters, the default), smaps (smaps_rollup: PSS, "
	  "anonymous, swap; walks the page tables) or none", 3 },
	{ "wait", 'w', "SECONDS", 0,
	  "After releasing, wait up to SECONDS (0 to 86400, e.g. 0.5) for every target to exit", 3 },
	{ "dry-run", 'd', NULL, 0,
	  "Send and release nothing; report what the run would do, and exit as it would (not "
	  "with --wait)", 3 },
	{ "json", 'J', NULL, 0, "Print one JSON document instead of the table", 4 },
	{ "quiet", 'q', NULL, 0, "Print no report, only errors", 4 },
	{ "verbose", 'v', NULL, 0, "Explain what was decided, fallbacks and retries on stderr", 4 },
	{ "follow", OPT_FOLLOW, NULL, 0, "Run as a service: release each process killed on the "
	  "host (by whoever) as it dies, and every dying process at each rise of memory pressure "
	  "(or --interval), as --dying does; never send a signal; end on SIGINT, SIGTERM or "
	  "SIGHUP with the totals", 5 },
	{ "settle", OPT_SETTLE, "SECONDS", 0, "With --follow, release a process whose exit may still "
	  "need its memory (to mark robust locks it holds) only once it has been dying SECONDS "
	  "(0 to 86400; default 2, as the kernel's OOM reaper; 0: every one at once)", 5 },
	{ "pressure", OPT_PRESSURE, "SPEC", 0, "With --follow, the trigger: 'some|full STALL_US "
	  "WINDOW_US' (default 'some 200000 2000000': tasks stalled on memory 200 ms within 2 s)",
	  5 },
	{ "interval", OPT_INTERVAL, "SECONDS", 0, "With --follow, also sweep every SECONDS (0.001 "
	  "to 86400), on a timer", 5 },
	{ "no-signals", OPT_NO_SIGNALS, NULL, 0, "With --follow, do not watch for SIGKILLs", 5 },
	{ "no-pressure", OPT_NO_PRESSURE, NULL, 0, "With --follow, do not wake on memory pressure",
	  5 },
	{ "metrics", OPT_METRICS, "FILE", 0, "With --follow, keep FILE up to date with its counters "
	  "in Prometheus's text format (for node_exporter's textfile collector)", 5 },
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
	"processes that are already exiting are released, and nothing is sent. Never "
	"killed: pid 1, mrelease itself, its ancestors, kernel threads; never killed at "
	"all: a cgroup that holds mrelease or an ancestor, or the root of a cgroup "
	"hierarchy."
	"\v"
	"Exit status:\n"
	"  0   every target released or gone (with --dry-run: would be)\n"
	"  1   no target released or gone, or no process selected\n"
	"  2   usage error, a cgroup refused, or a /proc of another pid namespace;\n"
	"      nothing was done (or, refused once the run had begun, nothing more)\n"
	"  3   fatal error (after any signal was sent, the report comes first)\n"
	"  64  some targets released or gone, some not (or a cgroup not emptied)\n"
	"With --wait, a target released but still running counts as not done.\n"
	"With --follow: 0 when SIGINT, SIGTERM or SIGHUP ended it, 1 when a cgroup\n"
	"it follows was removed, 2 usage, 3 fatal.\n"
	"Interrupted by SIGINT, SIGTERM or SIGHUP, mrelease sends nothing more,\n"
	"reports, then dies of that signal.\n\n"
	"Examples:\n"
	"  kill -9 1234; mrelease 1234          free a killed process that is stuck\n"
	"  mrelease --dying                     free every process already dying\n"
	"  mrelease --kill --unit batch.service\n"
	"  mrelease --follow --json             a service: release what others kill\n"
	"  pgrep -f worker | mrelease --kill --json -\n\n"
	"See mrelease(1).";

/* Each whitespace-separated word of arg: "$(pgrep x)" is one argument. */
static void parse_pid_arg(struct argp_state *state, struct mr_options *o, const char *arg)
{
	const char *p = arg + strspn(arg, " \t\n");
	struct mr_pidspec spec = { 0 };
	char word[64];
	int r;

	o->pid_args = true;
	if (strcmp(arg, "-") == 0) {
		o->read_stdin = true;
		return;
	}
	/* "" or blanks, as "$(pgrep x)" gives when nothing matched: no pid,
	 * as an empty standard input is. */
	for (size_t len; *p; p += len, p += strspn(p, " \t\n")) {
		len = strcspn(p, " \t\n");
		snprintf(word, sizeof(word), "%.*s", (int)len, p);
		if ((r = len < sizeof(word) ? mr_parse_pidspec(word, &spec) : -ERANGE) &&
		    isalpha((unsigned char)word[0]))
			argp_error(state, "'%s': not a valid pid; to select processes by name, use: "
				   "pgrep %s | mrelease%s -", mr_safe(word), mr_safe(word),
				   o->cfg.kill ? " --kill" : "");
		if (r)
			argp_error(state, "'%s': not a valid pid (1..%d, or PID:INODE)", mr_safe(word),
				   MR_PID_MAX);
		if ((r = mr_pidlist_add(&o->pids, spec)) == -ENOSPC)
			argp_error(state, "more than %d pids", MR_PID_MAX);
		if (r)
			err(MR_EXIT_FATAL, "pid list");
	}
}

static long parse_number(struct argp_state *state, const char *opt, const char *arg,
			 long min, long max)
{
	long v;

	if (mr_parse_long(arg, min, max, &v))
		argp_error(state, "%s '%s': expected a whole number from %ld to %ld", opt,
			   mr_safe(arg), min, max);
	return v;
}

/* Seconds, from min_ms (0 or 1) to MR_SECONDS_MAX, at most three decimals. */
static unsigned int parse_seconds(struct argp_state *state, const char *opt, const char *arg,
				  unsigned int min_ms)
{
	unsigned int ms;
	int r = mr_parse_seconds(arg, MR_SECONDS_MAX, &ms);

	if (r == -EDOM)
		argp_error(state, "%s '%s': at most three decimals (milliseconds), such as 0.001",
			   opt, mr_safe(arg));
	if (r || ms < min_ms)
		argp_error(state, "%s '%s': expected seconds from %s to %d, such as 5 or 0.5", opt,
			   mr_safe(arg), min_ms ? "0.001" : "0", MR_SECONDS_MAX);
	return ms;
}

static void parse_pressure(struct argp_state *state, struct mr_options *o, const char *arg)
{
	int r = mr_parse_pressure(arg, &o->pressure);

	if (r == -ERANGE)
		argp_error(state, "--pressure '%s': the kernel takes a window of 500000 to 10000000 us "
			   "and a stall above 0 and no longer than the window", mr_safe(arg));
	if (r)
		argp_error(state, "--pressure '%s': expected some or full, a stall and a window in "
			   "microseconds, such as 'some 150000 2000000'", mr_safe(arg));
	o->pressure_set = true;
}

static void parse_affinity(struct argp_state *state, struct mr_sched *s, const char *arg)
{
	cpu_set_t online, both;
	int r;

	if (mr_parse_cpulist(arg, &s->cpus))
		argp_error(state, "--affinity '%s': not a CPU list such as 0,2-3", mr_safe(arg));
	if ((r = mr_cpus_online(&online))) {
		errno = -r;
		err(MR_EXIT_FATAL, "/sys/devices/system/cpu/online");
	}
	CPU_AND(&both, &s->cpus, &online);
	if (!CPU_EQUAL(&both, &s->cpus))
		argp_error(state, "--affinity '%s': names a CPU that is not online", mr_safe(arg));
	s->set_affinity = true;
}

static void parse_measure(struct argp_state *state, struct mr_config *cfg, const char *arg)
{
	if (strcmp(arg, "status") == 0)
		cfg->measure = MR_MEASURE_STATUS;
	else if (strcmp(arg, "smaps") == 0)
		cfg->measure = MR_MEASURE_SMAPS;
	else if (strcmp(arg, "none") == 0)
		cfg->measure = MR_MEASURE_NONE;
	else
		argp_error(state, "--measure '%s': expected status, smaps or none", mr_safe(arg));
}

static void add_name(const char ***v, size_t *n, const char *arg)
{
	const char **w = reallocarray(*v, *n + 1, sizeof(*w));

	if (!w)
		err(MR_EXIT_FATAL, "option list");
	*v = w;
	w[(*n)++] = arg;
}

static void check_options(struct argp_state *state, const struct mr_options *o)
{
	bool pids = o->pid_args, groups = o->ncgroups || o->nunits;

	if (!pids && !groups && !o->cfg.dying && !o->follow)
		argp_error(state, "no PID, --cgroup, --unit or --dying given");
	if (o->follow && (o->cfg.kill || o->cfg.grace || o->signal_set))
		argp_error(state, "--follow never sends a signal: it releases what others killed; "
			   "--kill, --grace and --signal cannot go with it");
	if (o->follow && o->cfg.wait)
		argp_error(state, "--follow never waits for an exit: one stuck process would hold "
			   "every sweep after it; leave --wait out (a release that does not return is "
			   "left behind after 1 s)");
	if (o->follow && pids)
		argp_error(state, "--follow finds the dying itself; give no PID (narrow it with "
			   "--cgroup or --unit)");
	if (!o->follow && (o->pressure_set || o->interval_ms || o->no_signals || o->no_pressure ||
			   o->settle_set || o->metrics))
		argp_error(state, "--pressure, --interval, --settle, --no-signals, --no-pressure and "
			   "--metrics go with --follow");
	if (o->no_pressure && o->pressure_set)
		argp_error(state, "--no-pressure and --pressure contradict each other");
	if (o->metrics && !*o->metrics)
		argp_error(state, "--metrics '': expected a file name");
	if (o->json && o->quiet)
		argp_error(state, "--json and --quiet contradict each other");
	if (o->cfg.grace && !o->cfg.kill)
		argp_error(state, "--grace needs --kill: without it nothing is sent");
	if (o->signal_set && !o->cfg.grace)
		argp_error(state, "--signal needs --grace: it is the signal sent before the grace");
	if (o->signal_set && (o->cfg.first_signal == SIGSTOP || o->cfg.first_signal == SIGTSTP ||
			      o->cfg.first_signal == SIGTTIN || o->cfg.first_signal == SIGTTOU))
		argp_error(state, "--signal %s stops the targets instead of asking them to exit: a run "
			   "interrupted in the grace would leave them stopped; use TERM, INT, QUIT or HUP",
			   mr_signal_name(o->cfg.first_signal));
	if (o->cfg.dry_run && o->cfg.wait)
		argp_error(state, "--dry-run cannot tell whether the targets would exit within --wait, "
			   "which only waiting shows; leave --wait out of the dry run");
	if (o->cfg.dying && o->cfg.kill)
		argp_error(state, "--dying releases what is dying and sends nothing; it cannot "
			   "go with --kill");
	if (o->cfg.dying && pids)
		argp_error(state, "--dying selects the processes itself; give no PID (narrow it "
			   "with --cgroup or --unit)");
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct mr_options *o = state->input;
	struct mr_config *cfg = &o->cfg;

	switch (key) {
	case 'k': cfg->kill = true; break;
	case 'g':
		cfg->grace_ms = parse_seconds(state, "--grace", arg, 0);
		cfg->grace = true;
		break;
	case 's':
		if (mr_parse_signal(arg, &cfg->first_signal))
			argp_error(state, "--signal '%s': not a signal such as TERM, INT, QUIT or 15 "
				   "(see kill -l)", mr_safe(arg));
		o->signal_set = true;
		break;
	case 'c': add_name(&o->cgroups, &o->ncgroups, arg); break;
	case 'u': add_name(&o->units, &o->nunits, arg); break;
	case OPT_DYING: cfg->dying = true; break;
	case OPT_FOLLOW: o->follow = cfg->dying = true; break;
	case OPT_PRESSURE: parse_pressure(state, o, arg); break;
	case OPT_NO_SIGNALS: o->no_signals = true; break;
	case OPT_NO_PRESSURE: o->no_pressure = true; break;
	case OPT_SETTLE:
		o->settle_ms = parse_seconds(state, "--settle", arg, 0);
		o->settle_set = true;
		break;
	case OPT_METRICS: o->metrics = arg; break;
	case OPT_INTERVAL:
		o->interval_ms = parse_seconds(state, "--interval", arg, 1);
		break;
	case OPT_NO_RECURSIVE: cfg->recursive = false; break;
	case OPT_FORCE:
		argp_error(state, "--force is gone (0.3.0): the root of a cgroup hierarchy, and "
			   "a cgroup that holds mrelease or an ancestor of it, are always refused; "
			   "see 'What mrelease never touches' in mrelease(1)");
		break;
	case 'n':
		cfg->sched.nice = (int)parse_number(state, "--nice", arg, -20, 19);
		cfg->sched.set_nice = true;
		break;
	case 'a': parse_affinity(state, &cfg->sched, arg); break;
	case 'j': cfg->jobs = (unsigned int)parse_number(state, "--jobs", arg, 1, 1024); break;
	case 'm': parse_measure(state, cfg, arg); break;
	case 'w':
		cfg->wait_ms = parse_seconds(state, "--wait", arg, 0);
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

/* Set-user-ID, set-group-ID or file capabilities: the kernel marks the exec
 * secure, and whoever runs it would borrow its power to kill. */
static void refuse_secure_exec(void)
{
	if (getauxval(AT_SECURE))
		errx(MR_EXIT_USAGE, "refusing to run set-user-ID, set-group-ID or with file "
		     "capabilities: it would let anyone kill any process; run it as root, e.g. "
		     "with sudo");
}

/* What mrelease reads in /proc must be the processes it signals: a /proc
 * of another pid namespace numbers other processes with the same pids. */
static void check_proc(const char *proc)
{
	static const char what_to_do[] = "what it reads there are not the processes it would "
		"signal; refusing to run; mount a /proc for this pid namespace (unshare --pid "
		"--fork --mount-proc, or mount -t proc proc /proc in a mount namespace of its own)";
	pid_t seen;
	int r = mr_proc_own(proc, &seen);

	if (r == -EXDEV && seen)
		errx(MR_EXIT_USAGE, "%s belongs to another pid namespace (%s/self names pid %d; "
		     "mrelease is pid %d): %s", proc, proc, (int)seen, (int)getpid(), what_to_do);
	if (r == -EXDEV)
		errx(MR_EXIT_USAGE, "%s belongs to another pid namespace (it does not show "
		     "mrelease itself): %s", proc, what_to_do);
	if (r == -ENODEV)
		errx(MR_EXIT_USAGE, "%s is not a proc file system: mrelease reads the processes "
		     "there; mount it (mount -t proc proc %s)", proc, proc);
	if (r) {
		errno = -r;
		err(MR_EXIT_USAGE, "%s/self: mrelease needs the /proc of its pid namespace", proc);
	}
}

static void read_stdin_pids(struct mr_options *o)
{
	char bad[32]; /* the longest word taken, 31 characters */
	int r;

	if (!o->read_stdin)
		return;
	r = mr_pidlist_read(&o->pids, stdin, true, bad, sizeof(bad));
	if (r == -EINVAL || r == -ERANGE || r == -EILSEQ || r == -E2BIG)
		errx(MR_EXIT_USAGE, "standard input: '%s%s': not a valid pid (1..%d, or PID:INODE)",
		     mr_safe(bad), r == -EILSEQ ? "\\0..." : r == -E2BIG ? "..." : "", MR_PID_MAX);
	if (r == -ENOSPC)
		errx(MR_EXIT_USAGE, "standard input: more than %d pids", MR_PID_MAX);
	if (r) {
		errno = -r;
		err(MR_EXIT_FATAL, "standard input");
	}
}

/* A pid named twice with two different guards: which was meant cannot be
 * told, whatever the order. */
static void check_pids(struct mr_options *o)
{
	struct mr_pidspec a, b;
	char x[48], y[48];

	if (!mr_pidlist_check(&o->pids, &a, &b))
		return;
	snprintf(x, sizeof(x), a.ino ? "%d:%llu" : "%d", (int)a.pid, (unsigned long long)a.ino);
	snprintf(y, sizeof(y), "%d:%llu", (int)b.pid, (unsigned long long)b.ino);
	errx(MR_EXIT_USAGE, "pid %d is named as %s and as %s: name it once, with the inode it "
	     "must have or without one", (int)a.pid, x, y);
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

static void add_cgroup(struct mr_run *run, const char *what, const char *arg, const char *path)
{
	char tried[4096], other[4096], name[256];
	struct mr_cgroup *cg;
	int r;

	cg = reallocarray(run->cgroups, run->ncgroups + 1, sizeof(*cg));
	if (!cg)
		err(MR_EXIT_FATAL, "cgroup list");
	run->cgroups = cg;
	cg = &cg[run->ncgroups];
	r = mr_cgroup_resolve(&run->mounts, path, cg, tried, sizeof(tried), other, sizeof(other));
	if (r == -ENOENT && !mr_cgmounts_v2(&run->mounts))
		errx(MR_EXIT_USAGE, "%s '%s': no such cgroup, and no cgroup2 mount to look for it "
		     "under", what, mr_safe(arg));
	if (r == -ENOENT && *other)
		errx(MR_EXIT_USAGE, "%s '%s': not a cgroup; did you mean %s?", what, mr_safe(arg),
		     mr_safe(other));
	if (r == -ENOENT)
		errx(MR_EXIT_USAGE, "%s '%s': no such cgroup: %s", what, mr_safe(arg), mr_safe(tried));
	if (r == -EXDEV)
		errx(MR_EXIT_USAGE, "%s '%s': %s is not in a cgroup file system", what, mr_safe(arg),
		     mr_safe(tried));
	if (r == -EMEDIUMTYPE || r == -ENOTDIR)
		errx(MR_EXIT_USAGE, "%s '%s': %s is not a cgroup directory", what, mr_safe(arg),
		     mr_safe(tried));
	if (r == -ENOTUNIQ)
		errx(MR_EXIT_USAGE, "%s '%s' is ambiguous: %s below the working directory, or %s "
		     "under the cgroup2 mount; write ./%s or /%s", what, mr_safe(arg),
		     mr_safe(tried), mr_safe(other), mr_safe(arg), mr_safe(arg));
	if (r) {
		errno = -r;
		err(MR_EXIT_USAGE, "%s '%s': %s", what, mr_safe(arg), mr_safe(tried));
	}
	run->ncgroups++;
	if (cg->root)
		errx(MR_EXIT_USAGE, "%s '%s' is %s, the root of the %s hierarchy: it holds every "
		     "process of the system; refusing it (to release every dying process, use "
		     "--dying alone)", what, mr_safe(arg), mr_safe(cg->path),
		     hierarchy(cg, name, sizeof(name)));
}

/* The unit types that have a cgroup of their own. */
static const char *const cgroup_units[] = { "service", "scope", "slice", "socket", "mount", "swap" };
static const char *const other_units[] = { "target", "timer", "path", "device", "automount" };

/* name, or with no unit suffix name.service, as systemctl takes it. */
static const char *unit_name(const char *name, char *buf, size_t len)
{
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < MR_NELEMS(cgroup_units); i++)
		if (strcmp(dot + 1, cgroup_units[i]) == 0)
			return name;
	for (size_t i = 0; dot && i < MR_NELEMS(other_units); i++)
		if (strcmp(dot + 1, other_units[i]) == 0)
			errx(MR_EXIT_USAGE, "unit '%s': a %s unit has no cgroup of its own; name the "
			     "unit it starts, such as %.*s.service", mr_safe(name), other_units[i],
			     (int)(dot - name), mr_safe(name));
	if (snprintf(buf, len, "%s.service", name) >= (int)len)
		errx(MR_EXIT_USAGE, "unit '%s': not a unit name such as foo.service", mr_safe(name));
	return buf;
}

/* A unit's cgroup: the one directory of that name among the system
 * manager's units under the cgroup2 mount. */
static void add_unit(struct mr_run *run, const char *arg, bool verbose)
{
	char **paths, list[1024] = "", buf[256];
	const char *name;
	size_t n;
	int r;

	if (!*arg || strchr(arg, '/') || strcmp(arg, ".") == 0 || strcmp(arg, "..") == 0)
		errx(MR_EXIT_USAGE, "unit '%s': not a unit name such as foo.service", mr_safe(arg));
	name = unit_name(arg, buf, sizeof(buf));
	if ((r = mr_cgroup_units(&run->mounts, name, &paths, &n)) == -ENOENT)
		errx(MR_EXIT_USAGE, "unit '%s': no cgroup2 mount to look for it under", mr_safe(name));
	if (r) {
		errno = -r;
		err(MR_EXIT_FATAL, "unit '%s'", mr_safe(name));
	}
	if (n == 0)
		errx(MR_EXIT_USAGE, "unit '%s': no cgroup of that name in the root or the slices under "
		     "%s: is it running? (a user's or a container's unit: name its cgroup with "
		     "--cgroup)", mr_safe(name), mr_safe(mr_cgmounts_v2(&run->mounts)->path));
	for (size_t i = 0; i < n && n > 1; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 mr_safe(paths[i]));
	if (n > 1)
		errx(MR_EXIT_USAGE, "unit '%s': %zu cgroups have that name: %s; name one with "
		     "--cgroup", mr_safe(name), n, list);
	if (verbose)
		warnx("unit %s: cgroup %s", mr_safe(name), mr_safe(paths[0]));
	add_cgroup(run, "unit", name, paths[0]);
	free(paths[0]);
	free(paths);
}

/* Every --cgroup and --unit, resolved; a hierarchy's root is refused, even
 * for a dry run: it selects every process of the system. */
static void resolve_cgroups(const struct mr_options *o, struct mr_run *run)
{
	char mountinfo[4096];
	int r;

	if (!o->ncgroups && !o->nunits)
		return;
	snprintf(mountinfo, sizeof(mountinfo), "%s/self/mountinfo", run->cfg.proc);
	if ((r = mr_cgmounts_read(&run->mounts, mountinfo))) {
		errno = -r;
		err(MR_EXIT_FATAL, "%s", mountinfo);
	}
	for (size_t i = 0; i < o->ncgroups; i++)
		add_cgroup(run, "cgroup", o->cgroups[i], o->cgroups[i]);
	for (size_t i = 0; i < o->nunits; i++)
		add_unit(run, o->units[i], o->verbose);
}

static void report(const struct mr_options *o, const struct mr_run *run)
{
	if (o->stdout_closed && !o->quiet)
		warnx("standard output was closed: the report went nowhere");
	mr_report_diagnostics(run, o->verbose);
	if (o->json)
		mr_report_json(stdout, run);
	else if (!o->quiet && mr_selected(run))
		mr_report_text(stdout, run);
	if (fflush(stdout) == EOF || ferror(stdout))
		warn("standard output");
}

/* Done and not done, over the targets and the cgroups killed until empty
 * that were not emptied. */
static int exit_status(const struct mr_options *o, const struct mr_run *run, int r)
{
	size_t done = 0, all = mr_selected(run);

	if (run->refused.what)
		return MR_EXIT_USAGE;
	if (r || ferror(stdout) || ferror(stderr) || (o->stdout_closed && !o->quiet))
		return MR_EXIT_FATAL;
	for (size_t i = 0; i < run->ntargets; i++)
		done += mr_target_done(&run->targets[i]);
	for (size_t c = 0; c < run->ncgroups; c++)
		all += run->cgroups[c].kill && !run->cgroups[c].killed && !run->interrupted;
	if (all && done == all)
		return MR_EXIT_OK;
	return done == 0 ? MR_EXIT_NONE : MR_EXIT_PARTIAL;
}

int main(int argc, char **argv)
{
	struct mr_options o = {
		.pressure = { .full = false, .stall_us = 200000, .window_us = 2000000 },
		.settle_ms = 2000,
		.cfg = {
			.recursive = true,
			.first_signal = SIGTERM,
			.measure = MR_MEASURE_STATUS,
			.wait_ms = 10000,
			.start_us = mr_now_us(),
			.proc = "/proc",
		},
	};
	struct argp argp = { argp_options, parse_opt, "[PID...]", doc, NULL, NULL, NULL };
	struct mr_run run;
	int r, status;

	/* Closed, they would be taken by the first descriptors opened. */
	if ((r = mr_std_fds()) < 0)
		exit(MR_EXIT_FATAL);
	o.stdout_closed = r & (1 << STDOUT_FILENO);
	refuse_secure_exec();
	argp_err_exit_status = MR_EXIT_USAGE;
	/* getopt names the program by argv[0]; say "mrelease" as err(3) does. */
	argv[0] = program_invocation_short_name;
	argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, &o);
	check_proc(o.cfg.proc);
	mr_protect_self();
	mr_fd_raise();
	read_stdin_pids(&o);
	check_pids(&o);
	mr_run_init(&run, &o.cfg);
	resolve_cgroups(&o, &run);
	mr_hold_signals(&run.cfg.waitmask);
	if (o.follow) {
		status = mr_follow(&o, &run);
		goto out;
	}

	r = mr_run(&run, &o.pids);
	if (run.refused.what && !run.sent) {
		mr_report_refusal(&run);
		exit(MR_EXIT_USAGE);
	}
	if (r == -ECANCELED)
		r = 0;
	if (r && !run.sent) {
		errno = -r;
		err(MR_EXIT_FATAL, "%s", mr_safe(run.fatal));
	}
	report(&o, &run);
	mr_report_refusal(&run);
	if (r)
		warnx("%s: %s; reported what was done", mr_safe(run.fatal), strerror(-r));
	status = exit_status(&o, &run, r);
	mr_release_signals(run.interrupted);
out:
	mr_run_free(&run);
	mr_pidlist_free(&o.pids);
	free(o.cgroups);
	free(o.units);
	return status;
}
