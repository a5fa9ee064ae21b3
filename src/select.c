/* select.c: which processes a run is about, and its first touch of them.
 *
 * The contract: the picks are the pids named, the members of each cgroup
 * (checked at this first listing: a cgroup that may not be killed is
 * refused before anything is sent), or with --dying every process that
 * /proc/PID/stat does not show alive and well; each once, in pid order.
 * The first touch opens every pick as a pidfd, in batches of as many as
 * fit, and hands each batch to the phase's first act (mr_touch): every
 * pick is opened, whatever the limit on open files.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"

static int add_pick(struct mr_pick **v, size_t *n, size_t *cap, struct mr_pick p)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct mr_pick *w = reallocarray(*v, c, sizeof(*w));

		if (!w)
			return -ENOMEM;
		*v = w;
		*cap = c;
	}
	(*v)[(*n)++] = p;
	return 0;
}

/* By pid; where a pid was both named and listed, the named pick first, and
 * one named on the command line before one read from standard input. */
static int by_pid(const void *x, const void *y)
{
	const struct mr_pick *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	if (a->named != b->named)
		return (int)b->named - (int)a->named;
	return (int)a->stdin - (int)b->stdin;
}

static bool kills_cgroups(const struct mr_run *run)
{
	return run->cfg.kill && run->ncgroups;
}

/* Every process there is, for --dying without a cgroup. */
static int list_proc(struct mr_run *run, struct mr_pick **v, size_t *n, size_t *cap)
{
	DIR *d = opendir(run->cfg.proc);
	struct dirent *e;
	int r = 0;

	if (!d)
		return -errno;
	while (!r && (e = readdir(d))) {
		pid_t pid;

		if (mr_parse_pid(e->d_name, &pid) == 0)
			r = add_pick(v, n, cap, (struct mr_pick){ .pid = pid, .cgroup = -1 });
	}
	closedir(d);
	return r;
}

/* Picks for the pids named, and the members of every cgroup (or every
 * process, with --dying alone), sorted by pid, once each. --dying with
 * pids (--follow's release of the processes it saw killed) picks those
 * pids alone, and with cgroups only those the cgroups hold. */
static int gather(struct mr_act *a, const struct mr_pidlist *named, struct mr_pick **out, size_t *count)
{
	struct mr_run *run = a->run;
	struct mr_pick *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	bool seen = run->cfg.dying && named->len;
	int r = 0;

	for (size_t i = 0; !r && i < named->len; i++)
		r = add_pick(&v, &n, &cap, (struct mr_pick){ .pid = named->v[i].pid, .cgroup = -1,
							     .ino = named->v[i].ino, .named = true,
							     .stdin = named->v[i].stdin });
	if (!r && run->cfg.dying && !run->ncgroups && !seen && (r = list_proc(run, &v, &n, &cap)))
		mr_fatal(run, r, run->cfg.proc);
	for (size_t c = 0; !r && c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];
		struct mr_pidlist l = { 0 };

		if ((r = mr_cgroup_members(cg, run->cfg.recursive, &l, &cg->outside))) {
			snprintf(run->fatal, sizeof(run->fatal), "cgroup %s: cannot list its members",
				 cg->path);
		} else if (kills_cgroups(run) && mr_check_listing(a, (int)c, &l, cg->outside)) {
			r = -ECANCELED;
		} else if (cg->outside) {
			mr_note(run, MR_N_OUTSIDE, (int)c, cg->outside, 0);
		}
		for (size_t i = 0; !r && i < l.len; i++)
			r = add_pick(&v, &n, &cap, (struct mr_pick){ .pid = l.v[i].pid, .cgroup = (int)c });
		mr_pidlist_free(&l);
	}
	if (r) {
		free(v);
		return r == -ENOMEM ? mr_fatal(run, r, "target list") : r;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_pid);
	for (size_t i = 0; i < n; i++) {
		if (k && v[k - 1].pid == v[i].pid) {
			/* Named and listed: named, counted in its cgroup. */
			if (v[k - 1].cgroup < 0)
				v[k - 1].cgroup = v[i].cgroup;
			continue;
		}
		v[k++] = v[i];
	}
	n = k;
	k = 0;
	for (size_t i = 0; i < n; i++) {
		/* Seen killed, and held by a cgroup named: no other. */
		if (seen && run->ncgroups && (!v[i].named || v[i].cgroup < 0))
			continue;
		/* --dying: what /proc/PID/stat says is not dying is left
		 * alone, never opened (one read each: a sweep of every process
		 * costs little more than the listing). */
		if (run->cfg.dying && mr_proc_may_be_dying(run->cfg.proc, v[i].pid) == 0) {
			a->undying++;
			continue;
		}
		v[k++] = v[i];
	}
	*out = v;
	*count = k;
	return 0;
}

