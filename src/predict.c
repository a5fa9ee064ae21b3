/* predict.c: the dry run. It sends and releases nothing, and says what the
 * real run would do with each target and cgroup, from what the kernel
 * would answer: signal 0 and the permission of cgroup.kill for the kills,
 * /proc for whether a target is dying, kcmp(2) for shared address spaces.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "act.h"

/* Whether pid, which shares a target's address space, keeps it from being
 * released in the real run: not when the run would kill it too (it is one
 * of the selection, in this batch or another), nor when it is dying itself. */
static bool keeps_mm(pid_t pid, void *arg)
{
	struct mr_act *a = arg;
	bool dumping;

	if (a->run->cfg.kill && mr_find_pick(a, pid))
		return false;
	return mr_proc_dying(a->run->cfg.proc, pid, &dumping) <= 0;
}

/* The targets predicted to be released whose address space a process
 * that is not dying shares: the kernel would refuse them, as it refuses
 * one that is not dying. Asked by pid, once every batch is done. */
static void predict_shared(struct mr_act *a)
{
	struct mr_run *run = a->run;
	struct mr_mm_query *q = calloc(run->ntargets ? run->ntargets : 1, sizeof(*q));
	size_t n = 0;
	int r;

	for (size_t i = 0; q && i < run->ntargets; i++)
		if (run->targets[i].state == MR_PREDICTED)
			q[n++] = (struct mr_mm_query){ run->targets[i].pid, run->targets[i].mm_pid, 0 };
	if (!q || (r = mr_mm_sharers(run->cfg.proc, q, n, keeps_mm, a)))
		mr_note(run, MR_N_NO_KCMP, -1, 0, q ? -r : ENOMEM);
	for (size_t i = 0, k = 0; q && k < n; i++) {
		struct mr_target *t = &run->targets[i];

		if (t->state != MR_PREDICTED)
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
 * would kill. Before any target is predicted. */
void mr_predict_writes(struct mr_run *run)
{
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (cg->kill == MR_CGKILL_FILE)
			cg->kill_errnum = -mr_cgroup_kill_permitted(cg);
	}
}

/* A cgroup killed until empty would be emptied if every member could be
 * killed. */
static void predict_cgroups(struct mr_run *run)
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

/* A dry run's batch: what the real run would do with each of its targets.
 * A kill the kernel would refuse is told by signal 0 through the pidfd, or
 * for a cgroup.kill by the file's permission; whether a target is dying,
 * by /proc as the kernel decides it (a process that cannot be read there
 * is taken for one that is not). */
int mr_predict(struct mr_act *a, const size_t *items, size_t n)
{
	struct mr_run *run = a->run;
	int r;

	if ((r = mr_read_before(a, items, n)))
		return r;
	for (size_t i = 0; i < n; i++) {
		struct mr_target *t = &run->targets[items[i]];
		const struct mr_cgroup *cg = t->cgroup >= 0 && !t->named ? &run->cgroups[t->cgroup] : NULL;
		bool by_file = cg && cg->kill == MR_CGKILL_FILE, dumping;
		int dying;

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
	return 0;
}

/* Once every batch is done: which of the targets predicted share their
 * address space with a live process (kcmp(2)), and how each cgroup's kill
 * would end. */
void mr_predict_end(struct mr_act *a)
{
	predict_shared(a);
	predict_cgroups(a->run);
}
