/* follow.c: --follow, mrelease as a service beside whatever kills on the
 * host. It sleeps until one of its sources wakes it:
 * - signals: each SIGKILL the kernel generates, whoever sends it (a
 *   tracepoint, killwatch.c); the process killed is released once --settle
 *   has passed, if it is dying then and inside the --cgroup or --unit
 *   filter, in parallel with its exit;
 * - pressure: a PSI trigger, which sweeps every process, as --dying does;
 * - the timer (--interval), which sweeps likewise.
 * SIGKILLs the kernel could not report (its ring was full) sweep every
 * process at once. Every sweep is the same run, with the same contracts,
 * as a one-shot mrelease, and it never sends a signal. What each sweep
 * released is said as it goes, each process once; with --json every line
 * on standard output is a JSON record, warnings included. It never hangs
 * on its output, standard output or, for the table's warnings, standard
 * error: a line the stream cannot take at once is dropped, and counted;
 * one it takes in part is finished before any other, as it takes more, so
 * that no line is torn; a write to standard output that fails ends it
 * (exit 3), one to standard error only ends its warnings. SIGINT, SIGTERM
 * or SIGHUP end it at once: the totals, then exit 0.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define MAX_TRIGGERS 8
/* Pids taken from the watch at a time. */
#define EVENTS_MAX 256
/* How long a SIGKILL of a child of mrelease's own may take to be seen. */
#define SELFTEST_MS 500

/* What was said of a dying process, by pid and pidfd inode: a process
 * that stays dying (stuck, or held by a freezer after its release) is
 * found by sweep after sweep, and is said again only when its fate
 * changes. */
struct seen {
	pid_t pid;
	uint64_t ino;
	enum mr_state state;
};

/* A dying process a run left out for the guard (robust.c): since when it
 * is known dying, and when to ask again. */
struct pending {
	pid_t pid;
	uint64_t ino;
	int64_t seen_us, check_us, backoff_us;
};

/* Standard output, or standard error. held: the rest of a line the
 * stream took in part, which goes out before any other; waits: its writes
 * cannot be asked not to wait (a regular file, which never stalls, or a
 * terminal); dead: a write failed; told: the dropped lines said so far. */
struct outlet {
	int fd;
	char *held;
	size_t nheld;
	bool waits, dead;
	uint64_t dropped, told;
};

struct follow {
	const struct mr_options *o;
	struct mr_run *run;
	struct mr_follow_start st;
	char why[MR_SRC_COUNT][1024];
	struct mr_killwatch *watch;
	int psi[MAX_TRIGGERS];
	int psi_cgroup[MAX_TRIGGERS]; /* the cgroup a trigger is on, or -1 */
	size_t npsi;
	int64_t interval_us, next_us;
	struct pending *pend;
	size_t npend, cappend;
	struct mr_pidlist aged; /* the pending dying for --settle, for a run */
	struct seen *said; /* by pid */
	size_t nsaid, capsaid, prune_at;
	bool said_kind[MR_N_COUNT];
	struct mr_follow_totals tot;
	int metrics_err;
	bool stop;
	/* Where warnings go: out with --json, or where both are one file;
	 * else err. */
	struct outlet out, err, *warn;
	int status;
};

/* Now, in UTC: to the second for the table, to the microsecond in JSON. */
static const char *now_text(const struct follow *f, char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (f->o->json)
		snprintf(buf + n, len - n, ".%06ldZ", ts.tv_nsec / 1000);
	else
		snprintf(buf + n, len - n, "Z");
	return buf;
}

/* It ends, with status, once this wakeup is done. */
static void stop(struct follow *f, int status)
{
	f->stop = true;
	if (f->status == MR_EXIT_OK)
		f->status = status;
}

/* Write what o takes now, without waiting: the bytes written, or -1 once
 * a write failed (which ends it, on standard output). */
