/* settle.c: the end of a run: the exits waited for (--wait, or the short
 * wait that makes the counters read after hold what an exit freed), and
 * what is left: targets not done were interrupted, each cgroup is counted,
 * and the targets are put in pid order for the report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"

/* Wait until the targets in items[0..n) exit, or deadline: gone[i] says
 * which did. In batches of as many pidfds as fit, with the one deadline:
 * a pidfd closed to make room is opened again, and a pid whose process is
 * not the same any more has exited. Each batch is polled at least once,
 * so that those reached after the deadline are still seen if gone. A
 * signal that interrupts the run ends the wait. */
int mr_wait_targets(struct mr_act *a, const size_t *items, size_t n, int64_t deadline,
		    bool *gone)
{
	struct mr_run *run = a->run;
	int *fds = calloc(n ? n : 1, sizeof(*fds)), r = 0;
	size_t *at = calloc(n ? n : 1, sizeof(*at));
	bool *b = calloc(n ? n : 1, sizeof(*b));

	if (!fds || !at || !b) {
		r = -ENOMEM;
		goto out;
	}
	mr_phase(a);
	for (size_t i = 0; !r && i < n && !run->interrupted;) {
		size_t k = 0;

		for (int h; i < n; i++) {
			struct mr_target *t = &run->targets[items[i]];

			if ((h = mr_hold(a, t)) == 1)
				break;
			gone[i] = h == -ESRCH;
			if (h == 0) {
				at[k] = i;
				fds[k++] = t->pidfd;
			}
		}
		if (k && (r = mr_wait_exit(fds, k, deadline, &run->cfg.waitmask, b)) == -EINTR)
			run->interrupted = true;
		for (size_t j = 0; !r && j < k; j++)
			gone[at[j]] = b[j];
		if (i < n)
			mr_next_batch(a);
	}
out:
	free(fds);
	free(at);
	free(b);
	return r == -EINTR ? 0 : r;
}

/* A target that exited by itself: its memory came back with its exit. */
void mr_exited(struct mr_run *run, struct mr_target *t)
{
	mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	if (run->cfg.measure != MR_MEASURE_NONE)
		t->after = (struct mr_mem){ 0, 0, 0, 0 };
}

/* A target that exited by itself may still be freeing its memory:
 * process_mrelease says ESRCH once its address space is detached, and the
 * pages come back as the exit goes on. The exits of those still held are
 * waited for (their pidfds poll readable only after that),
 * MR_READ_BOUND_MS at most, so that the counters read afterwards (the
 * cgroups', MemAvailable) hold what they freed. Only the figures depend
 * on it: a wait that cannot be made is skipped. */
void mr_wait_exited(struct mr_act *a)
{
	struct mr_run *run = a->run;
	size_t n, k = 0, *items = mr_in_state(run, MR_EXITED, &n);
	int *fds = calloc(n ? n : 1, sizeof(*fds));
	bool *gone = calloc(n ? n : 1, sizeof(*gone));

	for (size_t i = 0; items && fds && i < n; i++)
		if (run->targets[items[i]].pidfd >= 0)
			fds[k++] = run->targets[items[i]].pidfd;
	/* A signal let in by the wait's mask is caught there: it stops the
	 * run as anywhere else. */
	if (gone && k && mr_wait_exit(fds, k, mr_now_us() + (int64_t)MR_READ_BOUND_MS * 1000,
				      &run->cfg.waitmask, gone) == -EINTR)
		run->interrupted = true;
	free(items);
	free(fds);
	free(gone);
}

/* The wait phase, after the last kill of the run and its releases, with
 * one deadline: --wait for the released targets to exit; and, without
 * process_mrelease, for the killed ones, in its place. */
int mr_wait_exits(struct mr_act *a)
{
	struct mr_run *run = a->run;
	size_t *items = calloc(run->ntargets ? run->ntargets : 1, sizeof(*items)), n = 0;
	bool *gone = calloc(run->ntargets ? run->ntargets : 1, sizeof(*gone));
	int r = items && gone ? 0 : -ENOMEM;

	for (size_t i = 0; !r && i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		if (t->waited == MR_WAITED_NO &&
		    ((run->cfg.wait && t->state == MR_RELEASED) || (a->nosys && !mr_target_ended(t))))
			items[n++] = i;
		else if (run->cfg.wait && t->state == MR_EXITED && t->waited == MR_WAITED_NO)
			mr_target_waited(t, true);
	}
	if (!r && n)
		r = mr_wait_targets(a, items, n, mr_now_us() + (int64_t)run->cfg.wait_ms * 1000, gone);
	for (size_t i = 0; !r && i < n; i++) {
		struct mr_target *t = &run->targets[items[i]];

		if (t->state == MR_RELEASED)
			mr_target_waited(t, gone[i]);
		else if (gone[i] && !mr_target_ended(t))
			mr_exited(run, t);
		else if (!run->interrupted && !mr_target_ended(t))
			mr_target_end(t, MR_FAILED, MR_R_NOSYS, 0);
	}
	free(items);
	free(gone);
	return r ? mr_fatal(run, r, "waiting for the targets to exit") : 0;
}

