/* kill.c: the first signal, the grace, and the kills of the pids named.
 *
 * The contracts, each kept by one function below:
 * - With --grace, the first signal goes to every target, each pid named and
 *   each member of every cgroup (a member only while it is one), in the
 *   first touch's batches, however many (mr_first_signal); then one grace
 *   for the whole run, from after the last of them (mr_grace); then the
 *   kills, for whatever is left.
 * - Each pid named is killed through a pidfd: in its first touch without
 *   --grace (mr_kill_batch), else after the grace, its pidfd opened again
 *   where it was closed to make room, and only where the process is proven
 *   the same (mr_kill_named).
 * - A signal that interrupts the run stops it: no further signal is sent
 *   (mr_stopped, before each one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "act.h"

/* Send sig through t's pidfd, unless the run is interrupted. */
bool mr_send(struct mr_act *a, struct mr_target *t, int sig)
{
	int r;

	mr_begin(a);
	if (mr_stopped(a))
		return false;
	a->run->sent = true;
	if ((r = mr_pidfd_signal(t->pidfd, sig)) == 0) {
		mr_target_signalled(t, sig);
		if (sig == SIGKILL)
			a->run->kill_us = mr_now_us() - a->run->cfg.start_us;
		return true;
	}
	if (r == -ESRCH)
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	else
		mr_target_end(t, MR_FAILED, sig == SIGKILL ? MR_R_KILL : MR_R_FIRST, -r);
	return false;
}

/* Whether t, a member found in a listing, is in its cgroup now. One that
 * left is left out; one whose membership cannot be read is not signalled
 * through its pidfd, which might no longer be a member's. */
bool mr_still_member(struct mr_act *a, struct mr_target *t)
{
	struct mr_run *run = a->run;
	int in = mr_cgroup_holds(run->cfg.proc, &run->cgroups[t->cgroup], t->pid, t->pidfd,
				 run->cfg.recursive);

	if (!mr_target_alive(t))
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	else if (in == 0)
		mr_target_end(t, MR_LEFT_OUT, MR_R_LEFT, 0);
	else if (in < 0)
		mr_target_end(t, MR_FAILED, MR_R_MEMBERSHIP, -in);
	return in == 1 && !mr_target_ended(t);
}

/* The first touch of a batch with --grace: its figures, then the first
 * signal through the pidfd of each target (a cgroup member only while it
 * is one). Nothing waits here: every batch's first signal goes out before
 * anything else (mr_grace). */
int mr_first_signal(struct mr_act *a, const size_t *items, size_t n)
{
	struct mr_run *run = a->run;
	int r;

	if ((r = mr_read_before(a, items, n)) || mr_stopped(a))
		return r;
	for (size_t i = 0; i < n && !run->interrupted; i++) {
		struct mr_target *t = &run->targets[items[i]];

		if (t->state == MR_OPENED && (t->named || mr_still_member(a, t)))
			mr_send(a, t, run->cfg.first_signal);
	}
	return 0;
}

/* The grace, once for the whole run, from after the last first signal:
 * those the signal made exit are released at once (a signal whose action
 * is the default begins the group exit as it is queued; the others
 * process_mrelease refuses, and they stay as they are), then up to --grace
 * for the targets asked to exit to do so by themselves, waited for in
 * batches with the one deadline. A signal that interrupts the run ends it
 * here: nothing more is sent. */
int mr_grace(struct mr_act *a)
{
	struct mr_run *run = a->run;
	int64_t end = mr_now_us() + (int64_t)run->cfg.grace_ms * 1000;
	size_t n, *items;
	bool *gone;
	int r;

	if ((r = mr_release_in(a, MR_ASKED, end)) || run->interrupted)
		return r;
	items = mr_in_state(run, MR_ASKED, &n);
	gone = calloc(n ? n : 1, sizeof(*gone));
	r = items && gone ? mr_wait_targets(a, items, n, end, gone) : -ENOMEM;
	for (size_t i = 0; !r && !run->interrupted && i < n; i++) {
		struct mr_target *t = &run->targets[items[i]];
		struct mr_note nt = { .kind = MR_N_GRACE_END, .pid = t->pid, .cgroup = -1,
				      .sig = run->cfg.first_signal, .n = run->cfg.grace_ms };

		if (gone[i]) {
			mr_exited(run, t);
		} else if (t->state == MR_ASKED) {
			memcpy(nt.comm, t->comm, sizeof(nt.comm));
			mr_note_add(run, nt);
		}
	}
	free(gone);
	free(items);
	return r ? mr_fatal(run, r, "waiting for the grace") : 0;
}

/* A batch's kills of the pids named: their figures first (those not read
 * yet), then SIGKILL through each one's pidfd. Without --grace, this is
 * the first touch's act. */
int mr_kill_batch(struct mr_act *a, const size_t *items, size_t n)
{
	struct mr_run *run = a->run;
	int r;

	if ((r = mr_read_before(a, items, n)) || mr_stopped(a))
		return r;
	for (size_t i = 0; i < n && !run->interrupted; i++) {
		struct mr_target *t = &run->targets[items[i]];

		if (t->named && mr_target_to_kill(t))
			mr_send(a, t, SIGKILL);
	}
	return 0;
}

/* The kills of the pids named that are still to be killed (after the
 * grace), in batches: a pidfd closed to make room is opened again, and the
 * kill goes only to the process proven the same. */
int mr_kill_named(struct mr_act *a)
{
	struct mr_run *run = a->run;
	size_t *items = calloc(run->ntargets ? run->ntargets : 1, sizeof(*items)), n = 0;
	int r;

	if (!items)
		return mr_fatal(run, -ENOMEM, "target list");
	for (size_t i = 0; i < run->ntargets; i++)
		if (run->targets[i].named && mr_target_to_kill(&run->targets[i]))
			items[n++] = i;
	r = n ? mr_batches(a, items, n, mr_kill_batch) : 0;
	free(items);
	return r;
}