static ssize_t out_write(struct follow *f, struct outlet *o, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct iovec v = { (char *)buf + done, len - done };
		ssize_t n = o->waits ? write(o->fd, v.iov_base, v.iov_len)
				     : pwritev2(o->fd, &v, 1, -1, RWF_NOWAIT);

		if (n < 0 && !o->waits && (errno == EOPNOTSUPP || errno == ENOSYS)) {
			o->waits = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno == EAGAIN))
			break;
		if (n < 0) {
			o->dead = true;
			if (o == &f->out) {
				warn("standard output");
				stop(f, MR_EXIT_FATAL);
			}
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Write what is held, as far as o takes it: whether all. */
static bool out_flush(struct follow *f, struct outlet *o)
{
	ssize_t n;

	if (!o->nheld)
		return true;
	if ((n = out_write(f, o, o->held, o->nheld)) < 0)
		return false;
	o->nheld -= (size_t)n;
	memmove(o->held, o->held + n, o->nheld);
	return !o->nheld;
}

/* Descriptor fd as an outlet that never waits: a pipe or FIFO gets an
 * open file description of its own, non-blocking (a FIFO takes no
 * RWF_NOWAIT), and the one it shares with others is left as it was; a
 * socket takes RWF_NOWAIT; a regular file, which never stalls, or a
 * terminal, is written plainly. In *st, what fd is. */
static void out_own(const struct follow *f, struct outlet *o, int fd, struct stat *st)
{
	char path[PATH_MAX];
	int own;

	o->fd = fd;
	if (fstat(fd, st))
		*st = (struct stat){ 0 };
	o->waits = !S_ISFIFO(st->st_mode) && !S_ISSOCK(st->st_mode);
	if (!S_ISFIFO(st->st_mode))
		return;
	snprintf(path, sizeof(path), "%s/self/fd/%d", f->run->cfg.proc, fd);
	if ((own = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return;
	dup2(own, fd);
	close(own);
}

/* Standard output and error. Warnings go where the records go with
 * --json (as records), and when both are the same file, so that a warning
 * never lands inside a record taken in part. */
static void outlets_open(struct follow *f)
{
	struct stat o, e;

	out_own(f, &f->out, STDOUT_FILENO, &o);
	out_own(f, &f->err, STDERR_FILENO, &e);
	f->warn = f->o->json || (o.st_dev == e.st_dev && o.st_ino == e.st_ino) ? &f->out : &f->err;
}

/* Whether o took all that is held, and has room for more, within wait_ms. */
static bool out_room(struct follow *f, struct outlet *o, int wait_ms)
{
	struct pollfd p = { .fd = o->fd, .events = POLLOUT };
	int64_t until = mr_now_us() + wait_ms * 1000LL;

	do {
		if (poll(&p, 1, wait_ms) <= 0)
			return false;
		if (out_flush(f, o))
			return true;
	} while (!o->dead && (wait_ms = (int)((until - mr_now_us()) / 1000)) > 0);
	return false;
}

/* Write a line (or lines) to o, if it can take some of it within wait_ms
 * (a reader that stopped reading never holds the service up), after what
 * is held; the rest of one taken in part is held. Whether it was written
 * whole. */
static bool put(struct follow *f, struct outlet *o, const char *buf, size_t len, int wait_ms)
{
	ssize_t n = 0;

	if (o->dead)
		return false;
	if (!out_room(f, o, wait_ms) || (n = out_write(f, o, buf, len)) <= 0) {
		if (!o->dead)
			o->dropped++;
		return false;
	}
	if ((size_t)n == len)
		return true;
	free(o->held);
	if (!(o->held = malloc(len - (size_t)n)))
		err(MR_EXIT_FATAL, "a record");
	memcpy(o->held, buf + n, len - (size_t)n);
	o->nheld = len - (size_t)n;
	return false;
}

/* A record, formatted in memory, then put whole. */
struct rec {
	FILE *m;
	char *buf;
	size_t len;
};

static FILE *rec_open(struct rec *r)
{
	if (!(r->m = open_memstream(&r->buf, &r->len)))
		err(MR_EXIT_FATAL, "a record");
	return r->m;
}

static void say(struct follow *f, const char *type, const char *fmt, ...);

/* Once o takes lines again: how many it could not. */
static void tell_dropped(struct follow *f, struct outlet *o)
{
	uint64_t dropped = o->dropped - o->told;

	if (!dropped)
		return;
	o->told = o->dropped;
	say(f, "warning", "%llu %s%s dropped: standard %s could not take %s then",
	    (unsigned long long)dropped, o == &f->out ? "record" : "warning",
	    dropped == 1 ? " was" : "s were", o == &f->out ? "output" : "error",
	    dropped == 1 ? "it" : "them");
}

static void put_told(struct follow *f, struct outlet *o, const char *buf, size_t len,
		     int wait_ms)
{
	if (put(f, o, buf, len, wait_ms))
		tell_dropped(f, o);
}

/* Put the record on o. */
static void rec_close_on(struct follow *f, struct rec *r, struct outlet *o, int wait_ms)
{
	if (fclose(r->m) == EOF)
		err(MR_EXIT_FATAL, "a record");
	put_told(f, o, r->buf, r->len, wait_ms);
	free(r->buf);
}

static void rec_close(struct follow *f, struct rec *r, int wait_ms)
{
	rec_close_on(f, r, &f->out, wait_ms);
}

/* A warning (or the error that ends it): a line on stderr, as warnx(3)
 * writes it, or with --json a record on standard output, so that every
 * line there is JSON. */
static void say(struct follow *f, const char *type, const char *fmt, ...)
{
	char msg[MR_SAFE_LEN], when[40];
	struct rec r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rec_open(&r);
	if (f->o->json)
		mr_report_message(r.m, type, msg, now_text(f, when, sizeof(when)));
	else
		fprintf(r.m, "%s: %s\n", program_invocation_short_name, msg);
	rec_close_on(f, &r, f->warn, 0);
}

/* Why source s is not used: said in the start record. false. */
static bool declined(struct follow *f, enum mr_source s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->why[s], sizeof(f->why[s]), fmt, ap);
	va_end(ap);
	f->st.declined[s] = f->why[s];
	return false;
}

/* Why the kernel refused the tracepoint: Debian and Ubuntu kernels carry
 * a level of perf_event_paranoid above 2 (their default: 3, and 4), at
 * which only CAP_SYS_ADMIN may open it, whatever else the caller holds. */
static bool refused(struct follow *f, int r)
{
	int level;

	if (mr_perf_paranoid(&level) == 0 && level > 2)
		return declined(f, MR_SRC_SIGNALS, "perf_event_open: %s: kernel.perf_event_paranoid "
				"is %d, at which this kernel lets only CAP_SYS_ADMIN open a tracepoint; "
				"give the service CAP_SYS_ADMIN, or set the sysctl to 2", strerror(-r),
				level);
	return declined(f, MR_SRC_SIGNALS, "perf_event_open: %s: a tracepoint on every CPU needs "
			"CAP_PERFMON (Linux 5.8) or CAP_SYS_ADMIN", strerror(-r));
}

/* Whether the SIGKILLs the watch reports carry our pids: a child of our
 * own, killed, must come back with its pid as we see it (the kernel
 * reports pids of the initial pid namespace). It forks: called before any
 * thread is started. */
static bool ours(struct follow *f)
{
	int r = mr_killwatch_selftest(f->watch, SELFTEST_MS);

	if (r == -EXDEV)
		return declined(f, MR_SRC_SIGNALS, "another pid namespace: the kernel reports the "
				"pids of the initial one, which name other processes here (run it on "
				"the host, or with hostPID)");
	if (r == -ETIMEDOUT)
		return declined(f, MR_SRC_SIGNALS, "a SIGKILL of a child of its own was not seen "
				"within %d ms: the events cannot be shown to carry its pids",
				SELFTEST_MS);
	if (r)
		return declined(f, MR_SRC_SIGNALS, "checking the events' pids: %s", strerror(-r));
	return true;
}

/* Signals: the tracepoint signal:signal_generate on every CPU, filtered to
 * SIGKILL, from the tracefs mount mountinfo shows (never mounted here). */
static bool open_signals(struct follow *f)
{
	char mountinfo[PATH_MAX], tracefs[PATH_MAX], id[PATH_MAX + 64];
	int r;

	if (f->o->no_signals)
		return declined(f, MR_SRC_SIGNALS, "turned off (--no-signals)");
	snprintf(mountinfo, sizeof(mountinfo), "%s/self/mountinfo", f->run->cfg.proc);
	if ((r = mr_tracefs_find(mountinfo, tracefs, sizeof(tracefs))) == -ENOENT)
		return declined(f, MR_SRC_SIGNALS, "no tracefs mounted (systemd mounts it at boot; "
				"mount -t tracefs nodev /sys/kernel/tracing)");
	if (r)
		return declined(f, MR_SRC_SIGNALS, "%s: %s", mountinfo, strerror(-r));
	snprintf(id, sizeof(id), "%s/events/signal/signal_generate/id", tracefs);
	if (access(id, R_OK))
		return declined(f, MR_SRC_SIGNALS, "%s: %s", mr_safe(id), strerror(errno));
	if ((r = mr_killwatch_open(&f->watch, tracefs)) == -EACCES || r == -EPERM)
		return refused(f, r);
	if (r)
		return declined(f, MR_SRC_SIGNALS, "perf_event_open: %s", strerror(-r));
	if (ours(f))
		return true;
	mr_killwatch_close(f->watch);
	f->watch = NULL;
	return false;
}

/* Pressure: a trigger on each cgroup named, where every one is a cgroup v2
 * with memory.pressure; else one on the system (/proc/pressure/memory). A
 * trigger the kernel refuses is a usage error: it was asked for. */
static bool open_pressure(struct follow *f)
{
	const struct mr_run *run = f->run;
	char file[PATH_MAX], spec[64];
	bool own = run->ncgroups && run->ncgroups <= MAX_TRIGGERS;
	int fd;

	if (f->o->no_pressure)
		return declined(f, MR_SRC_PRESSURE, "turned off (--no-pressure)");
	for (size_t c = 0; own && c < run->ncgroups; c++)
		own = run->cgroups[c].v2 && mr_file_in(run->cgroups[c].path, "memory.pressure");
	for (size_t c = 0; c < (own ? run->ncgroups : 1); c++) {
		if (own)
			snprintf(file, sizeof(file), "%s/memory.pressure", run->cgroups[c].path);
		else
			snprintf(file, sizeof(file), "%s/pressure/memory", run->cfg.proc);
		if ((fd = mr_psi_trigger(file, &f->o->pressure)) >= 0) {
			f->psi_cgroup[f->npsi] = own ? (int)c : -1;
			f->psi[f->npsi++] = fd;
			continue;
		}
		if (fd == -EINVAL)
			errx(MR_EXIT_USAGE, "%s: the kernel refuses the trigger '%s' (without "
			     "CAP_SYS_RESOURCE the window must be a whole number of 2 s): give "
			     "another with --pressure", mr_safe(file),
			     mr_pressure_text(&f->o->pressure, spec, sizeof(spec)));
		while (f->npsi)
			close(f->psi[--f->npsi]);
		return declined(f, MR_SRC_PRESSURE, "%s: %s (PSI needs Linux 5.2, and is off with "
				"psi=0)", mr_safe(file), strerror(-fd));
	}
	return true;
}

static void open_sources(struct follow *f)
{
	const struct mr_options *o = f->o;

	f->st.o = o;
	f->st.used[MR_SRC_SIGNALS] = open_signals(f);
	f->st.used[MR_SRC_PRESSURE] = open_pressure(f);
	f->st.used[MR_SRC_TIMER] = o->interval_ms || declined(f, MR_SRC_TIMER, "no --interval");
	f->interval_us = (int64_t)o->interval_ms * 1000;
	f->next_us = mr_now_us() + f->interval_us;
	if (!f->st.used[MR_SRC_SIGNALS] && !f->st.used[MR_SRC_PRESSURE] && !o->interval_ms)
		errx(MR_EXIT_USAGE, "nothing to wake on: signals: %s; pressure: %s; give --interval "
		     "SECONDS to sweep on a timer", f->why[MR_SRC_SIGNALS], f->why[MR_SRC_PRESSURE]);
}

/* The said entry of pid, or where it goes. */
static size_t said_at(const struct follow *f, pid_t pid)
{
	size_t lo = 0, hi = f->nsaid;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->said[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool said_before(const struct follow *f, const struct mr_target *t)
{
	size_t i = said_at(f, t->pid);

	return i < f->nsaid && f->said[i].pid == t->pid && f->said[i].ino == t->ino &&
	       f->said[i].state == t->state;
}

/* What is said of t, kept: the set holds processes that may still be
 * dying, and is pruned of those gone as it doubles, so that its size
 * follows how many are dying at once, not how many ever were. */
static void remember(struct follow *f, const struct mr_target *t)
{
	size_t i = said_at(f, t->pid), k = 0;

	if (i < f->nsaid && f->said[i].pid == t->pid) {
		f->said[i] = (struct seen){ t->pid, t->ino, t->state };
		return;
	}
	if (f->nsaid == f->capsaid) {
		size_t cap = f->capsaid ? 2 * f->capsaid : 64;
		struct seen *v = reallocarray(f->said, cap, sizeof(*v));

		if (!v)
			err(MR_EXIT_FATAL, "the list of what was said");
		f->said = v;
		f->capsaid = cap;
	}
	memmove(&f->said[i + 1], &f->said[i], (f->nsaid - i) * sizeof(*f->said));
	f->said[i] = (struct seen){ t->pid, t->ino, t->state };
	if (++f->nsaid < f->prune_at)
		return;
	for (size_t j = 0; j < f->nsaid; j++)
		if (kill(f->said[j].pid, 0) == 0 || errno != ESRCH)
			f->said[k++] = f->said[j];
	f->nsaid = k;
	f->prune_at = 2 * k > 64 ? 2 * k : 64;
}

/* Whether e is of a process the run found dying: said, or left out by the
 * guard (targets are in pid order once a run is over). */
static bool found_dying(const struct mr_run *run, const struct seen *e)
{
	size_t lo = 0, hi = run->ntargets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (run->targets[mid].pid < e->pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < run->ntargets && run->targets[lo].pid == e->pid; lo++) {
		const struct mr_target *t = &run->targets[lo];

		if (t->ino == e->ino &&
		    (t->state == MR_RELEASED || t->state == MR_PREDICTED || t->state == MR_FAILED ||
		     (t->state == MR_LEFT_OUT && (t->reason == MR_R_ROBUST || t->reason == MR_R_ON_CPU))))
			return true;
	}
	return false;
}

/* The notes of a run worth saying in a service: each kind once, the first
 * time it comes (the counts each sweep makes are in its record). */
static void say_notes(struct follow *f)
{
	const struct mr_run *run = f->run;
	char buf[MR_SAFE_LEN];

	for (size_t i = 0; i < run->nnotes; i++) {
		enum mr_note_kind k = run->notes[i].kind;

		if (f->said_kind[k] || k == MR_N_NOT_DYING || k == MR_N_LEFT_OTHER ||
		    k == MR_N_THREADS || k == MR_N_BATCHES)
			continue;
		f->said_kind[k] = true;
		if (mr_note_text(run, &run->notes[i], f->o->verbose, buf, sizeof(buf)))
			say(f, "warning", "%s", buf);
	}
}

/* What a sweep found: a record for each target released (or, in a dry run,
 * that would be) or failed, but those said before alike; after a sweep of
 * every process, the said set is what it found. */
static void tell(struct follow *f, struct mr_sweep *w)
{
	const struct mr_options *o = f->o;
	const struct mr_run *run = f->run;
	bool whole = w->trigger != MR_T_SIGNALS && w->trigger != MR_T_SETTLE;
	char when[40], reason[4096];
	struct rec r;

	say_notes(f);
	now_text(f, when, sizeof(when));
	w->not_dying = run->not_dying;
	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];

		w->targets += t->state != MR_LEFT_OUT;
		if (t->state != MR_RELEASED && t->state != MR_PREDICTED && t->state != MR_FAILED)
			continue;
		if (said_before(f, t)) {
			w->known++;
			continue;
		}
		w->released += t->state == MR_RELEASED;
		w->failed += t->state == MR_FAILED;
		if (t->state == MR_RELEASED && t->before.rss_kb != MR_UNKNOWN &&
		    t->after.rss_kb != MR_UNKNOWN)
			w->freed_kb += t->before.rss_kb - t->after.rss_kb;
		if (t->state == MR_FAILED)
			say(f, "warning", "pid %d: %s", (int)t->pid,
			    mr_reason_text(run, t, reason, sizeof(reason)));
		if (!o->quiet) {
			rec_open(&r);
			mr_report_follow_target(r.m, run, t, when, o->json);
			rec_close(f, &r, 0);
		}
	}
	/* A sweep of every process found every one still dying: what was said
	 * of the others is forgotten. */
	if (whole) {
		size_t k = 0;

		for (size_t i = 0; i < f->nsaid; i++)
			if (found_dying(run, &f->said[i]))
				f->said[k++] = f->said[i];
		f->nsaid = k;
	}
	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];

		if (t->state == MR_RELEASED || t->state == MR_PREDICTED || t->state == MR_FAILED)
			remember(f, t);
	}
	if (o->json && !o->quiet && (w->released || w->failed || o->verbose)) {
		rec_open(&r);
		mr_report_sweep(r.m, w, when);
		rec_close(f, &r, 0);
	}
	f->tot.released += w->released;
	f->tot.failed += w->failed;
	f->tot.freed_kb += w->freed_kb;
}