/* The picks no batch reached: the run stopped first. Kept as numbers, as
 * the named pids with no process are; the report makes them rows. */
static void unreached(struct mr_act *a)
{
	struct mr_run *run = a->run;
	size_t n = 0;

	for (size_t i = 0; i < a->npicks; i++)
		n += !a->picks[i].opened;
	if (!n || !(run->unreached = calloc(n, sizeof(*run->unreached))))
		return;
	for (size_t i = 0; i < a->npicks; i++)
		if (!a->picks[i].opened)
			run->unreached[run->nunreached++] = a->picks[i].pid;
}

/* Members found by a later listing were appended: the report goes by pid.
 * Without memory for it, the order stays as selected. */
static void sort_by_pid(struct mr_run *run)
{
	struct mr_pidx *idx = mr_index_targets(run);
	struct mr_target *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	for (size_t i = 0; idx && v && i < run->ntargets; i++)
		v[i] = run->targets[idx[i].i];
	if (idx && v && run->ntargets)
		memcpy(run->targets, v, run->ntargets * sizeof(*v));
	free(idx);
	free(v);
}

/* Whether a target with this pid was sent SIGKILL (targets in pid order). */
static bool got_kill(const struct mr_run *run, pid_t pid)
{
	size_t lo = 0, hi = run->ntargets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (run->targets[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < run->ntargets && run->targets[lo].pid == pid; lo++)
		if (run->targets[lo].signal == SIGKILL)
			return true;
	return false;
}

/* What is left once the work is over: targets not done were interrupted;
 * each cgroup's members and results are counted; and the targets are put
 * in pid order, for the report. */
void mr_finish(struct mr_act *a)
{
	struct mr_run *run = a->run;
	size_t unfinished = 0, undying = 0, left_out = 0, given_up = 0, kept = 0;

	for (size_t i = 0; i < run->ntargets; i++) {
		struct mr_target *t = &run->targets[i];

		if (!mr_target_ended(t)) {
			mr_target_end(t, MR_INTERRUPTED, MR_R_NONE, 0);
			unfinished++;
		}
		undying += t->state == MR_LEFT_OUT && t->reason == MR_R_NOT_DYING;
		left_out += t->state == MR_LEFT_OUT;
		/* Those the interruption left unfinished are said by its note. */
		given_up += t->figures == MR_FIG_GIVEN_UP && t->state != MR_LEFT_OUT &&
			    t->state != MR_INTERRUPTED;
		mr_target_close(t);
	}
	unreached(a);
	unfinished += run->nunreached;
	if (run->interrupted)
		mr_note(run, MR_N_INTERRUPTED, -1, unfinished, 0);
	if (run->batches > 1)
		mr_note_add(run, (struct mr_note){ .kind = MR_N_BATCHES, .cgroup = -1,
						   .n = run->batches, .m = a->most });
	run->not_dying = a->undying;
	if (run->cfg.dying) {
		mr_note(run, MR_N_NOT_DYING, -1, undying + a->undying, 0);
		mr_note(run, MR_N_LEFT_OTHER, -1, left_out - undying, 0);
	}
	if (given_up)
		mr_note(run, MR_N_GIVEN_UP, -1, given_up, 0);
	if (a->stuck)
		mr_note(run, MR_N_STUCK, -1, a->stuck, 0);
	if (a->retries)
		mr_note(run, MR_N_RETRIES, -1, a->retries, 0);
	if (a->nosys)
		mr_note(run, MR_N_NOSYS, -1, 0, 0);
	for (size_t c = 0; c < run->ncgroups; c++) {
		struct mr_cgroup *cg = &run->cgroups[c];

		if (run->sent)
			mr_cgroup_memory_kb(cg, &cg->memory_after_kb);
		cg->members = cg->released = cg->failed = cg->left_out = 0;
		for (size_t i = 0; i < run->ntargets; i++) {
			const struct mr_target *t = &run->targets[i];

			if (t->cgroup != (int)c)
				continue;
			cg->left_out += t->state == MR_LEFT_OUT;
			cg->members += t->state != MR_LEFT_OUT;
			cg->released += t->state == MR_RELEASED;
			cg->failed += t->state == MR_FAILED;
		}
	}
	sort_by_pid(run);
	/* A note that the grace ended says a KILL follows: kept where one did
	 * (a signal, or a cgroup refused, can stop the run before it). */
	for (size_t i = 0; i < run->nnotes; i++)
		if (run->notes[i].kind != MR_N_GRACE_END || got_kill(run, run->notes[i].pid))
			run->notes[kept++] = run->notes[i];
	run->nnotes = kept;
}
