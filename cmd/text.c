/* text.c: what the report and the diagnostics both say: names escaped for
 * the terminal, the sentence templates and the one expander that fills
 * them in, why a target failed or has no figures, and which targets count
 * as selected and as done. report.c and diag.c depend on this file, not on
 * each other. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The fields a template may name:
 *   %p pid       %C " (comm)", or nothing when the name is unknown
 *   %c comm, or "it"          %g the cgroup's path
 *   %n n         %s "s" unless n is 1      %m m, a second count
 *   %e strerror(errnum)       %S the signal's name
 *   %t n ms as seconds        %b the release bound in seconds
 *   %B MR_READ_BOUND_MS       %r the cgroup's listings
 *   %a "kill" with --kill, else "release"       %A "killed", else "released"
 *   %D "sent", else "released" (what an interrupted run does no more)
 *   %i the pidfs inode        %T the thread group
 *   %N the nice value asked for */
static const struct mr_text reason_texts[] = {
	[MR_R_NONE] = { true, NULL, NULL },
	[MR_R_NO_PROCESS] = { true, "no such process", NULL },
	[MR_R_INIT] = { true, "refusing to %a the init process", NULL },
	[MR_R_SELF] = { true, "refusing to %a mrelease itself", NULL },
	[MR_R_ANCESTOR] = { true, "refusing to %a %c, an ancestor of mrelease", NULL },
	[MR_R_KTHREAD] = { true, "a kernel thread; it has no memory of its own to release", NULL },
	[MR_R_THREAD] = { true, "a thread of process %T, not a process", NULL },
	[MR_R_INODE] = { true, "not the process with pidfs inode %i; the pid was reused", NULL },
	[MR_R_NO_PIDFS] = { true, "no pidfs before Linux 6.9: cannot check PID:INODE", NULL },
	[MR_R_NO_PIDFD] = { true, "no pidfd_open (Linux 5.3), or a seccomp filter: nothing to act with", NULL },
	[MR_R_OPEN] = { true, "cannot open a pidfd: %e", NULL },
	[MR_R_FIRST] = { true, "cannot send it %S: %e", NULL },
	[MR_R_KILL] = { true, "cannot kill it: %e", NULL },
	[MR_R_RELEASE] = { true, "cannot release it: %e", NULL },
	[MR_R_FILTERED] = { true, "cannot release it: a seccomp filter refused process_mrelease "
			  "(EPERM, which the call itself never returns): allow it (syscall 448) in the "
			  "filter, e.g. SystemCallFilter=process_mrelease in a unit, "
			  "--system-call-filter=process_mrelease for systemd-nspawn, or the container "
			  "runtime's seccomp profile", NULL },
	[MR_R_NOT_EXITING] = { true, "not exiting; use --kill", NULL },
	[MR_R_SHARED_MM] = { true, "killed, but not released: its address space is shared with a live "
			   "process (vfork or CLONE_VM)", NULL },
	[MR_R_COREDUMP] = { true, "dumping core: the kernel releases none of its memory until the "
			  "dump ends", NULL },
	[MR_R_NOSYS] = { true, "no process_mrelease here, and it did not exit within the wait", NULL },
	[MR_R_STUCK] = { true, "its release did not return in %b s (a task holding its memory map's "
		       "lock stuck in the kernel?); left behind", NULL },
	[MR_R_NO_WORKER] = { true, "not released: every worker thread is stuck in another release", NULL },
	[MR_R_MEMBERSHIP] = { true, "cannot tell whether it is still in its cgroup: %e; not signalled", NULL },
	[MR_R_STOPPED] = { true, "not killed: the run stopped at a cgroup it refused", NULL },
	[MR_R_UNPROVEN] = { true, "its pidfd was closed to make room (ulimit -n), and the process its "
			  "pid names now cannot be proven the same one: not acted on", NULL },
	[MR_R_LEFT] = { true, "left its cgroup before the kill", NULL },
	[MR_R_GONE] = { true, "gone before it was opened", NULL },
	[MR_R_NOT_DYING] = { true, "not dying", NULL },
	[MR_R_ROBUST] = { true, "it may hold a robust lock that its own exit must mark for another "
			"process; left to exit by itself for the settle time", NULL },
	[MR_R_ON_CPU] = { true, "a thread of it may still run its own code; asked again soon", NULL },
};

static const char *const figure_texts[] = {
	[MR_FIG_UNREAD] = NULL,
	[MR_FIG_READ] = NULL,
	[MR_FIG_ERRNO] = "/proc/%p/%f: %e",
	[MR_FIG_GIVEN_UP] = "not read within %B ms; given up",
	[MR_FIG_NO_THREAD] = "no worker thread to read them on without delaying the kill",
	[MR_FIG_LATE] = "found by a later listing, just before its kill",
};

/* Four buffers in turn, so that one message can hold four names. */
const char *mr_safe(const char *s)
{
	static char bufs[4][MR_SAFE_LEN];
	static unsigned int next;

	return mr_text_escape(s, bufs[next++ % 4], sizeof(bufs[0]));
}

