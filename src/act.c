/* act.c: what the phases of a run share (act.h): the notes, the signals
 * that stop a run, the targets and their index by pid, the figures taken
 * before the first act, and the batches.
 *
 * The batches' contract: a run holds at most a->most pidfds at once, the
 * room the limit on open files leaves beside what it keeps aside. A phase
 * holds the pidfds of the targets it works on (mr_hold); when one more
 * does not fit, the pidfds of the targets of earlier batches are closed to
 * make room, and when the batch being filled holds them all, it is full:
 * the phase acts on it and begins the next (mr_batches). Where every pidfd
 * fits, nothing is ever closed, and every phase is one batch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act.h"

void mr_note_add(struct mr_run *run, struct mr_note note)
{
	struct mr_note *v = reallocarray(run->notes, run->nnotes + 1, sizeof(*v));

	/* Notes only explain; without memory for one, the run goes on. */
	if (!v)
		return;
	run->notes = v;
	v[run->nnotes++] = note;
}

void mr_note(struct mr_run *run, enum mr_note_kind kind, int cgroup, size_t n, int errnum)
{
	mr_note_add(run, (struct mr_note){ .kind = kind, .cgroup = cgroup, .n = n, .errnum = errnum });
}

/* A signal that interrupts the run has come: from now on nothing more is
 * sent. Asked before every signal and every write to cgroup.kill. */
bool mr_stopped(struct mr_act *a)
{
	sigset_t pending, both;

	if (!a->run->interrupted && sigpending(&pending) == 0) {
		sigandset(&both, &pending, &a->held);
		a->run->interrupted = !sigisemptyset(&both);
	}
	return a->run->interrupted;
}

/* The indices of the targets in state. */
size_t *mr_in_state(struct mr_run *run, enum mr_state state, size_t *n)
{
	size_t *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < run->ntargets; i++)
		if (run->targets[i].state == state)
			v[(*n)++] = i;
	return v;
}

/* The figures before the first signal, write or release: taken before the
 * last check that the run may go on, so that they cannot delay an act
 * after it. */
void mr_begin(struct mr_act *a)
{
	if (a->begun)
		return;
	a->begun = true;
	a->act_start = mr_now_us();
	mr_mem_available_kb(&a->run->mem_available_before_kb);
	for (size_t c = 0; c < a->run->ncgroups; c++)
		mr_cgroup_memory_kb(&a->run->cgroups[c], &a->run->cgroups[c].memory_before_kb);
}

static int by_pid_then_index(const void *x, const void *y)
{
	const struct mr_pidx *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	return (a->i > b->i) - (a->i < b->i);
}

struct mr_pidx *mr_index_targets(const struct mr_run *run)
{
	struct mr_pidx *v = calloc(run->ntargets ? run->ntargets : 1, sizeof(*v));

	for (size_t i = 0; v && i < run->ntargets; i++)
		v[i] = (struct mr_pidx){ run->targets[i].pid, i };
	if (v)
		qsort(v, run->ntargets, sizeof(*v), by_pid_then_index);
	return v;
}

/* The newest target with this pid among the n indexed, or -1. */
ssize_t mr_find_target(const struct mr_pidx *v, size_t n, pid_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].pid <= pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && v[lo - 1].pid == pid ? (ssize_t)v[lo - 1].i : -1;
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

/* The next batch of the phase under way: the pidfds held so far may be
 * closed to make room for its own. */
void mr_next_batch(struct mr_act *a)
{
	a->batch++;
	if (++a->phase_batches > a->run->batches)
		a->run->batches = a->phase_batches;
}

/* A phase begins, with its first batch. */
void mr_phase(struct mr_act *a)
{
	a->phase_batches = 0;
	mr_next_batch(a);
}

/* Room for one more pidfd: with make, the pidfds of the targets of earlier
 * batches are closed to make it (a later phase opens them again). */
bool mr_room(struct mr_act *a, bool make)
{
	struct mr_run *run = a->run;

	for (size_t i = 0; make && a->open >= a->most && i < run->ntargets; i++)
		if (run->targets[i].pidfd >= 0 && run->targets[i].batch != a->batch)
			mr_close_target(a, &run->targets[i]);
	return a->open < a->most;
}

/* A pidfd was opened for t, in the batch being filled. */
void mr_took(struct mr_act *a, struct mr_target *t)
{
	a->open++;
	t->batch = a->batch;
}

