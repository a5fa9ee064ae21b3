/* predict.c: the dry run. It sends and releases nothing, and says what the
 * real run would do with each target and cgroup, from what the kernel
 * would answer: signal 0 and the permission of cgroup.kill for the kills,
 * /proc for whether a target is dying, kcmp(2) for shared address spaces.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "run.h"

/* Whether pid, which shares a target's address space, keeps it from being
 * released in the real run: not when the run would kill it too (it is one
 * of the selection, in this wave or another), nor when it is dying itself. */
static bool keeps_mm(pid_t pid, void *arg)
{
	struct mr_act *a = arg;
	bool dumping;

	if (a->run->cfg.kill && mr_find_pick(a, pid))
		return false;
	return mr_proc_dying(a->run->cfg.proc, pid, &dumping) <= 0;
}

/* This wave's targets predicted to be released whose address space a
 * process that is not dying shares: the kernel would refuse them, as it
 * refuses one that is not dying. */
static void predict_shared(struct mr_act *a)
{
	struct mr_run *run = a->run;
	struct mr_mm_query *q = calloc(run->ntargets ? run->ntargets : 1, sizeof(*q));
	size_t n = 0;
	int r;

	for (size_t i = 0; q && i < run->ntargets; i++)
		if (run->targets[i].state == MR_PREDICTED && run->targets[i].pidfd >= 0)
			q[n++] = (struct mr_mm_query){ run->targets[i].pid, run->targets[i].mm_pid, 0 };
	if (!q || (r = mr_mm_sharers(run->cfg.proc, q, n, keeps_mm, a)))
		mr_note(run, MR_N_NO_KCMP, -1, 0, q ? -r : ENOMEM);
	for (size_t i = 0, k = 0; q && k < n; i++) {
		struct mr_target *t = &run->targets[i];

		if (t->state != MR_PREDICTED || t->pidfd < 0)
			continue;
		if (q[k++].sharer && run->cfg.kill)
			mr_target_end(t, MR_FAILED, MR_R_SHARED_MM, 0);
		else if (q[k - 1].sharer)
			mr_end_not_dying(run, t, false);
	}
	free(q);
}

/* How each cgroup's kill would go: a write to cgroup.kill the kernel would
 * refuse (as to a user who may not write there) fails for every member it
 * would kill. */
static void predict_writes(struct mr_run *run)
{
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (cg->kill == MR_CGKILL_FILE)
			cg->kill_errnum = -mr_cgroup_kill_permitted(cg);
	}
}

/* Once every wave is done: a cgroup killed until empty would be emptied
 * if every member could be killed. */
void mr_predict_cgroups(struct mr_run *run)
{
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		cg->remaining = 0;
		for (size_t i = 0; i < run->ntargets; i++)
			cg->remaining += run->targets[i].cgroup == (int)c && !run->targets[i].named &&
					 run->targets[i].reason == MR_R_KILL;
		cg->killed = cg->kill && !cg->kill_errnum && !cg->remaining;
	}
}

/* A dry run's wave: what the real run would do with each of its targets. A
 * kill the kernel would refuse is told by signal 0 through the pidfd, or
 * for a cgroup.kill by the file's permission; whether a target is dying,
 * by /proc as the kernel decides it (a process that cannot be read there
 * is taken for one that is not); whether a live process shares its
 * address space, by kcmp(2). */
void mr_predict(struct mr_act *a)
{
	struct mr_run *run = a->run;

	if (!a->cgroups_killed)
		predict_writes(run);
	a->cgroups_killed = true;
	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];
		const struct mr_cgroup *cg = t->cgroup >= 0 && !t->named ? &run->cgroups[t->cgroup] : NULL;
		bool by_file = cg && cg->kill == MR_CGKILL_FILE, dumping;
		int r, dying;

		if (t->state != MR_OPENED)
			continue;
		dying = mr_proc_dying(run->cfg.proc, t->mm_pid, &dumping);
		if (by_file && cg->kill_errnum)
			mr_target_end(t, MR_FAILED, MR_R_KILL, cg->kill_errnum);
		else if (run->cfg.kill && !by_file && (r = mr_pidfd_signal(t->pidfd, 0)) && r != -ESRCH)
			mr_target_end(t, MR_FAILED, MR_R_KILL, -r);
		else if (run->cfg.kill && dumping)
			mr_target_end(t, MR_FAILED, MR_R_COREDUMP, 0);
		else if (run->cfg.kill || dying > 0)
			mr_target_predicted(t);
		else
			mr_end_not_dying(run, t, dumping);
	}
	predict_shared(a);
}
