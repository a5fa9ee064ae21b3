/* cgkill.c: the kills of the cgroups, and the refusals that stop them.
 *
 * The contracts, each kept by one function below:
 * - A v2 cgroup, recursively, is killed with one write to cgroup.kill: the
 *   kernel kills everything in the subtree at that moment, forks and
 *   migrations included. Nothing is listed or signalled after it
 *   (kill_by_file).
 * - Where cgroup.kill cannot say what was asked (v1, --no-recursive, a
 *   kernel without cgroup.kill), the cgroup is killed until empty: list it,
 *   open each pid, check that it is still a member, SIGKILL it, and list
 *   again, until a listing finds no member that has not been killed, as
 *   systemd does (kill_until_empty). A pid listed again is the member
 *   killed before only where its process is proven the same; any other
 *   is a member too, and is killed.
 * - A cgroup that holds mrelease, one of its ancestors, pid 1 or a process
 *   it cannot see (outside its pid namespace: listed as 0 on v2, left out
 *   on v1) is not killed at all: checked at the first listing, and again
 *   at the listing just before the write and before each listing's kills
 *   (mr_check_listing). Refused once the run has begun, the run stops
 *   there, and what it killed before is released.
 * - No limit on descriptors leaves a member unkilled: a write needs no
 *   pidfd, and a listing's members are opened in batches, the pidfds of
 *   those killed closed to make room (mr_hold_one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"
#include "sys.h"

/* What a listing of cgroup c holds that forbids killing it: mrelease, an
 * ancestor of it, pid 1, or a member outside our pid namespace (a v1
 * listing leaves those out: from a nested pid namespace, a v1 cgroup is
 * not killed at all). Recorded in run->refused. */
bool mr_check_listing(struct mr_act *a, int c, const struct mr_pidlist *l, size_t outside)
{
	struct mr_run *run = a->run;
	struct mr_refused *f = &run->refused;

	*f = (struct mr_refused){ .cgroup = c };
	for (size_t i = 0; i < l->len && !f->what; i++) {
		const struct mr_ancestor *anc = mr_ancestor_of(run, l->v[i].pid);

		f->pid = l->v[i].pid;
		if (f->pid == run->self)
			f->what = MR_REFUSE_SELF;
		else if (anc) {
			f->what = MR_REFUSE_ANCESTOR;
			memcpy(f->comm, anc->comm, sizeof(f->comm));
		} else if (f->pid == 1) {
			f->what = MR_REFUSE_INIT;
		}
	}
	if (!f->what && outside)
		f->what = MR_REFUSE_OUTSIDE;
	else if (!f->what && !run->cgroups[c].v2 && a->nested)
		f->what = MR_REFUSE_UNSEEN;
	if (f->what == MR_REFUSE_OUTSIDE || f->what == MR_REFUSE_UNSEEN)
		f->pid = 0;
	return f->what != MR_REFUSE_NONE;
}

/* How each cgroup will be killed: the method is chosen before anything is
 * sent. */
void mr_plan_kills(struct mr_run *run)
{
	for (size_t c = 0; run->cfg.kill && c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (run->cfg.recursive && mr_cgroup_can_kill(cg))
			cg->kill = MR_CGKILL_FILE;
		else
			cg->kill = MR_CGKILL_UNTIL_EMPTY;
	}
}

/* A target that no listing will make killable: one that failed, or was
 * left out as a kernel thread. */
static bool unkillable(const struct mr_target *t)
{
	return t->state == MR_FAILED || (t->state == MR_LEFT_OUT && t->reason == MR_R_KTHREAD);
}

/* The target among the first n indexed that pid, listed again, is already,
 * or NULL for a newcomer. One no listing will make killable is; one whose
 * pidfd is held is while its process is not reaped (its pid is its own
 * until then); one whose pidfd was closed to make room is, with prove,
 * only where opened again its process is proven the same (it is held
 * then), and without prove, where it is still to be settled by its
 * cgroup's kill. */
static struct mr_target *listed_target(struct mr_act *a, const struct mr_pidx *idx, size_t n,
				       pid_t pid, bool prove)
{
	ssize_t k = mr_find_target(idx, n, pid);
	struct mr_target *t = k < 0 || !a->run->targets ? NULL : &a->run->targets[k];

	if (!t || unkillable(t))
		return t;
	if (t->pidfd >= 0)
		return !mr_target_ended(t) && mr_target_alive(t) ? t : NULL;
	if (!prove)
		return mr_target_ended(t) ? NULL : t;
	return mr_hold_one(a, t) == 0 ? t : NULL;
}

