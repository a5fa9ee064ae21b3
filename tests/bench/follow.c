/* follow.c: the scenarios of mrelease --follow as a service, started once
 * for the scenario and left running while the victims come and go:
 * follow (a stuck victim SIGKILLed by mr-bench, as /bin/kill would, against
 * the floor) and oom (a stuck victim killed by the kernel's OOM killer,
 * against the kernel's own oom_reaper).  Each service follows a cgroup v2
 * of its own that only its row's victims join, so that it never acts on
 * another process of the host, nor on the other rows' victims.  Its
 * signals source needs tracefs, which mr-bench mounts if no one has, and
 * unmounts after. */
#define _GNU_SOURCE
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"

/* Where tracefs goes when mr-bench mounts it: where systemd mounts it. */
#define TRACEFS_DIR "/sys/kernel/tracing"
/* oom: the victim's memory cgroup may hold S and this much more (page
 * tables and the like take a few MiB of it); told to go, the victim
 * touches OOM_OVER, well past the limit. */
#define OOM_MARGIN (32 * MIB)
#define OOM_OVER (4 * OOM_MARGIN)

/* ---- tracefs ---- */

static bool tracefs_mounted; /* by mr-bench, so to be unmounted by it */

/* A tracefs mount, for mrelease --follow's tracepoint: NULL if there is
 * one (or mr-bench has just mounted one), else why not. */
const char *tracefs_need(void)
{
	static char why[PATH_MAX + 80];
	char path[PATH_MAX];
	int r = mr_tracefs_find("/proc/self/mountinfo", path, sizeof(path));

	if (r == 0)
		return NULL;
	if (r != -ENOENT) {
		snprintf(why, sizeof(why), "/proc/self/mountinfo: %s", strerror(-r));
		return why;
	}
	if (mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL)) {
		snprintf(why, sizeof(why), "no tracefs mounted, and mount -t tracefs nodev %s: %s",
			 TRACEFS_DIR, strerror(errno));
		return why;
	}
	tracefs_mounted = true;
	fprintf(stderr, "mr-bench: mounted tracefs on %s, until the scenario ends\n", TRACEFS_DIR);
	return NULL;
}

/* Unmount it if mr-bench mounted it: at the end of each scenario that
 * needed it, and in the clean-up on every exit.  mrelease holds nothing
 * open there once it has its perf events. */
void tracefs_done(void)
{
	if (!tracefs_mounted)
		return;
	tracefs_mounted = false;
	if (umount(TRACEFS_DIR))
		warn("umount %s", TRACEFS_DIR);
}

/* ---- a row timed with mrelease --follow running ---- */

/* A sample, kept until the service's own report confirms it. */
struct follow_sample {
	pid_t pid;             /* the victim */
	int run;
	int64_t us;            /* or TIMED_OUT */
};

/* The service of one row, the v2 cgroup it follows (which only that row's
 * victims join, one at a time), and the row's samples. */
struct watch {
	struct series *s;
	struct cgdir *cg;
	struct service sv;
	bool running;
	bool timer;            /* it wakes on its timer, not on signals */
	struct follow_sample f[MAX_RUNS];
	int n;
};

/* mrelease --follow --json [extra...] --cgroup W, started before any
 * victim and awaited until its "start" line shows it at work, waking on
 * signals (or with the timer row, on its timer alone); if it is not, it is
 * stopped, and the row is not available, saying why. */
static void watch_start(const struct bench *b, struct watch *w, const char *const *extra)
{
	const char *argv[16] = { b->opt.mrelease, "--follow", "--json" };
	struct follow_report rep;
	struct tool_result r;
	char why[sizeof(w->s->why)] = "";
	char *out;
	int n = 3;

	for (int i = 0; extra && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n++] = "--cgroup";
	argv[n++] = w->cg->path;
	argv[n] = NULL;
	service_start(argv, &w->sv);
	if (service_ready(&w->sv, mr_now_us() + 10 * US_PER_S)) {
		out = service_output(&w->sv);
		if (parse_follow(out, &rep, why, sizeof(why)) == 0 && !rep.start)
			snprintf(why, sizeof(why), "mrelease --follow: no \"start\" line first");
		else if (!why[0] && !w->timer && !rep.sources[FS_SIGNALS])
			snprintf(why, sizeof(why), "mrelease --follow does not wake on signals: "
				 "%.180s", rep.declined_signals[0] ? rep.declined_signals
								   : "(no reason given)");
		else if (!why[0] && w->timer && (rep.sources[FS_SIGNALS] || !rep.sources[FS_TIMER]))
			snprintf(why, sizeof(why), "mrelease --follow --no-signals --interval: not "
				 "on its timer alone");
		free(out);
		if (!why[0]) {
			w->running = true;
			return;
		}
	}
	service_stop(&w->sv, 10 * US_PER_S, &r);
	if (!why[0] && r.status < 0)
		snprintf(why, sizeof(why), "mrelease --follow wrote nothing in 10 s, nor ended on "
			 "SIGTERM");
	else if (!why[0])
		snprintf(why, sizeof(why), "mrelease --follow wrote nothing, and exited %d: %.160s",
			 r.status, r.err[0] ? r.err : "(no message)");
	series_unavailable(w->s, why);
	free(r.out);
}

