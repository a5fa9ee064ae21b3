/* diag.c: what mrelease says on stderr. Every sentence is a template in a
 * table (notes, reasons, refusals), filled in by one expander from typed
 * fields, and every name that goes into one is escaped for the terminal. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* A sentence, and when it is said: always, or only with --verbose (a
 * target's reason is always said). */
struct text {
	bool always;
	const char *fmt;
	const char *if_zero; /* said instead when n is 0 */
};

/* The fields a template may name:
 *   %p pid       %C " (comm)", or nothing when the name is unknown
 *   %c comm, or "it"          %g the cgroup's path
 *   %n n         %s "s" unless n is 1
 *   %e strerror(errnum)       %S the signal's name
 *   %t n ms as seconds        %b the release bound in seconds
 *   %B MR_READ_BOUND_MS       %r the cgroup's listings
 *   %a "kill" with --kill, else "release"
 *   %i the pidfs inode        %T the thread group
 *   %N the nice value asked for */
static const struct text note_texts[] = {
	[MR_N_THREADS] = { false, "releasing on %n worker thread%s",
			   "no worker thread could be started: releasing on the main thread, "
			   "and reading no figures before the kill" },
	[MR_N_THREADS_SHORT] = { false, "only %n worker thread%s could be started: %e", NULL },
	[MR_N_NICE] = { true, "cannot set nice value %N for the releases: %e; releasing at "
			"mrelease's own nice value instead", NULL },
	[MR_N_AFFINITY] = { true, "cannot set the CPUs for the releases: %e; releasing on "
			    "mrelease's own CPUs instead", NULL },
	[MR_N_CGKILL] = { false, "cgroup %g: killed with cgroup.kill", NULL },
	[MR_N_UNTIL_EMPTY] = { false, "cgroup %g: killed until empty, in %n listing%s", NULL },
	[MR_N_NOT_EMPTY] = { true, "cgroup %g: not empty after %r listings: %n member%s could "
			     "not be killed", NULL },
	[MR_N_KILL_FAILED] = { true, "cgroup %g: its kill failed: %e", NULL },
	[MR_N_OUTSIDE] = { false, "cgroup %g: %n member%s outside this pid namespace, not seen",
			   NULL },
	[MR_N_GIVEN_UP] = { true, "gave up the figures of %n target%s: not read within %B ms "
			    "(stuck behind a process's mmap_lock?); killed all the same", NULL },
	[MR_N_STUCK] = { false, "%n release%s did not return in %b s; left behind", NULL },
	[MR_N_RETRIES] = { false, "process_mrelease was retried %n time%s", NULL },
	[MR_N_NOSYS] = { true, "process_mrelease is not available (Linux before 5.15, or a "
			 "seccomp filter); waited for the targets to exit instead", NULL },
	[MR_N_GRACE_END] = { false, "pid %p%C ignored %S for %t; sending KILL", NULL },
	[MR_N_NOT_DYING] = { false, "%n not dying; left alone", NULL },
	[MR_N_LEFT_OTHER] = { false, "%n other%s left out: mrelease, its ancestors, pid 1, kernel "
			      "threads, or gone before they were opened", NULL },
	[MR_N_NO_KCMP] = { true, "cannot tell which processes share an address space (kcmp: %e): "
			   "the dry run takes the targets for sharing theirs with none", NULL },
	[MR_N_INTERRUPTED] = { true, "interrupted with %n target%s unfinished; sent nothing "
			       "more; reporting what was done",
			       "interrupted; reporting what was done" },
};

static const struct text reason_texts[] = {
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
	[MR_R_LEFT] = { true, "left its cgroup before the kill", NULL },
	[MR_R_GONE] = { true, "gone before it was opened", NULL },
	[MR_R_NOT_DYING] = { true, "not dying", NULL },
};

static const char *const figure_texts[] = {
	[MR_FIG_READ] = NULL,
	[MR_FIG_ERRNO] = "/proc/%p/%f: %e",
	[MR_FIG_GIVEN_UP] = "not read within %B ms; given up",
	[MR_FIG_NO_THREAD] = "no worker thread to read them on without delaying the kill",
	[MR_FIG_LATE] = "found by a later listing, just before its kill",
};

