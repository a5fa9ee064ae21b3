/* select.c: choosing targets: the pids named, the members of cgroups, and
 * their memory before and after. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A pid picked for release, and the cgroup it was found in (or -1). */
struct pick {
	struct mr_pidspec spec;
	int cgroup;
};

/* By pid; a pid found in a cgroup sorts before the same pid named alone,
 * so that it is counted in its cgroup. */
static int by_pid(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->spec.pid != y->spec.pid)
		return (x->spec.pid > y->spec.pid) - (x->spec.pid < y->spec.pid);
	return (x->cgroup < y->cgroup) - (x->cgroup > y->cgroup);
}

void mr_resolve_cgroups(const struct mr_options *o, struct mr_run *run)
{
	int r;

	if (!o->ncgroups)
		return;
	if ((r = mr_cgmounts_read(&run->mounts, "/proc/self/mountinfo"))) {
		errno = -r;
		err(MR_EXIT_FATAL, "/proc/self/mountinfo");
	}
	run->cgroups = calloc(o->ncgroups, sizeof(*run->cgroups));
	if (!run->cgroups)
		err(MR_EXIT_FATAL, "cgroup list");
	for (size_t i = 0; i < o->ncgroups; i++) {
		r = mr_cgroup_resolve(&run->mounts, o->cgroups[i], &run->cgroups[i]);
		if (r == -EXDEV)
			errx(MR_EXIT_USAGE, "cgroup '%s': not inside a cgroup file system",
			     o->cgroups[i]);
		if (r == -EINVAL)
			errx(MR_EXIT_USAGE, "cgroup '%s': not a cgroup directory (\"..\" is not "
			     "accepted)", o->cgroups[i]);
		if (r == -ENOENT && !mr_cgmounts_v2(&run->mounts) && o->cgroups[i][0] != '/')
			errx(MR_EXIT_USAGE, "cgroup '%s': no cgroup2 mount to take it under",
			     o->cgroups[i]);
		if (r) {
			errno = -r;
			err(MR_EXIT_USAGE, "cgroup '%s'", o->cgroups[i]);
		}
		run->ncgroups++;
	}
}