static void write_metrics(struct follow *f)
{
	int r;

	if (!f->o->metrics)
		return;
	/* Each new error once, not at every sweep. */
	if ((r = mr_metrics_write(f->o->metrics, &f->tot, &f->st)) && r != f->metrics_err)
		say(f, "warning", "--metrics %s: %s", mr_safe(f->o->metrics), strerror(-r));
	f->metrics_err = r;
}

/* Cgroup c, followed, was removed: nothing is left to follow there. */
static void cgroup_gone(struct follow *f, size_t c)
{
	say(f, "error", "cgroup %s was removed: nothing is left to follow there; ending (exit 1)",
	    mr_safe(f->run->cgroups[c].path));
	stop(f, MR_EXIT_NONE);
}

/* Whether a cgroup followed is gone, which a run's failed listing may
 * mean; then it ends. */
static bool any_cgroup_gone(struct follow *f)
{
	for (size_t c = 0; c < f->run->ncgroups; c++)
		if (access(f->run->cgroups[c].path, F_OK) && errno == ENOENT) {
			cgroup_gone(f, c);
			return true;
		}
	return false;
}

/* The pending entry of pid, or f->npend. */
static size_t pending_at(const struct follow *f, pid_t pid)
{
	size_t i = 0;

	while (i < f->npend && f->pend[i].pid != pid)
		i++;
	return i;
}