/* Open pid, listed in cgroup c, through pidfd (one opened for it already,
 * or -1): as the pick of the selection it is, or as a newcomer, whose
 * figures are not read before its kill; where the batch is full, the next
 * begins with it. In *out, or NULL. */
static int open_listed(struct mr_act *a, int c, pid_t pid, int pidfd, struct mr_target **out)
{
	struct mr_pick *p = mr_pending(a, pid), newcomer = { .pid = pid, .cgroup = c };
	int r = mr_open_pick(a, p ? p : &newcomer, pidfd, out);

	if (r == 1) {
		mr_next_batch(a);
		r = mr_open_pick(a, p ? p : &newcomer, pidfd, out);
	}
	if (r == 1)
		return 0;
	if (*out && !p)
		(*out)->figures = MR_FIG_LATE;
	return r;
}

static int by_spec_pid(const void *x, const void *y)
{
	const struct mr_pidspec *a = x, *b = y;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

/* List cgroup c for its kill (round cg->rounds), each pid once (a process
 * that moves between two subgroups as they are read is listed twice), and
 * check the listing. 0; -ECANCELED: refused; another -errno: the listing
 * failed, and with it the cgroup's kill. */
static int relist(struct mr_act *a, int c, struct mr_pidlist *l)
{
	struct mr_cgroup *cg = &a->run->cgroups[c];
	bool recursive = cg->kill == MR_CGKILL_FILE || a->run->cfg.recursive;
	size_t outside, k = 0;
	int r;

	cg->rounds++;
	if ((r = mr_cgroup_members(cg, recursive, l, &outside))) {
		cg->kill_errnum = -r;
		return r;
	}
	if (l->len)
		qsort(l->v, l->len, sizeof(*l->v), by_spec_pid);
	for (size_t i = 0; i < l->len; i++)
		if (!k || l->v[k - 1].pid != l->v[i].pid)
			l->v[k++] = l->v[i];
	l->len = k;
	return mr_check_listing(a, c, l, outside) ? -ECANCELED : 0;
}

/* The listing of a cgroup just before its write, and for each pid in it:
 * NOT_NEW for a target already, else a pidfd opened before the write, or
 * -1. */
struct listed {
	struct mr_pidlist l;
	int *fds;
};

enum { NOT_NEW = -2 };

static void listed_free(struct mr_act *a, struct listed *x)
{
	for (size_t i = 0; x->fds && i < x->l.len; i++)
		if (x->fds[i] >= 0)
			mr_close_spare(a, x->fds[i]);
	free(x->fds);
	mr_pidlist_free(&x->l);
	*x = (struct listed){ 0 };
}

/* The v2 contract: one write to cgroup.kill kills everything in the
 * subtree at that moment. The listing just before it is checked, and kept
 * in *x; each newcomer in it (a member not a target yet) is given a pidfd
 * before the write where there is room: a syscall each and nothing read,
 * so that one killed and reaped at once is still reported. The members it
 * found are opened once every write is made (open_killed). */
static int kill_by_file(struct mr_act *a, int c, struct listed *x)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];
	struct mr_pidx *idx;
	int64_t done;
	int r;

	if ((r = relist(a, c, &x->l)))
		return r == -ECANCELED ? r : 0;
	if (!(idx = mr_index_targets(run)) || !(x->fds = calloc(x->l.len + 1, sizeof(*x->fds)))) {
		free(idx);
		return mr_fatal(run, -ENOMEM, "target list");
	}
	for (size_t i = 0; i < x->l.len; i++) {
		pid_t pid = x->l.v[i].pid;

		x->fds[i] = listed_target(a, idx, run->ntargets, pid, false) ? NOT_NEW : -1;
		if (x->fds[i] == -1 && mr_room(a, false) && (x->fds[i] = mr_sys_pidfd_open(pid)) >= 0)
			a->open++;
	}
	free(idx);
	if (mr_stopped(a))
		return 0;
	run->sent = true;
	if ((r = mr_cgroup_kill(cg, &done))) {
		cg->kill_errnum = -r;
		return 0;
	}
	cg->killed = true;
	run->kill_us = done - run->cfg.start_us;
	return 0;
}

