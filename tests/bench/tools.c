/* tools.c: running other programs -- mrelease, mr-floor, pkill, strace,
 * /bin/true -- to their exit, or as a service (mrelease --follow) until
 * mr-bench stops it, and reading what they say: mrelease's --json and
 * --follow's NDJSON with jansson, and which pkill offers -m (--mrelease). */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "mrelease.h"
#include "sys.h"

#define MAX_ARGS 1024

static int memfd_or_die(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		err(EXIT_FATAL, "memfd_create");
	return fd;
}

static char *slurp_fd(int fd)
{
	off_t len = lseek(fd, 0, SEEK_END);
	char *buf = malloc(len > 0 ? (size_t)len + 1 : 1);

	if (!buf)
		err(EXIT_FATAL, "malloc");
	if (len <= 0 || pread(fd, buf, (size_t)len, 0) != len)
		len = 0;
	buf[len] = '\0';
	return buf;
}

/* In the child, before exec: a limit on open files that mrelease cannot
 * lift.  It raises its soft limit to the hard one, and the hard one to
 * fs.nr_open when it has CAP_SYS_RESOURCE; so both limits are set, and
 * the capability is dropped from the bounding set, which for root without
 * file capabilities (and with empty inheritable and ambient sets, as
 * root's are) is the permitted set after exec.  NULL, or what failed,
 * with errno. */
static const char *limit_nofile(long nofile)
{
	struct rlimit rl = { (rlim_t)nofile, (rlim_t)nofile };

	if (prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0))
		return "cannot drop CAP_SYS_RESOURCE from the bounding set";
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return "cannot set RLIMIT_NOFILE";
	return NULL;
}

/* fork+exec argv (argv[0] a path, or a name looked up in PATH), stdin
 * from env's file or /dev/null, stdout to out, stderr to errfd, under
 * env's limit.  It is tracked from the fork on, so that the clean-up ends
 * it on every exit. */
static struct kid *spawn(const char *const *argv, const struct cmd_env *env, int out, int errfd)
{
	const char *failed;
	pid_t pid = fork();

