/* follow.c: --follow, mrelease as a service beside whatever kills on the
 * host. It sleeps on memory pressure (a PSI trigger: no timer, no wakeup
 * while nothing happens) or, with --interval, a timer; at each wakeup it
 * sweeps as --dying does, with the same run and the same contracts, again
 * and again, and says what each sweep released as it goes. It never sends
 * a signal. SIGINT, SIGTERM or SIGHUP end it at once: the totals since the
 * start, then exit 0.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define MAX_TRIGGERS 8

/* Where a sweep wakes from: a trigger on each cgroup named (all cgroup v2,
 * with memory.pressure), or on the whole system. */
struct wakeup {
	int fds[MAX_TRIGGERS];
	size_t n;
	int64_t interval_us, next_us; /* 0: no timer */
};

/* What the last sweep said of each dying process it found, by pid and
 * pidfd inode: a process that stays dying (stuck, or held by a freezer
 * after its release) is found by sweep after sweep, and is said again only
 * when its fate changes. Only the last sweep's are kept, so memory stays
 * flat however long the service runs. */
struct seen {
	pid_t pid;
	uint64_t ino;
	enum mr_state state;
};

struct said {
	struct seen *v;
	size_t n;
};

/* Now, in UTC: to the second for the table, to the microsecond in JSON. */
static void now_text(char *text, size_t tlen, char *json, size_t jlen)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(text, tlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = strftime(json, jlen, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(json + n, jlen - n, ".%06ldZ", ts.tv_nsec / 1000);
}

/* The triggers: one on each cgroup named, where every one is a cgroup v2
 * with memory.pressure; else one on the system (/proc/pressure/memory).
 * Where there is no PSI, --interval alone wakes the sweeps; without it,
 * nothing would, and mrelease refuses to run (exit 2). */
static void open_triggers(const struct mr_options *o, const struct mr_run *run, struct wakeup *w)
{
	char file[4096], spec[64];
	bool own = run->ncgroups && run->ncgroups <= MAX_TRIGGERS;
	int fd;

	for (size_t c = 0; own && c < run->ncgroups; c++) {
		snprintf(file, sizeof(file), "%s/memory.pressure", run->cgroups[c].path);
		own = run->cgroups[c].v2 && access(file, F_OK) == 0;
	}
	for (size_t c = 0; c < (own ? run->ncgroups : 1); c++) {
		if (own)
			snprintf(file, sizeof(file), "%s/memory.pressure", run->cgroups[c].path);
		else
			snprintf(file, sizeof(file), "%s/pressure/memory", run->cfg.proc);
		if ((fd = mr_psi_trigger(file, &o->pressure)) >= 0) {
			w->fds[w->n++] = fd;
			continue;
		}
		if (fd == -EINVAL)
			errx(MR_EXIT_USAGE, "%s: the kernel refuses the trigger '%s' (without "
			     "CAP_SYS_RESOURCE the window must be a whole number of 2 s): give "
			     "another with --pressure", mr_safe(file),
			     mr_pressure_text(&o->pressure, spec, sizeof(spec)));
		if (!o->interval_ms)
			errx(MR_EXIT_USAGE, "%s: %s: no memory pressure to wake on (PSI needs Linux 5.2 "
			     "and is off with psi=0); give --interval SECONDS to sweep on a timer",
			     mr_safe(file), strerror(-fd));
		if (o->verbose)
			warnx("%s: %s: sweeping on the timer alone", mr_safe(file), strerror(-fd));
		break;
	}
	if (o->verbose && w->n)
		warnx("waking on memory pressure '%s' of %s%s",
		      mr_pressure_text(&o->pressure, spec, sizeof(spec)),
		      own ? "each cgroup named" : "the system", o->interval_ms ? ", and the timer" : "");
	w->interval_us = (int64_t)o->interval_ms * 1000;
	w->next_us = w->interval_us ? mr_now_us() + w->interval_us : 0;
}

static bool said_before(const struct said *s, const struct mr_target *t)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].pid == t->pid && s->v[i].ino == t->ino && s->v[i].state == t->state)
			return true;
	return false;
}

/* The notes of a sweep worth saying in a service: each kind once, the
 * first time it comes (the counts each sweep makes are in its JSON); each
 * failure once (below). */
