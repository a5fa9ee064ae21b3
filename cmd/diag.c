/* diag.c: what mrelease says on stderr. Every sentence is a template in a
 * table (notes and refusals here, reasons in text.c), filled in by one
 * expander from typed fields, and every name that goes into one is escaped
 * for the terminal. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct mr_text note_texts[] = {
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
			    "(stuck behind a process's mmap_lock?); %A all the same", NULL },
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
	[MR_N_BATCHES] = { false, "%n batches: at most %m pidfds fit at once under the limit on "
			   "open files (ulimit -n); each phase went over every target", NULL },
	[MR_N_NO_ROOM] = { true, "no room for a pidfd: %n descriptors are in use or kept aside, and "
			   "the limit on open files is %m; raise it (ulimit -n, LimitNOFILE=)", NULL },
	[MR_N_THREADS_ROOM] = { false, "starting %n of %m worker threads: the limit on open files (ulimit "
				"-n) leaves room for no more beside the pidfds", NULL },
	[MR_N_INTERRUPTED] = { true, "interrupted with %n target%s unfinished; %D nothing "
			       "more; reporting what was done",
			       "interrupted; reporting what was done" },
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

/* A note of run's as a sentence, in buf: or NULL where it is said only
 * with verbose. */
const char *mr_note_text(const struct mr_run *run, const struct mr_note *n, bool verbose,
			 char *buf, size_t len)
{
	const struct mr_text *x = &note_texts[n->kind];
	struct mr_fields f = { .run = run, .pid = n->pid, .comm = n->comm, .cgroup = n->cgroup,
			       .errnum = n->errnum, .sig = n->sig, .n = n->n, .m = n->m };

	if (!x->always && !verbose)
		return NULL;
	return mr_expand(n->n == 0 && x->if_zero ? x->if_zero : x->fmt, &f, buf, len);
}

/* A note of run's, on stderr: always, or only with verbose. */
void mr_report_note(const struct mr_run *run, const struct mr_note *n, bool verbose)
{
	char buf[MR_SAFE_LEN];

	if (mr_note_text(run, n, verbose, buf, sizeof(buf)))
		warnx("%s", buf);
}

void mr_report_refusal(const struct mr_run *run)
{
	const struct mr_refused *r = &run->refused;
	const struct mr_ancestor *a = mr_ancestor_of(run, r->pid);
	struct mr_fields f = { .run = run, .pid = r->pid, .comm = a ? a->comm : r->comm,
			       .cgroup = r->cgroup };
	char buf[MR_SAFE_LEN];

	if (r->what == MR_REFUSE_NONE)
		return;
	mr_expand(refusal_texts[r->what].fmt, &f, buf, sizeof(buf));
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
		mr_report_note(run, &run->notes[i], verbose);
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
		else if (t->state == MR_RELEASED && t->waited == MR_WAITED_RUNNING && !run->interrupted)
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
