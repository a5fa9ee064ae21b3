/* select.c: which processes a run is about: the pids named, the members
 * of each cgroup (checked at this first listing: a cgroup that may not be
 * killed is refused before anything is sent), or with --dying every
 * process; each once, in pid order. They are picks until a wave (or a
 * cgroup's listing) opens them as pidfds, as many at once as the limit on
 * open files lets the run hold.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

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
 * process, with --dying alone), sorted by pid, once each. */
static int gather(struct mr_act *a, const struct mr_pidlist *named, struct mr_pick **out, size_t *count)
{
	struct mr_run *run = a->run;
	struct mr_pick *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	int r = 0;

	for (size_t i = 0; !r && i < named->len; i++)
		r = add_pick(&v, &n, &cap, (struct mr_pick){ .pid = named->v[i].pid, .cgroup = -1,
							     .ino = named->v[i].ino, .named = true,
							     .stdin = named->v[i].stdin });
	if (!r && run->cfg.dying && !run->ncgroups && (r = list_proc(run, &v, &n, &cap)))
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

/* Append t to the run's targets: the new one, or NULL without memory. */
static struct mr_target *add_target(struct mr_act *a, const struct mr_target *t)
{
	struct mr_run *run = a->run;

	if (run->ntargets == a->cap) {
		size_t c = a->cap ? 2 * a->cap : 64;
		struct mr_target *v = reallocarray(run->targets, c, sizeof(*v));

		if (!v)
			return NULL;
		run->targets = v;
		a->cap = c;
	}
	run->targets[run->ntargets] = *t;
	return &run->targets[run->ntargets++];
}

/* Not one pidfd fits beside the descriptors kept aside: said once. */
static void no_room(struct mr_act *a)
{
	if (a->no_room)
		return;
	a->no_room = true;
	mr_note_add(a->run, (struct mr_note){ .kind = MR_N_NO_ROOM, .cgroup = -1,
					      .n = a->fd_used + a->fd_kept, .m = a->fd_limit });
}

/* Open a pick into a target, in *out; pidfd: one opened for it already
 * (counted in the room then, and taken over), or -1. A pick of the
 * selection is marked opened. A named pid with no process is kept only as
 * a number (a list of a million of them stays small): then *out is NULL.
 * A member of a cgroup whose write to cgroup.kill has been made, opened
 * only now, is late: its pid may name another process by then. */
int mr_open_pick(struct mr_act *a, struct mr_pick *p, int pidfd, struct mr_target **out)
{
	struct mr_run *run = a->run;
	const struct mr_cgroup *cg = p->cgroup >= 0 ? &run->cgroups[p->cgroup] : NULL;
	struct mr_target t;

	*out = NULL;
	p->opened = true;
	mr_target_init(&t, p->pid, p->cgroup);
	t.named = p->named;
	t.stdin = p->stdin;
	t.pidfd = pidfd;
	t.late = pidfd < 0 && cg && !p->named && cg->kill == MR_CGKILL_FILE && cg->killed;
	if (a->room || pidfd >= 0) {
		mr_target_open(run, &t, p->ino);
	} else {
		no_room(a);
		mr_target_end(&t, MR_FAILED, MR_R_OPEN, EMFILE);
	}
	if (pidfd < 0 && t.pidfd >= 0)
		mr_take_room(a);
	else if (pidfd >= 0 && t.pidfd < 0)
		a->room++;
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
	if (!(*out = add_target(a, &t))) {
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

/* Whether a pick is left for a wave to open (with named_only, one named
 * by pid alone); the cursor goes past those there is nothing left to do
 * with. */
bool mr_picks_left(struct mr_act *a, bool named_only)
{
	size_t *next = named_only ? &a->next_named : &a->next;

	while (*next < a->npicks &&
	       (a->picks[*next].opened || (named_only && !a->picks[*next].named)))
		++*next;
	return *next < a->npicks;
}

/* The next wave: the picks not opened yet, in pid order (with named_only,
 * those named by pid alone), opened while the room lasts. How many were
 * opened, or -errno. When not one fits, every pick left fails, with the
 * limit to raise. A pidfd_open that finds the table full in the middle of
 * a wave ends the wave there: that pick goes in the next. */
ssize_t mr_open_wave(struct mr_act *a, bool named_only)
{
	size_t *next = named_only ? &a->next_named : &a->next;
	struct mr_run *run = a->run;
	struct mr_target *t;
	ssize_t n = 0;
	int r = 0;

	for (; *next < a->npicks && !r && (a->room || !n); ++*next) {
		struct mr_pick *p = &a->picks[*next];

		if (p->opened || (named_only && !p->named))
			continue;
		if ((r = mr_open_pick(a, p, -1, &t)) || !t || t->pidfd < 0) {
			if (!r && t && n && t->state == MR_FAILED && t->reason == MR_R_OPEN &&
			    (t->errnum == EMFILE || t->errnum == ENFILE)) {
				run->ntargets--;
				p->opened = false;
				a->room = 0;
				break;
			}
			continue;
		}
		n++;
	}
	return r ? r : n;
}

/* Select the picks; nothing is opened yet. */
int mr_select(struct mr_act *a, const struct mr_pidlist *named)
{
	if (kills_cgroups(a->run))
		a->nested = mr_pidns_nested(a->run->cfg.proc);
	return gather(a, named, &a->picks, &a->npicks);
}