static void note_add(struct series *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note_add(struct series *s, const char *fmt, ...)
{
	size_t used = strlen(s->note);
	va_list ap;

	if (used + 2 >= sizeof(s->note))
		return;
	if (used)
		used += (size_t)snprintf(s->note + used, sizeof(s->note) - used, "; ");
	va_start(ap, fmt);
	vsnprintf(s->note + used, sizeof(s->note) - used, fmt, ap);
	va_end(ap);
}

/* Stop the service with SIGTERM and check its report.  A sample counts
 * only if it has one "release" line with its victim's pid and status
 * "released", and the "summary" line that SIGTERM makes it write; then it
 * is recorded, with that line's release_us as mrelease's own figure.  The
 * row's note says which triggers released them, and the SIGKILLs it saw. */
static void watch_stop(const struct bench *b, const struct scenario *sc, struct watch *w)
{
	struct follow_report rep = { 0 };
	int by[FT_COUNT + 1] = { 0 }, matched = 0;
	char why[240] = "";
	struct tool_result r;

	if (!w->running)
		return;
	w->running = false;
	service_stop(&w->sv, 10 * US_PER_S, &r);
	if (r.status < 0)
		snprintf(why, sizeof(why), "mrelease --follow: still running 10 s after SIGTERM");
	else if (r.status != 0)
		snprintf(why, sizeof(why), "mrelease --follow: exit %d: %.160s", r.status,
			 r.err[0] ? r.err : "(no message)");
	else if (!parse_follow(r.out, &rep, why, sizeof(why)) && !rep.summary)
		snprintf(why, sizeof(why), "mrelease --follow: no \"summary\" line after SIGTERM");
	free(r.out);
	for (int i = 0; i < w->n; i++) {
		const struct follow_sample *f = &w->f[i];
		const struct follow_release *rel = NULL;
		int lines = 0, t;

		if (why[0]) {
			record_failure(sc, w->s, "%s", why);
			continue;
		}
		for (int j = 0; j < rep.n; j++)
			if (rep.rel[j].pid == f->pid) {
				rel = &rep.rel[j];
				lines++;
			}
		matched += lines;
		if (lines != 1) {
			record_failure(sc, w->s, "victim %d: %d \"release\" lines for it, not 1",
				       f->pid, lines);
			continue;
		}
		if (!rel->released) {
			record_failure(sc, w->s, "victim %d: %s", f->pid, rel->error);
			continue;
		}
		for (t = 0; t < FT_COUNT && strcmp(rel->trigger, follow_triggers[t]); t++)
			;
		by[t]++;
		record(b, sc, f->run, w->s, f->us,
		       &(struct self_report){ -1, -1, rel->release_us, -1, -1 });
	}
	if (why[0])
		return;
	for (int t = 0; t <= FT_COUNT; t++)
		if (by[t])
			note_add(w->s, "%d released on %s", by[t],
				 t < FT_COUNT ? follow_triggers[t] : "no sweep line");
	note_add(w->s, "it saw %lld SIGKILLs (%lld lost) in %lld sweeps",
		 (long long)rep.signal_events, (long long)rep.signal_events_lost,
		 (long long)rep.sweeps);
	/* It was to see nothing but this row's victims. */
	if (rep.nlines != matched)
		note_add(w->s, "%d \"release\" lines for processes that were no sample's victim",
			 rep.nlines - matched);
}

/* The timer row: a pause of 0 to one interval, drawn anew for each sample,
 * before the clock and the SIGKILL.  A sample's set-up takes about as long
 * each time, so without it the kill would fall at much the same point of
 * the service's period sample after sample, and the wait for the next
 * sweep would be whatever that point gives, not spread over the interval
 * as it is for a kill that comes at any time.  (On signals there is no
 * period to spread the kills over.) */
static void random_phase(void)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		err(EXIT_FATAL, "getrandom");
	sleep_us((int64_t)(r % (FOLLOW_INTERVAL_MS * US_PER_MS)));
}