static const char *field(const struct mr_fields *f, char c, char *tmp, size_t len)
{
	const struct mr_run *run = f->run;

	switch (c) {
	case 'p': snprintf(tmp, len, "%d", (int)f->pid); return tmp;
	case 'C':
		if (!f->comm || !*f->comm)
			return "";
		snprintf(tmp, len, " (%s)", mr_safe(f->comm));
		return tmp;
	case 'c': return f->comm && *f->comm ? mr_safe(f->comm) : "it";
	case 'g':
		return f->cgroup >= 0 && (size_t)f->cgroup < run->ncgroups ?
			       mr_safe(run->cgroups[f->cgroup].path) : "?";
	case 'n': snprintf(tmp, len, "%zu", f->n); return tmp;
	case 'm': snprintf(tmp, len, "%zu", f->m); return tmp;
	case 's': return f->n == 1 ? "" : "s";
	case 'e': return strerror(f->errnum);
	case 'S': return mr_signal_name(f->sig) ? mr_signal_name(f->sig) : "?";
	case 't': snprintf(tmp, len, "%.1f s", (double)f->n / 1000); return tmp;
	case 'b': snprintf(tmp, len, "%.1f", (double)run->bound_ms / 1000); return tmp;
	case 'B': snprintf(tmp, len, "%d", MR_READ_BOUND_MS); return tmp;
	case 'r': snprintf(tmp, len, "%u", f->cgroup >= 0 ? run->cgroups[f->cgroup].rounds : 0);
		return tmp;
	case 'a': return run->cfg.kill ? "kill" : "release";
	case 'A': return run->cfg.kill ? "killed" : "released";
	case 'D': return run->cfg.kill ? "sent" : "released";
	case 'i': snprintf(tmp, len, "%llu", f->t ? (unsigned long long)f->t->ino : 0ULL); return tmp;
	case 'T': snprintf(tmp, len, "%d", f->t ? (int)f->t->tgid : 0); return tmp;
	case 'f': return f->t && f->t->fig_file ? f->t->fig_file : "?";
	case 'N': snprintf(tmp, len, "%d", run->cfg.sched.nice); return tmp;
	case '%': return "%";
	default: return "?";
	}
}

const char *mr_expand(const char *fmt, const struct mr_fields *f, char *buf, size_t len)
{
	size_t w = 0;

	buf[0] = '\0';
	for (const char *p = fmt; *p && w + 1 < len; p++) {
		char tmp[64];
		const char *v;

		if (*p != '%' || !p[1]) {
			buf[w++] = *p;
			buf[w] = '\0';
			continue;
		}
		v = field(f, *++p, tmp, sizeof(tmp));
		w += (size_t)snprintf(buf + w, len - w, "%s", v);
		if (w >= len)
			w = len - 1;
	}
	return buf;
}

static struct mr_fields target_fields(const struct mr_run *run, const struct mr_target *t)
{
	return (struct mr_fields){ .run = run, .pid = t->pid, .comm = t->comm, .cgroup = t->cgroup,
				   .errnum = t->errnum,
				   .sig = t->reason == MR_R_FIRST ? run->cfg.first_signal : t->signal,
				   .t = t };
}

/* Why a target failed or was left out, or NULL. */
const char *mr_reason_text(const struct mr_run *run, const struct mr_target *t, char *buf,
			   size_t len)
{
	struct mr_fields f = target_fields(run, t);

	if (t->state == MR_INTERRUPTED)
		return "interrupted";
	if (!reason_texts[t->reason].fmt)
		return NULL;
	return mr_expand(reason_texts[t->reason].fmt, &f, buf, len);
}

/* Why a target's figures are null, or NULL. */
const char *mr_figures_text(const struct mr_run *run, const struct mr_target *t, char *buf,
			    size_t len)
{
	struct mr_fields f = target_fields(run, t);

	f.errnum = t->fig_errnum;
	if (!figure_texts[t->figures])
		return NULL;
	mr_expand(figure_texts[t->figures], &f, buf, len);
	if (t->figures == MR_FIG_ERRNO && t->fig_errnum == ENOENT)
		strncat(buf, " (hidden by hidepid?)", len - strlen(buf) - 1);
	return buf;
}

/* Done, for the exit status: released (and, when --wait asked for it,
 * gone), gone by itself, or in a dry run, would be. */
bool mr_target_done(const struct mr_target *t)
{
	return (t->state == MR_RELEASED && t->waited != MR_WAITED_RUNNING) || t->state == MR_EXITED ||
	       t->state == MR_PREDICTED;
}

/* The targets that are rows: all but those left out, the named pids that
 * have no process, and the selected pids no batch reached. */
size_t mr_selected(const struct mr_run *run)
{
	size_t n = run->nmissing + run->nunreached;

	for (size_t i = 0; i < run->ntargets; i++)
		n += run->targets[i].state != MR_LEFT_OUT;
	return n;
}