/* What a run did with the processes the guard concerns: one it left out is
 * pending (known dying since it was first left out), and is asked again
 * soon where a thread may still be running its own code (backing off), or
 * once --settle has passed; one it did anything else with is not pending
 * any more. */
static void keep_pending(struct follow *f, int64_t now)
{
	const struct mr_run *run = f->run;

	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];
		bool guarded = t->state == MR_LEFT_OUT &&
			       (t->reason == MR_R_ROBUST || t->reason == MR_R_ON_CPU);
		size_t k = pending_at(f, t->pid);
		struct pending *p;

		if (k < f->npend && (!guarded || f->pend[k].ino != t->ino))
			f->pend[k] = f->pend[--f->npend];
		if (!guarded)
			continue;
		if ((k = pending_at(f, t->pid)) == f->npend) {
			if (f->npend == f->cappend) {
				size_t cap = f->cappend ? 2 * f->cappend : 16;

				if (!(p = reallocarray(f->pend, cap, sizeof(*p))))
					err(MR_EXIT_FATAL, "the list of the processes pending");
				f->pend = p;
				f->cappend = cap;
			}
			f->pend[f->npend++] = (struct pending){ t->pid, t->ino, now, 0, 0 };
		}
		p = &f->pend[k];
		p->check_us = p->seen_us + (int64_t)f->o->settle_ms * 1000;
		if (t->reason == MR_R_ON_CPU) {
			p->backoff_us = p->backoff_us ? 2 * p->backoff_us : 1000;
			if (now + p->backoff_us < p->check_us)
				p->check_us = now + p->backoff_us;
		}
	}
}