static const struct {
	const char *fmt, *hint;
} refusal_texts[] = {
	[MR_REFUSE_NONE] = { NULL, NULL },
	[MR_REFUSE_SELF] = { "cgroup %g holds mrelease itself (pid %p)",
			     "run mrelease from outside this cgroup, e.g. from another shell or "
			     "with systemd-run --scope" },
	[MR_REFUSE_ANCESTOR] = { "cgroup %g holds pid %p%C, an ancestor of mrelease",
				 "run mrelease from outside this cgroup, e.g. from another shell or "
				 "with systemd-run --scope" },
	[MR_REFUSE_OUTSIDE] = { "cgroup %g holds processes outside mrelease's pid namespace, "
				"whose ancestry it cannot check",
				"run mrelease in the pid namespace that sees them all, e.g. on the "
				"host" },
	[MR_REFUSE_INIT] = { "cgroup %g holds pid 1 of mrelease's pid namespace",
			     "run mrelease from the pid namespace above, e.g. on the host, where "
			     "that process is not pid 1" },
	[MR_REFUSE_UNSEEN] = { "cgroup %g is a v1 cgroup, and mrelease does not run in the "
			       "initial pid namespace (or cannot tell): a v1 listing leaves out "
			       "the processes a nested one cannot see",
			       "run mrelease in the initial pid namespace, e.g. on the host" },
};

/* What a template is filled in from. */
struct fields {
	const struct mr_run *run;
	pid_t pid;
	const char *comm;
	int cgroup, errnum, sig;
	size_t n;
	const struct mr_target *t; /* or NULL */
};

/* Four buffers in turn, so that one message can hold four names. */
const char *mr_safe(const char *s)
{
	static char bufs[4][MR_SAFE_LEN];
	static unsigned int next;

	return mr_text_escape(s, bufs[next++ % 4], sizeof(bufs[0]));
}

static const char *field(const struct fields *f, char c, char *tmp, size_t len)
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
	case 's': return f->n == 1 ? "" : "s";
	case 'e': return strerror(f->errnum);
	case 'S': return mr_signal_name(f->sig) ? mr_signal_name(f->sig) : "?";
	case 't': snprintf(tmp, len, "%.1f s", (double)f->n / 1000); return tmp;
	case 'b': snprintf(tmp, len, "%.1f", (double)run->bound_ms / 1000); return tmp;
	case 'B': snprintf(tmp, len, "%d", MR_READ_BOUND_MS); return tmp;
	case 'r': snprintf(tmp, len, "%u", f->cgroup >= 0 ? run->cgroups[f->cgroup].rounds : 0);
		return tmp;
	case 'a': return run->cfg.kill ? "kill" : "release";
	case 'i': snprintf(tmp, len, "%llu", f->t ? (unsigned long long)f->t->ino : 0ULL); return tmp;
	case 'T': snprintf(tmp, len, "%d", f->t ? (int)f->t->tgid : 0); return tmp;
	case 'f': return f->t && f->t->fig_file ? f->t->fig_file : "?";
	case 'N': snprintf(tmp, len, "%d", run->cfg.sched.nice); return tmp;
	case '%': return "%";
	default: return "?";
	}
}

static const char *expand(const char *fmt, const struct fields *f, char *buf, size_t len)
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

static struct fields target_fields(const struct mr_run *run, const struct mr_target *t)
{
	return (struct fields){ run, t->pid, t->comm, t->cgroup, t->errnum,
				t->reason == MR_R_FIRST ? run->cfg.first_signal : t->signal, 0, t };
}

/* Why a target failed or was left out, or NULL. */
const char *mr_reason_text(const struct mr_run *run, const struct mr_target *t, char *buf,
			   size_t len)
{
	struct fields f = target_fields(run, t);

	if (t->state == MR_INTERRUPTED)
		return "interrupted";
	if (!reason_texts[t->reason].fmt)
		return NULL;
	return expand(reason_texts[t->reason].fmt, &f, buf, len);
}

