/* select.c: which processes a run is about: the pids named, the members
 * of each cgroup (checked at this first listing: a cgroup that may not be
 * killed is refused before anything is sent), or with --dying every
 * process; each once, in pid order, then opened as a pidfd.
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
		r = add_pick(&v, &n, &cap, (struct mr_pick){ named->v[i].pid, -1, named->v[i].ino, true,
							  named->v[i].stdin });
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
		v[k++] = v[i];
	}
	*out = v;
	*count = k;
	return 0;
}

/* Append t to the run's targets: the new one, or NULL without memory. */
struct mr_target *mr_add_target(struct mr_act *a, const struct mr_target *t)
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

/* Open a pick into a target, in *out; pidfd: one opened for it already
 * (counted in the room then, and taken over), or -1. A named pid with no
 * process is kept only as a number (a list of a million of them stays
 * small): then *out is NULL. */
int mr_open_pick(struct mr_act *a, const struct mr_pick *p, int pidfd, struct mr_target **out)
{
	struct mr_run *run = a->run;
	struct mr_target t;

	*out = NULL;
	mr_target_init(&t, p->pid, p->cgroup);
	t.named = p->named;
	t.stdin = p->stdin;
	t.pidfd = pidfd;
	if (a->room || pidfd >= 0)
		mr_target_open(run, &t, p->ino);
	else
		mr_target_end(&t, MR_FAILED, MR_R_OPEN, EMFILE);
	if (pidfd < 0)
		a->room -= t.pidfd >= 0;
	else
		a->room += t.pidfd < 0;
	/* Opened while it was a member, gone since: it exited (of the kill
	 * that followed, or by itself). */
	if (pidfd >= 0 && t.state == MR_LEFT_OUT && t.reason == MR_R_GONE)
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
		mr_target_close(&t);
		return mr_fatal(run, -ENOMEM, "target list");
	}
	return 0;
}

int mr_select(struct mr_act *a, const struct mr_pidlist *named)
{
	struct mr_run *run = a->run;
	struct mr_target *t;
	struct mr_pick *v = NULL;
	size_t n = 0;
	int r;

	if (kills_cgroups(run))
		a->nested = mr_pidns_nested(run->cfg.proc);
	if ((r = gather(a, named, &v, &n)))
		return r;
	a->room = mr_fd_room(run->cfg.proc, n, MR_FD_RESERVE + run->threads * MR_FD_PER_THREAD);
	for (size_t i = 0; !r && i < n; i++)
		r = mr_open_pick(a, &v[i], -1, &t);
	free(v);
	return r;
}