	if (pid < 0)
		err(EXIT_FATAL, "fork");
	if (pid == 0) {
		/* O_CLOEXEC: the copy on fd 0 stays, the original closes at
		 * exec, so that the command inherits no descriptor beyond 0-2
		 * (which count against its limit on open files). */
		int in = env && env->in >= 0 ? env->in : open("/dev/null", O_RDONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
			_exit(126);
		if (env && env->nofile && (failed = limit_nofile(env->nofile))) {
			dprintf(2, "%s: %s\n", failed, strerror(errno));
			_exit(126);
		}
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return kid_track(pid, false);
}

/* Wait for k until it exits or the deadline passes (then end it), reap
 * it, and read what it wrote; closes out and errfd.  end_us is the moment
 * its pidfd polls readable. */
static void collect(struct kid *k, int64_t deadline, int out, int errfd, bool capture,
		    struct tool_result *r)
{
	int wstatus;
	char *text;

	if (poll_until(k->pidfd, POLLIN, deadline, true)) {
		r->end_us = mr_now_us();
		while (waitpid(k->pid, &wstatus, 0) < 0 && errno == EINTR)
			;
		kid_untrack(k);
		r->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	} else {
		r->end_us = TIMED_OUT;
		r->status = -1;
		kid_reap(k);
	}
	text = slurp_fd(errfd);
	text[strcspn(text, "\n")] = '\0';
	snprintf(r->err, sizeof(r->err), "%s", text);
	free(text);
	r->out = capture ? slurp_fd(out) : NULL;
	close(out);
	close(errfd);
}

/* argv to its exit, or until the timeout passes (then it is killed);
 * env may be NULL.  stdout goes to /dev/null, or to a memfd read into
 * r->out.  The clock runs from just before the fork to the moment its
 * pidfd polls readable. */
void run_cmd(const char *const *argv, const struct cmd_env *env, bool capture,
	     int64_t timeout_us, struct tool_result *r)
{
	int out, errfd;
	struct kid *k;

	out = capture ? memfd_or_die("mr-bench-out") : open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (out < 0)
		err(EXIT_FATAL, "/dev/null");
	errfd = memfd_or_die("mr-bench-err");
	memset(r, 0, sizeof(*r));
	r->start_us = mr_now_us();
	k = spawn(argv, env, out, errfd);
	collect(k, r->start_us + timeout_us, out, errfd, capture, r);
}

/* ---- a service: started, left running, stopped ---- */

/* argv left running, its stdout and stderr to memfds.  Its stop signal is
 * SIGTERM, as a service is stopped: whether mr-bench stops it or the
 * clean-up does (an error, ^C), it ends as it would in service. */
void service_start(const char *const *argv, struct service *sv)
{
	sv->out = memfd_or_die("mr-bench-service-out");
	sv->errfd = memfd_or_die("mr-bench-service-err");
	sv->start_us = mr_now_us();
	sv->k = spawn(argv, NULL, sv->out, sv->errfd);
	sv->k->stop_signal = SIGTERM;
}

/* Whether it has written to its stdout by the deadline (mrelease --follow
 * --json writes its "start" line, in one write, once its sources are
 * open), and so is at work; false if it exited first, or is silent. */
bool service_ready(const struct service *sv, int64_t deadline)
{
	struct stat st;

	for (;;) {
		if (fstat(sv->out, &st))
			err(EXIT_FATAL, "fstat");
		if (st.st_size > 0)
			return true;
		if (poll_until(sv->k->pidfd, POLLIN, mr_now_us(), true) || mr_now_us() >= deadline)
			return false;
		sleep_us(US_PER_MS);
	}
}

/* What it has written to its stdout so far, to be freed. */
char *service_output(const struct service *sv)
{
	return slurp_fd(sv->out);
}

/* SIGTERM through its pidfd, then as run_cmd: wait until it exits (or
 * the timeout passes, then it is killed), reap it, and read its stdout
 * into r->out.  r->start_us is its start. */
void service_stop(struct service *sv, int64_t timeout_us, struct tool_result *r)
{
	memset(r, 0, sizeof(*r));
	r->start_us = sv->start_us;
	/* ESRCH: it has exited already, and is only to be reaped. */
	if (mr_sys_pidfd_send_signal(sv->k->pidfd, SIGTERM) && errno != ESRCH)
		err(EXIT_FATAL, "pidfd_send_signal %d", sv->k->pid);
	collect(sv->k, mr_now_us() + timeout_us, sv->out, sv->errfd, true, r);
	sv->k = NULL;
}

/* mrelease with args (NULL-terminated, without argv[0]); env may be NULL. */
void run_mrelease(const struct bench *b, const char *const *args, const struct cmd_env *env,
		  bool capture, int64_t timeout_us, struct tool_result *r)
{
	const char *argv[MAX_ARGS] = { b->opt.mrelease };
	int n = 1;

	for (int i = 0; args[i]; i++) {
		if (n == MAX_ARGS - 1)
			errx(EXIT_FATAL, "more than %d arguments for mrelease", MAX_ARGS - 2);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	run_cmd(argv, env, capture, timeout_us, r);
}

/* ---- mrelease --json ---- */

/* An integer member of obj; -1 for null or absent, as mrelease writes
 * null for what it did not measure. */
static int64_t int_member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The summary's counts and times, the slowest target's release_us, and
 * the first failed target's error.  0, or -1 with why. */
int parse_report(const char *text, struct mr_report *rep, char *why, size_t len)
{
	json_error_t jerr;
	json_t *doc = json_loads(text, 0, &jerr);
	const json_t *summary, *targets, *t;
	size_t i;

	memset(rep, 0, sizeof(*rep));
	if (!doc) {
		snprintf(why, len, "mrelease --json, line %d: %s", jerr.line, jerr.text);
		return -1;
	}
	summary = json_object_get(doc, "summary");
	targets = json_object_get(doc, "targets");
	if (!json_is_object(summary) || !json_is_array(targets)) {
		snprintf(why, len, "mrelease --json: no \"summary\" object or \"targets\" array");
		json_decref(doc);
		return -1;
	}
	rep->self.kill_us = int_member(summary, "kill_us");
	rep->self.elapsed_us = int_member(summary, "elapsed_us");
	rep->self.release_us = -1;
	rep->targets = (long)int_member(summary, "targets");
	rep->released = (long)int_member(summary, "released");
	rep->exited = (long)int_member(summary, "exited");
	rep->failed = (long)int_member(summary, "failed");
	rep->self.exited = rep->exited;
	rep->self.batches = int_member(summary, "batches");
	json_array_foreach(targets, i, t) {
		int64_t us = int_member(t, "release_us");
		const char *e = json_string_value(json_object_get(t, "error"));

		if (us > rep->self.release_us)
			rep->self.release_us = us;
		if (e && !rep->error[0])
			snprintf(rep->error, sizeof(rep->error), "pid %lld: %s",
				 (long long)int_member(t, "pid"), e);
	}
	json_decref(doc);
	return 0;
}

/* ---- mrelease --follow --json ---- */

const char *const follow_triggers[FT_COUNT] = {
	[FT_START] = "start", [FT_SIGNALS] = "signals", [FT_SETTLE] = "settle",
	[FT_LOST] = "lost", [FT_PRESSURE] = "pressure", [FT_TIMER] = "timer",
};

/* One "release" line: its pid, whether it says "released", its
 * release_us, and otherwise what it says instead. */
static void follow_release(const json_t *line, struct follow_release *rel)
{
	const char *status = json_string_value(json_object_get(line, "status"));
	const char *e = json_string_value(json_object_get(line, "error"));

	rel->pid = (pid_t)int_member(line, "pid");
	rel->released = status && !strcmp(status, "released");
	rel->release_us = int_member(line, "release_us");
	rel->trigger[0] = '\0';
	snprintf(rel->error, sizeof(rel->error), "%s%s%s", status ? status : "no status",
		 e ? ": " : "", e ? e : "");
}

/* The "start" line: the sources that wake its sweeps, and why not on
 * signals if not. */
static void follow_start(const json_t *line, struct follow_report *rep)
{
	static const char *const names[] = { [FS_SIGNALS] = "signals", [FS_PRESSURE] = "pressure",
					      [FS_TIMER] = "timer" };
	const json_t *v;
	const char *why;
	size_t i;

	rep->start = true;
	json_array_foreach(json_object_get(line, "sources"), i, v)
		for (size_t k = 0; k < ARRAY_LEN(names); k++)
			if (json_is_string(v) && !strcmp(json_string_value(v), names[k]))
				rep->sources[k] = true;
	why = json_string_value(json_object_get(json_object_get(line, "declined"), "signals"));
	snprintf(rep->declined_signals, sizeof(rep->declined_signals), "%s", why ? why : "");
}

/* The "summary" line: the sweeps by trigger, and the SIGKILLs seen. */
static void follow_summary(const json_t *line, struct follow_report *rep)
{
	char key[32];

	rep->summary = true;
	rep->sweeps = int_member(line, "sweeps");
	for (int t = 0; t < FT_COUNT; t++) {
		snprintf(key, sizeof(key), "on_%s", follow_triggers[t]);
		rep->on[t] = int_member(line, key);
	}
	rep->signal_events = int_member(line, "signal_events");
	rep->signal_events_lost = int_member(line, "signal_events_lost");
	rep->records_dropped = int_member(line, "records_dropped");
}

/* Its NDJSON, one object a line: the "start" line, every "release" line
 * (the first MAX_FOLLOW_RELEASES kept, each with the trigger of the
 * "sweep" line that follows it: a sweep writes its releases, then
 * itself), and the "summary" line.  0, or -1 with why when a line is no
 * JSON object. */
int parse_follow(const char *text, struct follow_report *rep, char *why, size_t len)
{
	int lineno = 0, untold = 0;

	memset(rep, 0, sizeof(*rep));
	rep->sweeps = rep->signal_events = rep->signal_events_lost = rep->records_dropped = -1;
	for (int t = 0; t < FT_COUNT; t++)
		rep->on[t] = -1;
	for (const char *line = text, *end; *line; line = *end ? end + 1 : end) {
		json_error_t jerr;
		json_t *doc;
		const char *type;

		end = line + strcspn(line, "\n");
		lineno++;
		if (end == line)
			continue;
		doc = json_loadb(line, (size_t)(end - line), 0, &jerr);
		if (!json_is_object(doc)) {
			snprintf(why, len, "mrelease --follow --json, line %d: %s", lineno,
				 doc ? "not an object" : jerr.text);
			json_decref(doc);
			return -1;
		}
		type = json_string_value(json_object_get(doc, "type"));
		if (!type)
			type = "";
		if (!strcmp(type, "start")) {
			follow_start(doc, rep);
		} else if (!strcmp(type, "release")) {
			if (rep->n < MAX_FOLLOW_RELEASES) {
				follow_release(doc, &rep->rel[rep->n++]);
				untold++;
			}
			rep->nlines++;
		} else if (!strcmp(type, "sweep")) {
			const char *t = json_string_value(json_object_get(doc, "trigger"));

			for (; untold; untold--)
				snprintf(rep->rel[rep->n - untold].trigger,
					 sizeof(rep->rel[0].trigger), "%s", t ? t : "?");
		} else if (!strcmp(type, "summary")) {
			follow_summary(doc, rep);
		}
		json_decref(doc);
	}
	return 0;
}

/* ---- pkill -m ---- */

/* Whether this pkill offers -m, and its version line. */
static bool pkill_has_mrelease(const char *path, char *version, size_t len)
{
	const char *help[] = { path, "--help", NULL };
	const char *ver[] = { path, "--version", NULL };
	struct tool_result r;
	bool has;

	run_cmd(help, NULL, true, 10 * US_PER_S, &r);
	has = r.status == 0 && strstr(r.out, "--mrelease");
	free(r.out);
	run_cmd(ver, NULL, true, 10 * US_PER_S, &r);
	if (r.out) {
		r.out[strcspn(r.out, "\n")] = '\0';
		snprintf(version, len, "%s", r.out);
	}
	free(r.out);
	return has;
}

static void add_why(struct pkill_info *p, const char *path, const char *version)
{
	size_t used = strlen(p->why);

	snprintf(p->why + used, sizeof(p->why) - used, "%s%s (%s) has no -m", used ? "; " : "",
		 path, version[0] ? version : "no version");
}

/* --pkill PATH if given, else the first pkill in PATH that offers -m
 * (procps-ng 4.0.6 and later).  Not finding one is a note, not an error. */
void find_pkill(struct bench *b)
{
	struct pkill_info *p = &b->pkill;
	char version[128] = "", *path, *save = NULL;
	const char *env = getenv("PATH");

	if (b->opt.pkill) {
		if (access(b->opt.pkill, X_OK)) {
			snprintf(p->why, sizeof(p->why), "--pkill %s: %s", b->opt.pkill,
				 strerror(errno));
			return;
		}
		if (pkill_has_mrelease(b->opt.pkill, version, sizeof(version))) {
			p->found = true;
			snprintf(p->path, sizeof(p->path), "%s", b->opt.pkill);
			snprintf(p->version, sizeof(p->version), "%s", version);
		} else {
			add_why(p, b->opt.pkill, version);
		}
		return;
	}
	path = strdup(env ? env : "/usr/bin:/bin");
	if (!path)
		err(EXIT_FATAL, "malloc");
	for (char *dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];

		if (!*dir || snprintf(cand, sizeof(cand), "%s/pkill", dir) >= (int)sizeof(cand) ||
		    access(cand, X_OK))
			continue;
		version[0] = '\0';
		if (pkill_has_mrelease(cand, version, sizeof(version))) {
			p->found = true;
			snprintf(p->path, sizeof(p->path), "%s", cand);
			snprintf(p->version, sizeof(p->version), "%s", version);
			break;
		}
		add_why(p, cand, version);
	}
	free(path);
	if (!p->found && !p->why[0])
		snprintf(p->why, sizeof(p->why), "no pkill in PATH");
}