/* Why a target's figures are null, or NULL. */
const char *mr_figures_text(const struct mr_run *run, const struct mr_target *t, char *buf,
			    size_t len)
{
	struct fields f = target_fields(run, t);

	f.errnum = t->fig_errnum;
	if (!figure_texts[t->figures])
		return NULL;
	expand(figure_texts[t->figures], &f, buf, len);
	if (t->figures == MR_FIG_ERRNO && t->fig_errnum == ENOENT)
		strncat(buf, " (hidden by hidepid?)", len - strlen(buf) - 1);
	return buf;
}

static void say_note(const struct mr_run *run, const struct mr_note *n, bool verbose)
{
	const struct text *x = &note_texts[n->kind];
	struct fields f = { run, n->pid, n->comm, n->cgroup, n->errnum, n->sig, n->n, NULL };
	char buf[MR_SAFE_LEN];

	if (!x->always && !verbose)
		return;
	warnx("%s", expand(n->n == 0 && x->if_zero ? x->if_zero : x->fmt, &f, buf, sizeof(buf)));
}

void mr_report_refusal(const struct mr_run *run)
{
	const struct mr_refused *r = &run->refused;
	const struct mr_ancestor *a = mr_ancestor_of(run, r->pid);
	struct fields f = { run, r->pid, a ? a->comm : r->comm, r->cgroup, 0, 0, 0, NULL };
	char buf[MR_SAFE_LEN];

	if (r->what == MR_REFUSE_NONE)
		return;
	expand(refusal_texts[r->what].fmt, &f, buf, sizeof(buf));
	if (run->sent)
		warnx("%s now: stopped there, sending nothing more; %s", buf,
		      refusal_texts[r->what].hint);
	else
		warnx("%s: refusing to kill it; %s", buf, refusal_texts[r->what].hint);
}

/* stderr: the notes; then a line for each target that failed, whose
 * figures could not be read, or (with --verbose) that was left out; then
 * whether anything was selected at all. */
void mr_report_diagnostics(const struct mr_run *run, bool verbose)
{
	char buf[MR_SAFE_LEN], where[MR_SAFE_LEN];

	for (size_t i = 0; i < run->nnotes; i++)
		say_note(run, &run->notes[i], verbose);
	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];

		*where = '\0';
		if (t->cgroup >= 0 && t->state == MR_LEFT_OUT)
			snprintf(where, sizeof(where), "cgroup %s: ", mr_safe(run->cgroups[t->cgroup].path));
		if (t->state == MR_FAILED)
			warnx("pid %d: %s", (int)t->pid, mr_reason_text(run, t, buf, sizeof(buf)));
		/* With --dying every process is looked at: those left out are
		 * only counted. */
		else if (t->state == MR_LEFT_OUT && verbose && !run->cfg.dying)
			warnx("%spid %d%s%s%s: left out: %s", where, (int)t->pid, *t->comm ? " (" : "",
			      *t->comm ? mr_safe(t->comm) : "", *t->comm ? ")" : "",
			      mr_reason_text(run, t, buf, sizeof(buf)));
		else if (t->state == MR_RELEASED && t->exited == 0 && !run->interrupted)
			warnx("pid %d: released, but still running after the wait (stuck in the "
			      "kernel?)", (int)t->pid);
		else if (t->figures == MR_FIG_ERRNO && t->state != MR_INTERRUPTED &&
			 t->state != MR_LEFT_OUT)
			warnx("pid %d: no memory figures: %s", (int)t->pid,
			      mr_figures_text(run, t, buf, sizeof(buf)));
	}
	for (size_t i = 0; i < run->nmissing; i++)
		warnx("pid %d: no such process", (int)run->missing[i]);
	if (!mr_selected(run) && !run->refused.what)
		warnx(run->cfg.dying ? "no dying process" : "no process selected");
}