/* Not one pidfd fits beside the descriptors kept aside: t fails, and the
 * limit to raise is said once. */
void mr_no_room(struct mr_act *a, struct mr_target *t)
{
	mr_target_close(t);
	mr_target_end(t, MR_FAILED, MR_R_OPEN, EMFILE);
	if (a->no_room)
		return;
	a->no_room = true;
	mr_note_add(a->run, (struct mr_note){ .kind = MR_N_NO_ROOM, .cgroup = -1,
					      .n = a->fd_used + a->fd_kept, .m = a->fd_limit });
}

/* A pidfd held for no target, closed: one more fits. */
void mr_close_spare(struct mr_act *a, int fd)
{
	close(fd);
	a->open--;
}

void mr_close_target(struct mr_act *a, struct mr_target *t)
{
	if (t->pidfd < 0)
		return;
	mr_target_close(t);
	a->open--;
}

/* Whether the batch being filled holds a pidfd already. */
bool mr_batch_holds(const struct mr_act *a)
{
	for (size_t i = 0; i < a->run->ntargets; i++)
		if (a->run->targets[i].pidfd >= 0 && a->run->targets[i].batch == a->batch)
			return true;
	return false;
}

/* Hold t's pidfd for the batch being filled: kept where it is open, else
 * opened again, proven the same process (mr_target_reopen), with room
 * made by closing an earlier batch's. 0: held. 1: the batch is full, and t
 * is as it was: the caller acts on the batch and begins the next. -errno:
 * t is not held: -ESRCH its process has exited, -EPERM it cannot be proven
 * the same, -EMFILE not one pidfd fits; a target still to be worked on
 * then ends (exited, or failed), one that has ended stays as it is. */
int mr_hold(struct mr_act *a, struct mr_target *t)
{
	bool ended = mr_target_ended(t);
	int r;

	if (t->pidfd >= 0) {
		t->batch = a->batch;
		return 0;
	}
	if (!mr_room(a, true)) {
		r = -EMFILE;
	} else if ((r = mr_target_reopen(a->run, t)) == 0) {
		mr_took(a, t);
		return 0;
	} else if (r == -ENFILE || r == -EMFILE) {
		/* The kernel has fewer than were counted: what is held is all
		 * that fits. */
		a->most = a->open;
		r = -EMFILE;
	}
	if (r == -EMFILE && mr_batch_holds(a))
		return 1;
	if (r == -EMFILE && !ended)
		mr_no_room(a, t);
	else if (r == -ESRCH && !ended)
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
	else if (r == -EPERM && !ended)
		mr_target_end(t, MR_FAILED, MR_R_UNPROVEN, 0);
	else if (!ended)
		mr_target_end(t, MR_FAILED, MR_R_OPEN, -r);
	if (r == -ESRCH && !ended && a->run->cfg.measure != MR_MEASURE_NONE)
		t->after = (struct mr_mem){ 0, 0, 0, 0 };
	return r;
}

/* Hold t now, for a phase that acts on each target as it comes: where the
 * batch is full, the next begins with t. 0, or -errno as mr_hold says. */
int mr_hold_one(struct mr_act *a, struct mr_target *t)
{
	int r = mr_hold(a, t);

	if (r == 1) {
		mr_next_batch(a);
		r = mr_hold(a, t);
	}
	return r == 1 ? -EMFILE : r;
}

/* A phase over the targets in items: fn is given them in batches, each
 * target of a batch holding its pidfd; one that cannot be held is left
 * out (it has ended, as mr_hold says). Stops when fn fails or a signal
 * interrupts the run. */
int mr_batches(struct mr_act *a, const size_t *items, size_t n, mr_batch_fn fn)
{
	size_t *b = calloc(n ? n : 1, sizeof(*b)), k = 0;
	int r = 0;

	if (!b)
		return mr_fatal(a->run, -ENOMEM, "batch list");
	mr_phase(a);
	for (size_t i = 0; !r && i < n && !a->run->interrupted;) {
		int h = mr_hold(a, &a->run->targets[items[i]]);

		if (h == 1) {
			r = fn(a, b, k);
			k = 0;
			mr_next_batch(a);
			continue;
		}
		if (h == 0)
			b[k++] = items[i];
		i++;
	}
	if (!r && k && !a->run->interrupted)
		r = fn(a, b, k);
	free(b);
	return r;
}