/* ---- follow: mrelease --follow answers another process's SIGKILL ---- */

enum follow_how { FH_KILL, FH_FLOOR, FH_WATCH };

struct follow_row {
	enum follow_how how;
	struct series *s;      /* FH_WATCH: w->s */
	struct watch *w;
	int runs;
};

/* One sample: a fresh victim of S, frozen (state D) in the v1 freezer,
 * metered, and in the row's watched cgroup if it has one. */
static void follow_sample(const struct bench *b, const struct scenario *sc, struct cgdir *freezer,
			  const struct meter *meter, const struct follow_row *row, int run)
{
	struct spawn_spec spec = { .kind = KID_VICTIM, .bytes = b->bytes, .chunks = 1, .cpu = -1 };
	struct kid *v;
	struct victims vs = { .v = &v, .n = 1, .bytes = b->bytes, .meter = meter };
	struct mr_stat st = { .state = '?' };
	static bool checked;
	int e;

	spec_join(&spec, freezer->path);
	spec_join(&spec, meter->cg->path);
	spec_join(&spec, row->w ? row->w->cg->path : NULL);
	v = start_victim(&spec);
	if ((e = cg_freeze(freezer, mr_now_us() + 10 * US_PER_S)))
		errx(EXIT_FATAL, "freeze %s: %s", freezer->path, strerror(-e));
	/* The freezer must leave it in D, the stand-in for an uninterruptible
	 * sleep; say so once if this kernel does otherwise. */
	if (!checked && (mr_proc_stat("/proc", v->pid, &st) || st.state != 'D'))
		warnx("victim %d: state %c when frozen, not D", v->pid, st.state);
	checked = true;
	switch (row->how) {
	case FH_KILL:
		time_sigkill(b, sc, run, row->s, &vs);
		break;
	case FH_FLOOR:
		time_floor(b, sc, run, row->s, &vs);
		break;
	case FH_WATCH:
		if (row->w->timer)
			random_phase();
		row->w->f[row->w->n++] =
			(struct follow_sample){ v->pid, run, sigkill_memory_back(b, &vs) };
		break;
	}
	cg_thaw(freezer);
	kid_reap(v);
}

/* follow: one stuck victim of S, SIGKILLed by mr-bench through its pidfd
 * (as /bin/kill would) while mrelease --follow runs with its defaults,
 * following only WATCHED: the time from just before the SIGKILL until the
 * memory is back, against the floor and the SIGKILL with no tool acting on
 * the victim.  The timer row does the same with --no-signals --interval
 * 0.05, the way --follow woke before it watched signals, following a
 * cgroup of its own.  Each service is started once for the scenario, as a
 * service runs; its stop signal is SIGTERM, on every exit (kids.c). */