/* Whether the newcomer pid, held through fd (or -1), is a target already:
 * opened for another cgroup's listing, which the same process was in. The
 * same process where pidfds have inodes of their own; else one not reaped. */
static bool targeted(struct mr_act *a, const struct mr_pidx *idx, size_t n, pid_t pid, int fd)
{
	ssize_t k = mr_find_target(idx, n, pid);
	uint64_t ino;

	if (k >= 0 && fd >= 0 && a->run->pidfs && !mr_pidfd_inode(fd, &ino))
		return a->run->targets[k].ino == ino;
	return listed_target(a, idx, n, pid, false) != NULL;
}

/* The second step of the writes, once every one is made: the newcomers of
 * cgroup c listed in x, killed by its write, opened to be released; each
 * once, though the listings of several cgroups found it. */
static int open_killed(struct mr_act *a, int c, struct listed *x)
{
	size_t n = a->run->ntargets;
	struct mr_pidx *idx = NULL;
	struct mr_target *t;
	int r = 0;

	for (size_t i = 0; !r && x->fds && i < x->l.len; i++) {
		if (x->fds[i] == NOT_NEW)
			continue;
		/* Indexed at the first newcomer: most writes find none. */
		if (!idx && !(idx = mr_index_targets(a->run))) {
			r = mr_fatal(a->run, -ENOMEM, "target list");
			break;
		}
		if (targeted(a, idx, n, x->l.v[i].pid, x->fds[i])) {
			if (x->fds[i] >= 0)
				mr_close_spare(a, x->fds[i]);
		} else if (!(r = open_listed(a, c, x->l.v[i].pid, x->fds[i], &t)) && t &&
			   mr_target_to_kill(t)) {
			/* In the listing just before c's write, which killed it. */
			mr_target_signalled(t, SIGKILL);
		}
		x->fds[i] = NOT_NEW;
	}
	free(idx);
	return r;
}

/* One listing's kills: each member not killed yet, checked to be one still,
 * is sent SIGKILL; a member that is no target yet is opened first. How many
 * were killed now; in cg->remaining, how many cannot be. */
static size_t kill_listed(struct mr_act *a, int c, const struct mr_pidlist *l, int *err)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];
	size_t n = run->ntargets, fresh = 0;
	struct mr_pidx *idx = mr_index_targets(run);

	cg->remaining = 0;
	*err = idx ? 0 : mr_fatal(run, -ENOMEM, "target list");
	for (size_t i = 0; !*err && i < l->len && !run->interrupted; i++) {
		struct mr_target *t = listed_target(a, idx, n, l->v[i].pid, true);

		if (!t && (*err = open_listed(a, c, l->v[i].pid, -1, &t)))
			break;
		if (!t || t->signal == SIGKILL)
			continue;
		if (!unkillable(t) && !mr_target_ended(t) && mr_still_member(a, t) &&
		    mr_send(a, t, SIGKILL))
			fresh++;
		cg->remaining += unkillable(t);
	}
	free(idx);
	return fresh;
}

/* Where cgroup.kill cannot say what was asked (v1, --no-recursive, a kernel
 * without cgroup.kill): list, open each pid, check that it is still a
 * member, SIGKILL it; list again, until a listing finds no member that has
 * not been killed. Everything in the cgroup while this runs is killed.
 * Bounded in listings and in time: a cgroup still not empty then is a
 * failure, with the count. */
static int kill_until_empty(struct mr_act *a, int c)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];
	size_t fresh = 1;
	int64_t end = mr_now_us() + (int64_t)run->bound_ms * 1000;
	int r = 0;

	mr_phase(a);
	while (!r && fresh && cg->rounds < MR_ROUNDS_MAX && (!cg->rounds || mr_now_us() < end) &&
	       !mr_stopped(a)) {
		struct mr_pidlist l = { 0 };

		if (!(r = relist(a, c, &l)))
			fresh = kill_listed(a, c, &l, &r);
		mr_pidlist_free(&l);
	}
	if (r == -ENOMEM)
		cg->kill_errnum = ENOMEM;
	/* Still finding members to kill when the bound came. */
	if (fresh && !r && !run->interrupted)
		cg->remaining += fresh;
	cg->killed = !r && !cg->remaining && !run->interrupted;
	return r == -ECANCELED || r == -ENOMEM ? r : 0;
}