static void say_notes(const struct mr_options *o, const struct mr_run *run, bool *said_kind)
{
	for (size_t i = 0; i < run->nnotes; i++) {
		enum mr_note_kind k = run->notes[i].kind;

		if (said_kind[k] || k == MR_N_NOT_DYING || k == MR_N_LEFT_OTHER || k == MR_N_THREADS)
			continue;
		said_kind[k] = true;
		mr_report_note(run, &run->notes[i], o->verbose);
	}
}

/* One sweep: the run, then a line for each target released (or, in a dry
 * run, that would be) or failed, but those the last sweep said alike; with
 * --json the sweep's counts, of what it found new (the others are
 * "known"). */
static int sweep(const struct mr_options *o, struct mr_run *run, struct said *said,
		 bool *said_kind, struct mr_sweep *w, struct mr_follow_totals *f)
{
	static const struct mr_pidlist none;
	char text[32], when[40], buf[4096];
	struct said now;
	int r;

	mr_run_reset(run);
	r = mr_run(run, &none);
	now_text(text, sizeof(text), when, sizeof(when));
	now = (struct said){ calloc(run->ntargets + 1, sizeof(*now.v)), 0 };
	if (!now.v)
		err(MR_EXIT_FATAL, "the list of what was said");
	say_notes(o, run, said_kind);
	w->not_dying = run->not_dying;
	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];
		bool say = t->state == MR_RELEASED || t->state == MR_PREDICTED || t->state == MR_FAILED;

		w->targets += t->state != MR_LEFT_OUT;
		if (!say)
			continue;
		now.v[now.n++] = (struct seen){ t->pid, t->ino, t->state };
		if (said_before(said, t)) {
			w->known++;
			continue;
		}
		w->released += t->state == MR_RELEASED;
		w->failed += t->state == MR_FAILED;
		if (t->state == MR_RELEASED && t->before.rss_kb != MR_UNKNOWN &&
		    t->after.rss_kb != MR_UNKNOWN)
			w->freed_kb += t->before.rss_kb - t->after.rss_kb;
		if (t->state == MR_FAILED)
			warnx("pid %d: %s", (int)t->pid, mr_reason_text(run, t, buf, sizeof(buf)));
		if (!o->quiet)
			mr_report_follow_target(stdout, run, t, o->json ? when : text, o->json);
	}
	free(said->v);
	*said = now;
	w->elapsed_us = run->elapsed_us;
	if (o->json)
		mr_report_sweep(stdout, w, when);
	f->released += w->released;
	f->failed += w->failed;
	f->freed_kb += w->freed_kb;
	if (fflush(stdout) == EOF || ferror(stdout))
		warn("standard output");
	return r == -ECANCELED ? 0 : r;
}

int mr_follow(const struct mr_options *o, struct mr_run *run)
{
	struct wakeup w = { .n = 0 };
	struct mr_follow_totals f = { 0 };
	struct said said = { NULL, 0 };
	bool said_kind[MR_N_COUNT] = { false };
	char text[32], when[40];
	int r, status = MR_EXIT_OK;

	open_triggers(o, run, &w);
	if (!o->json && !o->quiet) {
		mr_report_follow_header(stdout);
		fflush(stdout);
	}
	while (!run->interrupted) {
		struct mr_sweep s = { .number = f.sweeps + 1 };

		r = mr_psi_wait(w.fds, w.n, w.interval_us ? w.next_us : INT64_MAX, &run->cfg.waitmask);
		if (r == -EINTR)
			break;
		if (r < 0) {
			errno = -r;
			warn("waiting for memory pressure");
			status = MR_EXIT_FATAL;
			break;
		}
		s.trigger = r ? "pressure" : "interval";
		if (w.interval_us && mr_now_us() >= w.next_us)
			w.next_us = mr_now_us() + w.interval_us;
		f.sweeps++;
		f.on_pressure += r == 1;
		f.on_interval += r == 0;
		if ((r = sweep(o, run, &said, said_kind, &s, &f))) {
			warnx("%s: %s", mr_safe(run->fatal), strerror(-r));
			status = MR_EXIT_FATAL;
			break;
		}
	}
	now_text(text, sizeof(text), when, sizeof(when));
	mr_report_follow_end(stdout, &f, o->json ? when : text, o->json);
	if (fflush(stdout) == EOF || ferror(stdout))
		status = MR_EXIT_FATAL;
	for (size_t i = 0; i < w.n; i++)
		close(w.fds[i]);
	free(said.v);
	return status;
}