void scenario_follow(struct bench *b, struct scenario *sc)
{
	static const char *const timer_args[] = { "--no-signals", "--interval", NULL, NULL };
	char interval[16];
	int runs = (int)b->opt.runs, kill_runs = (int)b->opt.kill_runs;
	struct watch w[2] = { { 0 }, { .timer = true } };
	struct follow_row rows[4];
	const char *args[4], *no_tracefs;
	struct cgdir *freezer;
	struct meter meter;

	if (!cg_available(b, sc, true, true))
		return;
	if ((no_tracefs = tracefs_need())) {
		snprintf(sc->why, sizeof(sc->why), "%s", no_tracefs);
		return;
	}
	snprintf(interval, sizeof(interval), "%g", FOLLOW_INTERVAL_MS / 1000.0);
	memcpy(args, timer_args, sizeof(args));
	args[2] = interval;
	freezer = cg_create(b->v1_freezer, CG_FREEZER);
	w[0].cg = cg_create(b->v2_root, CG_V2);
	w[1].cg = cg_create(b->v2_root, CG_V2);
	snprintf(sc->setup, sizeof(sc->setup),
		 "victim of %zu MiB frozen by the cgroup-v1 freezer (%s); mrelease --follow "
		 "with its defaults (signals and pressure), started once for the scenario, "
		 "follows only %s (cgroup v2), which only the follow row's victim joins; the "
		 "timer row's, with --no-signals --interval %s, only %s", b->bytes / MIB,
		 freezer->path, w[0].cg->path, interval, w[1].cg->path);
	sc->available = true;
	rows[0] = (struct follow_row){ FH_KILL,
		series_add(sc, "kill", "SIGKILL + wait", kill_runs,
			   "pidfd_send_signal(SIGKILL), poll the pidfd; no tool acts on this "
			   "victim"),
		NULL, kill_runs };
	rows[1] = (struct follow_row){ FH_FLOOR,
		series_add(sc, "floor", "mr-floor (the floor)", runs,
			   "mr-floor PID: pidfd_open, SIGKILL, process_mrelease"), NULL, runs };
	w[0].s = series_add(sc, "follow", "SIGKILL + mrelease --follow running", runs,
			    "pidfd_send_signal(SIGKILL) by mr-bench, with mrelease --json --follow "
			    "--cgroup PATH running (defaults: signals, --settle 2)");
	rows[2] = (struct follow_row){ FH_WATCH, w[0].s, &w[0], runs };
	w[1].s = series_add(sc, "follow_timer", "the same, on a 50 ms timer only", runs,
			    "pidfd_send_signal(SIGKILL) by mr-bench, with mrelease --json --follow "
			    "--no-signals --interval %s --cgroup PATH running", interval);
	rows[3] = (struct follow_row){ FH_WATCH, w[1].s, &w[1], runs };
	meter_open(b, &meter);
	watch_start(b, &w[0], NULL);
	watch_start(b, &w[1], args);
	for (int run = 0; run < runs; run++)
		for (int i = 0; i < 4; i++)
			if (rows[i].s->available && run < rows[i].runs)
				follow_sample(b, sc, freezer, &meter, &rows[i], run);
	watch_stop(b, sc, &w[0]);
	watch_stop(b, sc, &w[1]);
	note_add(w[1].s, "the interval bounds the latency: a sweep every %d ms, then the release",
		 FOLLOW_INTERVAL_MS);
	meter_close(&meter);
	cg_remove(w[1].cg);
	cg_remove(w[0].cg);
	cg_remove(freezer);
	tracefs_done();
}

/* ---- oom: a stuck victim of the kernel's OOM killer ---- */

/* Whether a thread of pid is in state D by the deadline: the victim's
 * second thread, waiting for the pipe's lock. */
static bool thread_waits(pid_t pid, int64_t deadline)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (;;) {
		DIR *d = opendir(path);
		struct dirent *e;
		bool found = false;

		while (d && !found && (e = readdir(d))) {
			struct mr_stat st;
			pid_t tid;

			found = !mr_parse_pid(e->d_name, &tid) &&
				!mr_proc_thread_stat("/proc", pid, tid, &st) && st.state == 'D';
		}
		if (d)
			closedir(d);
		if (found)
			return true;
		if (mr_now_us() >= deadline)
			return false;
		sleep_us(US_PER_MS);
	}
}

/* When each OOM kill came, after the go: for the note. */
static int64_t oom_kill_after[2 * MAX_RUNS];
static int noom_kills;

/* One sample: a holder keeps a pipe's lock; a fresh victim of S, in the
 * metered cgroup (limited to S + OOM_MARGIN) and in w's cgroup if given,
 * has a thread waiting for that lock, and is told to go over the limit.
 * The clock starts when the cgroup's OOM kill is seen (memory.oom_control,
 * polled every 0.2 ms from the go on) and stops when the memory is back.
 * Then the holder is killed, which lets the victim die, and both are
 * reaped. */
static void oom_time(const struct bench *b, const struct scenario *sc, const struct meter *meter,
		     struct series *s, struct watch *w, int run, struct kid *v)
{
	int64_t go, kill, end, before;

	if (!thread_waits(v->pid, mr_now_us() + 5 * US_PER_S)) {
		record_failure(sc, s, "victim %d: no thread waits for the pipe's lock (state D)",
			       v->pid);
		return;
	}
	before = meter_oom_kills(meter);
	go = mr_now_us();
	oom_go(v);
	kill = wait_oom_kill(meter, before, go + b->timeout_us);
	if (kill == TIMED_OUT) {
		record_failure(sc, s, "victim %d: no OOM kill in its cgroup within %g s", v->pid,
			       (double)b->timeout_us / US_PER_S);
		return;
	}
	oom_kill_after[noom_kills++] = kill - go;
	end = wait_memory_back(meter, b->bytes, kill + b->timeout_us);
	end = end == TIMED_OUT ? TIMED_OUT : end - kill;
	if (w)
		w->f[w->n++] = (struct follow_sample){ v->pid, run, end };
	else
		record(b, sc, run, s, end, NULL);
}