/* Open a pick into a target, in *out; pidfd: one opened for it already
 * (counted as held, and taken over), or -1. 0; 1 when there is no room in
 * the batch being filled (the pick stays a pick); -errno. A pick of the
 * selection is marked opened. A named pid with no process is kept only as
 * a number (a list of a million of them stays small): then *out is NULL.
 * A member of a cgroup whose write to cgroup.kill has been made, opened
 * only now, is late: its pid may name another process by then. */
int mr_open_pick(struct mr_act *a, struct mr_pick *p, int pidfd, struct mr_target **out)
{
	struct mr_run *run = a->run;
	const struct mr_cgroup *cg = p->cgroup >= 0 ? &run->cgroups[p->cgroup] : NULL;
	bool room = pidfd >= 0 || mr_room(a, true);
	struct mr_target t;

	*out = NULL;
	mr_target_init(&t, p->pid, p->cgroup);
	t.named = p->named;
	t.stdin = p->stdin;
	t.pidfd = pidfd;
	t.batch = a->batch;
	t.late = pidfd < 0 && cg && !p->named && cg->kill == MR_CGKILL_FILE && cg->killed;
	if (room)
		mr_target_open(run, &t, p->ino);
	if (!room || (pidfd < 0 && t.state == MR_FAILED && t.reason == MR_R_OPEN &&
		      (t.errnum == EMFILE || t.errnum == ENFILE))) {
		/* The kernel may have fewer than were counted: what is held
		 * is all that fits. */
		a->most = a->open;
		if (mr_batch_holds(a))
			return 1;
		mr_no_room(a, &t);
	}
	p->opened = true;
	if (pidfd < 0 && t.pidfd >= 0)
		mr_took(a, &t);
	else if (pidfd >= 0 && t.pidfd < 0)
		a->open--;
	/* Opened while it was a member, or after its cgroup's write, gone
	 * since: it exited (of the kill, or by itself). */
	if ((pidfd >= 0 || t.late) && t.state == MR_LEFT_OUT && t.reason == MR_R_GONE)
		mr_target_end(&t, MR_EXITED, MR_R_NONE, 0);
	if (t.state == MR_FAILED && t.reason == MR_R_NO_PROCESS) {
		pid_t *m = reallocarray(run->missing, run->nmissing + 1, sizeof(*m));

		if (!m)
			return mr_fatal(run, -ENOMEM, "target list");
		run->missing = m;
		m[run->nmissing++] = p->pid;
		return 0;
	}
	if (!(*out = mr_add_target(a, &t))) {
		if (t.pidfd >= 0)
			a->open--;
		mr_target_close(&t);
		return mr_fatal(run, -ENOMEM, "target list");
	}
	return 0;
}

static int by_key(const void *key, const void *x)
{
	pid_t pid = *(const pid_t *)key, b = ((const struct mr_pick *)x)->pid;

	return (pid > b) - (pid < b);
}

/* The pick of the selection for pid, or NULL. */
struct mr_pick *mr_find_pick(struct mr_act *a, pid_t pid)
{
	return a->npicks ? bsearch(&pid, a->picks, a->npicks, sizeof(*a->picks), by_key) : NULL;
}

/* The pick of the selection for pid that is not a target yet, or NULL. */
struct mr_pick *mr_pending(struct mr_act *a, pid_t pid)
{
	struct mr_pick *p = mr_find_pick(a, pid);

	return p && !p->opened ? p : NULL;
}

/* The first touch: every pick opened, in pid order, in batches of as many
 * pidfds as fit; fn is given each batch, the targets whose pidfds it
 * holds. Stops when fn fails or a signal interrupts the run. */
int mr_touch(struct mr_act *a, mr_batch_fn fn)
{
	struct mr_run *run = a->run;
	size_t *b = calloc(a->npicks ? a->npicks : 1, sizeof(*b)), k = 0;
	struct mr_target *t;
	int r = 0;

	if (!b)
		return mr_fatal(run, -ENOMEM, "batch list");
	mr_phase(a);
	for (size_t i = 0; !r && i < a->npicks && !run->interrupted;) {
		if (a->picks[i].opened) {
			i++;
			continue;
		}
		if ((r = mr_open_pick(a, &a->picks[i], -1, &t)) == 1) {
			r = fn(a, b, k);
			k = 0;
			mr_next_batch(a);
			continue;
		}
		if (!r && t && t->pidfd >= 0)
			b[k++] = run->ntargets - 1;
		i++;
	}
	if (!r && k && !run->interrupted)
		r = fn(a, b, k);
	free(b);
	return r;
}

/* Select the picks; nothing is opened yet. */
int mr_select(struct mr_act *a, const struct mr_pidlist *named)
{
	if (kills_cgroups(a->run))
		a->nested = mr_pidns_nested(a->run->cfg.proc);
	return gather(a, named, &a->picks, &a->npicks);
}