static bool known_pid(const pid_t *known, size_t n, pid_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (known[mid] == pid)
			return true;
		if (known[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* A member listed in a cgroup may have exited, or left, and its pid gone
 * to another process, before we opened it. One that exited is reported as
 * such; one no longer in the cgroup is no target, and whatever now has its
 * pid is none of ours: false, to drop it. */
static bool still_member(const struct mr_options *o, const struct mr_run *run,
			 struct mr_target *t)
{
	if (t->status == MR_FAILED && t->error == MR_E_NO_PROCESS) {
		t->status = MR_EXITED;
		t->error = MR_E_NONE;
		return true;
	}
	if (t->status != MR_PENDING)
		return true;
	return mr_cgroup_holds(&run->cgroups[t->cgroup], t->pid, o->recursive) == 1 &&
	       mr_target_alive(t);
}

/* Add the picks that are not targets yet, open them, and return how many
 * were new. */
static size_t add_targets(const struct mr_options *o, struct mr_procinfo *pi, struct mr_run *run,
			  struct pick *picks, size_t n)
{
	struct mr_target *t;
	pid_t *known;
	size_t added = 0;

	known = calloc(run->ntargets ? run->ntargets : 1, sizeof(*known));
	t = reallocarray(run->targets, (run->ntargets + n) ? (run->ntargets + n) : 1, sizeof(*t));
	if (!known || !t)
		err(MR_EXIT_FATAL, "target list");
	run->targets = t;
	for (size_t i = 0; i < run->ntargets; i++)
		known[i] = run->targets[i].pid;
	qsort(known, run->ntargets, sizeof(*known), cmp_pid);
	if (n)
		qsort(picks, n, sizeof(*picks), by_pid);
	for (size_t i = 0; i < n; i++) {
		if ((i && picks[i].spec.pid == picks[i - 1].spec.pid) ||
		    known_pid(known, run->ntargets - added, picks[i].spec.pid))
			continue;
		t = &run->targets[run->ntargets];
		mr_target_init(t, picks[i].spec, picks[i].cgroup);
		mr_target_open(pi, t);
		if (t->cgroup >= 0 && !still_member(o, run, t)) {
			mr_target_close(t);
			continue;
		}
		run->ntargets++;
		added++;
	}
	free(known);
	return added;
}

/* The members of every cgroup, as picks appended to *picks; -errno, with
 * the cgroup's index in *bad, when one cannot be listed. */
static int cgroup_picks(const struct mr_options *o, struct mr_run *run, struct pick **picks,
			size_t *n, size_t *bad)
{
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_pidlist members = { 0 };
		struct pick *p;
		int r;

		r = mr_cgroup_members(&run->cgroups[c], o->recursive, &members);
		if (r) {
			mr_pidlist_free(&members);
			*bad = c;
			return r;
		}
		p = reallocarray(*picks, *n + members.len + 1, sizeof(*p));
		if (!p)
			err(MR_EXIT_FATAL, "target list");
		*picks = p;
		for (size_t i = 0; i < members.len; i++)
			p[(*n)++] = (struct pick){ members.v[i], (int)c };
		mr_pidlist_free(&members);
	}
	return 0;
}

/* Open every named pid and every member of every cgroup once. */
void mr_select_targets(const struct mr_options *o, struct mr_procinfo *pi, struct mr_run *run)
{
	struct pick *picks = calloc(o->pids.len + 1, sizeof(*picks));
	size_t n = 0, bad;
	int r;

	if (!picks)
		err(MR_EXIT_FATAL, "target list");
	for (size_t i = 0; i < o->pids.len; i++)
		picks[n++] = (struct pick){ o->pids.v[i], -1 };
	if ((r = cgroup_picks(o, run, &picks, &n, &bad))) {
		errno = -r;
		err(MR_EXIT_FATAL, "cgroup %s", run->cgroups[bad].path);
	}
	add_targets(o, pi, run, picks, n);
	free(picks);
}

/* Members that came after the first snapshot (forked before their parent
 * was killed); the number of new targets. */
size_t mr_rescan(const struct mr_options *o, struct mr_procinfo *pi, struct mr_run *run)
{
	struct pick *picks = NULL;
	size_t n = 0, added, bad;
	int r;

	/* Killing has begun: a cgroup that cannot be listed again ends the
	 * rescans, not the run, which still has to report. */
	if ((r = cgroup_picks(o, run, &picks, &n, &bad))) {
		errno = -r;
		warn("cgroup %s: cannot look for late arrivals", run->cgroups[bad].path);
		free(picks);
		return 0;
	}
	added = add_targets(o, pi, run, picks, n);
	free(picks);
	return added;
}

void mr_measure_targets(struct mr_procinfo *pi, struct mr_run *run, size_t from)
{
	for (size_t i = from; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];
		int r;

		if (t->status != MR_PENDING)
			continue;
		r = mr_measure(pi, t, &t->before);
		if (r == -ESRCH)
			t->status = MR_EXITED;
		else if (r)
			mr_target_fail(t, MR_E_UNREADABLE, -r);
	}
}

void mr_measure_after(struct mr_procinfo *pi, struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		/* What a failed target holds afterwards says nothing about us:
		 * it may have exited by itself, or shares its memory. */
		if (t->status == MR_RELEASED || t->status == MR_EXITED)
			mr_measure(pi, t, &t->after);
	}
}

void mr_measure_cgroups(struct mr_run *run, bool after)
{
	for (size_t i = 0; i < run->ncgroups; i++) {
		struct mr_cgroup *cg = &run->cgroups[i];

		mr_cgroup_memory_kb(cg, after ? &cg->memory_after_kb : &cg->memory_before_kb);
		if (!after)
			continue;
		cg->members = cg->released = cg->failed = 0;
		for (size_t k = 0; k < run->ntargets; k++) {
			const struct mr_target *t = &run->targets[k];

			if (t->cgroup != (int)i)
				continue;
			cg->members++;
			cg->released += t->status == MR_RELEASED;
			cg->failed += t->status == MR_FAILED;
		}
	}
}

void mr_free_run(struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++)
		mr_target_close(&run->targets[i]);
	free(run->targets);
	for (size_t i = 0; i < run->ncgroups; i++)
		mr_cgroup_free(&run->cgroups[i]);
	free(run->cgroups);
	mr_cgmounts_free(&run->mounts);
}