static void oom_sample(const struct bench *b, const struct scenario *sc, const struct meter *meter,
		       struct series *s, struct watch *w, int run)
{
	struct spawn_spec spec = { .kind = KID_OOM, .bytes = b->bytes, .chunks = 1, .cpu = -1,
				   .over = OOM_OVER };
	struct spawn_spec hs = { .kind = KID_HOLDER, .chunks = 1, .cpu = -1 };
	struct kid *holder, *v;
	int stall[2];

	if (pipe2(stall, O_CLOEXEC))
		err(EXIT_FATAL, "pipe");
	hs.stall_fd = spec.stall_fd = stall[1];
	holder = start_victim(&hs);
	spec_join(&spec, meter->cg->path);
	spec_join(&spec, w ? w->cg->path : NULL);
	v = start_oom_victim(&spec);
	oom_time(b, sc, meter, s, w, run, v);
	/* The holder first: until its write ends, the victim cannot. */
	kid_reap(holder);
	kid_reap(v);
	close(stall[0]);
	close(stall[1]);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* oom: one victim of S in a v1 memory cgroup limited to S + OOM_MARGIN,
 * kept stuck by a thread in uninterruptible sleep (kids.c), told to go
 * over the limit: the cgroup's OOM killer kills it, and its memory is back
 * only when a reaper takes it.  The time from the OOM kill until the
 * memory is back, with no tool acting (the kernel's oom_reaper, which
 * waits OOM_REAPER_DELAY, 2 s, since Linux 5.18) and with mrelease
 * --follow running with its defaults, following a v2 cgroup that only its
 * row's victims join. */
void scenario_oom(struct bench *b, struct scenario *sc)
{
	struct watch w = { 0 };
	struct series *reaper;
	struct meter meter;
	const char *no_tracefs;
	int runs = (int)b->opt.runs;

	if (!cg_available(b, sc, false, true))
		return;
	if (access("/dev/userfaultfd", F_OK) && access("/proc/sys/vm/unprivileged_userfaultfd",
						       F_OK)) {
		snprintf(sc->why, sizeof(sc->why), "no userfaultfd in this kernel (the holder that "
			 "keeps the victim stuck needs it)");
		return;
	}
	if ((no_tracefs = tracefs_need())) {
		snprintf(sc->why, sizeof(sc->why), "%s", no_tracefs);
		return;
	}
	w.cg = cg_create(b->v2_root, CG_V2);
	meter_open(b, &meter);
	meter_limit(&meter, b->bytes + OOM_MARGIN);
	snprintf(sc->setup, sizeof(sc->setup),
		 "victim of %zu MiB in %s (memory.limit_in_bytes %zu MiB, swappiness 0); a "
		 "thread of it waits in mutex_lock() for a pipe's lock, which a holder keeps in "
		 "a write from a page userfaultfd leaves missing; told to go, it touches %zu MiB "
		 "more; mrelease --follow (defaults) follows only %s", b->bytes / MIB, meter.cg->path,
		 (b->bytes + OOM_MARGIN) / MIB, OOM_OVER / MIB, w.cg->path);
	sc->available = true;
	noom_kills = 0;
	reaper = series_add(sc, "reaper", "OOM kill, the oom_reaper alone", runs,
			    "the cgroup's OOM killer kills the victim; the kernel's oom_reaper reaps "
			    "it after OOM_REAPER_DELAY (2 s)");
	w.s = series_add(sc, "follow", "OOM kill + mrelease --follow running", runs,
			 "the same, with mrelease --json --follow --cgroup PATH running (defaults)");
	watch_start(b, &w, NULL);
	for (int run = 0; run < runs; run++) {
		oom_sample(b, sc, &meter, reaper, NULL, run);
		if (w.s->available)
			oom_sample(b, sc, &meter, w.s, &w, run);
	}
	watch_stop(b, sc, &w);
	if (noom_kills) {
		qsort(oom_kill_after, (size_t)noom_kills, sizeof(oom_kill_after[0]), cmp_i64);
		note_add(reaper, "the clock starts at the OOM kill, seen a median %.1f ms after the "
			 "go (the victim faulting up to its limit)",
			 (double)oom_kill_after[(noom_kills - 1) / 2] / US_PER_MS);
	}
	meter_close(&meter);
	cg_remove(w.cg);
	tracefs_done();
}