/* A member of cgroup c its kill did not signal, settled by how that kill
 * went: killed by the write; failed with it; or, killed until empty, found
 * by no listing: it left, or went. */
static void settle_member(struct mr_act *a, struct mr_target *t)
{
	const struct mr_cgroup *cg = &a->run->cgroups[t->cgroup];

	if (cg->kill == MR_CGKILL_FILE && cg->killed)
		mr_target_signalled(t, SIGKILL);
	else if (cg->kill_errnum)
		mr_target_end(t, MR_FAILED, MR_R_KILL, cg->kill_errnum);
	else if (mr_hold_one(a, t) == 0 && mr_target_alive(t))
		mr_target_end(t, MR_LEFT_OUT, MR_R_LEFT, 0);
	else if (!mr_target_ended(t))
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
}

/* How cgroup c's kill went, said once it is done, and its members its
 * kill did not signal settled by it. */
static void settle_cgroup(struct mr_act *a, int c)
{
	struct mr_run *run = a->run;
	struct mr_cgroup *cg = &run->cgroups[c];

	mr_phase(a);
	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		if (t->cgroup == c && !t->named && mr_target_to_kill(t))
			settle_member(a, t);
	}
	if (cg->kill_errnum)
		mr_note(run, MR_N_KILL_FAILED, c, 0, cg->kill_errnum);
	else if (cg->kill == MR_CGKILL_FILE)
		mr_note(run, MR_N_CGKILL, c, 0, 0);
	else
		mr_note(run, cg->killed ? MR_N_UNTIL_EMPTY : MR_N_NOT_EMPTY, c,
			cg->killed ? cg->rounds : cg->remaining, 0);
}

/* Kill cgroup c whole, as its method says: one write to cgroup.kill after
 * the listing just before it, or until empty; then settle its members.
 * What a write killed is killed, whatever stops the run since; a kill
 * that failed has failed. 0; -ECANCELED refused; -ENOMEM. */
static int kill_cgroup(struct mr_act *a, int c, struct listed *x)
{
	struct mr_cgroup *cg = &a->run->cgroups[c];
	int r;

	mr_begin(a);
	r = cg->kill == MR_CGKILL_FILE ? kill_by_file(a, c, x) : kill_until_empty(a, c);
	if (cg->killed || cg->kill_errnum ||
	    (cg->rounds && !a->run->interrupted && r != -ECANCELED && r != -ENOMEM))
		settle_cgroup(a, c);
	return r;
}

/* Every cgroup's kill, each whole: the writes first, then the cgroups
 * killed until empty, and once every write is made, the members the writes
 * killed that were no targets yet opened (open_killed). -ECANCELED: a
 * cgroup was refused, and the run stops there; -ENOMEM. */
int mr_kill_cgroups(struct mr_act *a)
{
	struct mr_run *run = a->run;
	struct listed *x = calloc(run->ncgroups ? run->ncgroups : 1, sizeof(*x));
	int r = x ? 0 : mr_fatal(run, -ENOMEM, "target list");

	for (size_t c = 0; !r && c < run->ncgroups && !mr_stopped(a); c++)
		if (run->cgroups[c].kill == MR_CGKILL_FILE)
			r = kill_cgroup(a, (int)c, &x[c]);
	for (size_t c = 0; !r && c < run->ncgroups && !mr_stopped(a); c++)
		if (run->cgroups[c].kill == MR_CGKILL_UNTIL_EMPTY)
			r = kill_cgroup(a, (int)c, &x[c]);
	mr_phase(a);
	for (size_t c = 0; x && c < run->ncgroups; c++) {
		int e = 0;

		if (run->cgroups[c].killed && run->cgroups[c].kill == MR_CGKILL_FILE &&
		    r != -ENOMEM && !run->interrupted)
			e = open_killed(a, (int)c, &x[c]);
		r = r ? r : e;
		listed_free(a, &x[c]);
	}
	free(x);
	return r;
}

/* After a cgroup refused once the run had begun: what was not killed is
 * not, and is not released either. */
void mr_stop_rest(struct mr_run *run)
{
	for (size_t i = 0; i < run->ntargets; i++)
		if (mr_target_to_kill(&run->targets[i]))
			mr_target_end(&run->targets[i], MR_FAILED, MR_R_STOPPED, 0);
}