static int by_pidspec(const void *x, const void *y)
{
	const struct mr_pidspec *a = x, *b = y;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

/* The pending dying for --settle at least: a run releases them whatever
 * the guard says, as the kernel's OOM reaper does after its 2 s. */
static void age(struct follow *f, int64_t now)
{
	f->aged.len = 0;
	for (size_t i = 0; i < f->npend; i++)
		if (f->pend[i].seen_us + (int64_t)f->o->settle_ms * 1000 <= now &&
		    mr_pidlist_add(&f->aged, (struct mr_pidspec){ f->pend[i].pid, false,
							     f->pend[i].ino }))
			err(MR_EXIT_FATAL, "the list of the processes pending");
	if (f->aged.len)
		qsort(f->aged.v, f->aged.len, sizeof(*f->aged.v), by_pidspec);
}

/* One sweep: the run (of the processes seen killed, or pending, pids[0..n);
 * or of every process), then what it found. */
static void sweep(struct follow *f, enum mr_trigger trigger, const pid_t *pids, size_t n)
{
	struct mr_sweep w = { .number = f->tot.sweeps + 1, .trigger = trigger };
	struct mr_pidlist named = { 0 };
	int64_t start = mr_now_us();
	int r = 0;

	for (size_t i = 0; !r && i < n; i++)
		r = mr_pidlist_add(&named, (struct mr_pidspec){ .pid = pids[i], .stdin = true });
	if (r)
		err(MR_EXIT_FATAL, "the pids seen killed");
	age(f, start);
	mr_run_reset(f->run);
	f->run->cfg.robust_guard = f->o->settle_ms > 0;
	f->run->cfg.aged = &f->aged;
	r = mr_run(f->run, &named);
	mr_pidlist_free(&named);
	/* The next run forgets it (mr_run_reset): a signal that stopped this
	 * one ends the service, after what this one did is said. */
	if (f->run->interrupted)
		stop(f, MR_EXIT_OK);
	w.elapsed_us = mr_now_us() - start;
	f->tot.sweeps++;
	f->tot.by_trigger[trigger]++;
	keep_pending(f, start);
	tell(f, &w);
	if (r && r != -ECANCELED && !any_cgroup_gone(f)) {
		say(f, "error", "%s: %s", mr_safe(f->run->fatal), strerror(-r));
		stop(f, MR_EXIT_FATAL);
	}
	write_metrics(f);
}

/* Whether pid, seen killed, is worth a run: dying, as /proc/PID/stat says
 * it (one read: a SIGKILL of a process gone already costs that), and held
 * by a cgroup named, if any (one read of /proc/PID/cgroup). The run checks
 * both again, through a pidfd. */
static bool worth(const struct follow *f, pid_t pid)
{
	const struct mr_run *run = f->run;

	if (mr_proc_may_be_dying(run->cfg.proc, pid) <= 0)
		return false;
	for (size_t c = 0; c < run->ncgroups; c++)
		if (mr_cgroup_holds(run->cfg.proc, &run->cgroups[c], pid, -1, run->cfg.recursive) == 1)
			return true;
	return !run->ncgroups;
}

/* The pending whose time to be asked again has come, in one run; those
 * gone meanwhile (or no longer dying) are not pending any more. */
static void ask_again(struct follow *f)
{
	int64_t now = mr_now_us();
	size_t n = 0, k = 0;
	pid_t *v = calloc(f->npend ? f->npend : 1, sizeof(*v));

	if (!v)
		err(MR_EXIT_FATAL, "the list of the processes pending");
	for (size_t i = 0; i < f->npend; i++) {
		struct pending p = f->pend[i];

		if (p.check_us > now) {
			f->pend[k++] = p;
		} else if (worth(f, p.pid)) {
			f->pend[k++] = p;
			v[n++] = p.pid;
		}
	}
	f->npend = k;
	if (n)
		sweep(f, MR_T_SETTLE, v, n);
	/* One the run left out of its targets (no longer listed in a cgroup
	 * named, as a zombie is not) is not pending any more: asked again at
	 * once, it would be asked for ever. */
	k = 0;
	for (size_t i = 0; i < f->npend; i++)
		if (f->pend[i].check_us > now)
			f->pend[k++] = f->pend[i];
	f->npend = k;
	free(v);
}

/* The SIGKILLs the watch holds: their processes, those worth it, released
 * in one run; those the kernel lost sweep every process at once. */
static void take_events(struct follow *f)
{
	pid_t pids[EVENTS_MAX];
	uint64_t lost = 0;
	size_t n, k;
	int r;

	do {
		if ((r = mr_killwatch_read(f->watch, pids, EVENTS_MAX, &n, &lost)) < 0 && r != -EPROTO) {
			say(f, "error", "reading the SIGKILLs seen: %s", strerror(-r));
			stop(f, MR_EXIT_FATAL);
			return;
		}
		f->tot.events += n;
		k = 0;
		for (size_t i = 0; i < n; i++) {
			pid_t tgid;

			if (!worth(f, pids[i]))
				continue;
			/* A SIGKILL sent to a thread (tgkill, or the OOM killer's
			 * pick) kills its whole process: the event names the
			 * thread. */
			if (mr_proc_tgid(f->run->cfg.proc, pids[i], &tgid) == 0)
				pids[i] = tgid;
			pids[k++] = pids[i];
		}
		if (k && !f->stop)
			sweep(f, MR_T_SIGNALS, pids, k);
	} while (r == 1 && !f->stop);
	f->tot.lost += lost;
	if (lost && !f->stop)
		sweep(f, MR_T_LOST, NULL, 0);
}

/* Sleep until a source wakes it (or a pending process is to be asked
 * again), then do what it asks. A signal that ends it ends the sleep. */
static void wake(struct follow *f)
{
	struct pollfd p[MAX_TRIGGERS + 3]; /* the watch, the triggers, two outlets */
	int64_t until = f->interval_us ? f->next_us : INT64_MAX, left;
	struct timespec ts;
	size_t n = 0, ntrig;
	bool pressure = false;

	if (f->watch)
		p[n++] = (struct pollfd){ .fd = mr_killwatch_fd(f->watch), .events = POLLIN };
	for (size_t i = 0; i < f->npsi; i++)
		p[n++] = (struct pollfd){ .fd = f->psi[i], .events = POLLPRI };
	ntrig = n;
	if (f->out.nheld)
		p[n++] = (struct pollfd){ .fd = f->out.fd, .events = POLLOUT };
	if (f->err.nheld)
		p[n++] = (struct pollfd){ .fd = f->err.fd, .events = POLLOUT };
	for (size_t i = 0; i < f->npend; i++)
		if (f->pend[i].check_us < until)
			until = f->pend[i].check_us;
	left = until == INT64_MAX ? 0 : until - mr_now_us();
	ts = (struct timespec){ left > 0 ? left / 1000000 : 0, left > 0 ? left % 1000000 * 1000 : 0 };
	if (ppoll(p, n, until == INT64_MAX ? NULL : &ts, &f->run->cfg.waitmask) < 0) {
		if (errno == EINTR) {
			stop(f, MR_EXIT_OK);
			return;
		}
		say(f, "error", "waiting for what wakes it: %s", strerror(errno));
		stop(f, MR_EXIT_FATAL);
		return;
	}
	/* A trigger on a cgroup that is removed polls POLLERR. */
	for (size_t i = f->watch ? 1 : 0; i < ntrig; i++) {
		int c = f->psi_cgroup[i - (f->watch ? 1 : 0)];

		if ((p[i].revents & (POLLERR | POLLNVAL)) && c >= 0) {
			cgroup_gone(f, (size_t)c);
			return;
		}
		if (p[i].revents & (POLLERR | POLLNVAL)) {
			say(f, "error", "%s/pressure/memory: the trigger went away", f->run->cfg.proc);
			stop(f, MR_EXIT_FATAL);
			return;
		}
		pressure |= p[i].revents & POLLPRI;
	}
	for (size_t i = ntrig; i < n; i++) {
		struct outlet *o = p[i].fd == f->out.fd ? &f->out : &f->err;

		if (p[i].revents && out_flush(f, o))
			tell_dropped(f, o);
	}
	if (f->watch && (p[0].revents & POLLIN))
		take_events(f);
	if (pressure && !f->stop)
		sweep(f, MR_T_PRESSURE, NULL, 0);
	if (f->interval_us && mr_now_us() >= f->next_us && !f->stop) {
		sweep(f, MR_T_TIMER, NULL, 0);
		f->next_us = mr_now_us() + f->interval_us;
	}
	if (!f->stop)
		ask_again(f);
}

int mr_follow(const struct mr_options *o, struct mr_run *run)
{
	struct follow f = { .o = o, .run = run, .status = MR_EXIT_OK, .prune_at = 64 };
	char when[40];
	struct rec r;

	outlets_open(&f);
	open_sources(&f);
	if (o->stdout_closed && !o->quiet)
		warnx("standard output was closed: its records go nowhere");
	if (!o->quiet) {
		rec_open(&r);
		mr_report_follow_start(r.m, &f.st, now_text(&f, when, sizeof(when)));
		if (!o->json)
			mr_report_follow_header(r.m);
		rec_close(&f, &r, 1000);
	}
	sweep(&f, MR_T_START, NULL, 0);
	while (!f.stop)
		wake(&f);
	if (!f.out.dead) {
		f.tot.dropped = f.out.dropped;
		f.out.told = f.out.dropped; /* the summary counts them */
		rec_open(&r);
		mr_report_follow_end(r.m, &f.tot, now_text(&f, when, sizeof(when)), o->json);
		rec_close(&f, &r, 1000);
	}
	write_metrics(&f);
	mr_killwatch_close(f.watch);
	for (size_t i = 0; i < f.npsi; i++)
		close(f.psi[i]);
	free(f.out.held);
	free(f.err.held);
	free(f.pend);
	free(f.said);
	mr_pidlist_free(&f.aged);
	return f.status;
}
