/* act.h: what the phases of a run share, private to src/. run.c orders
 * the phases and nothing in src/ calls it; each phase is a file that
 * opens with its contract:
 *   select.c   the picks, and their first touch (open, read, first act)
 *   kill.c     the first signal, the grace, the kills of the pids named
 *   cgkill.c   the kills of the cgroups, and the refusals that stop them
 *   jobs.c     readings and releases on the worker threads
 *   settle.c   the exits waited for, and what is left
 *   predict.c  the dry run
 * The state they share lives below them all, in act.c: the notes, the
 * signals that stop a run, the index of targets by pid, and the batches.
 *
 * A phase goes over every target it concerns, once per run. A target holds
 * a pidfd while a phase works on it; when the pidfds do not all fit under
 * the limit on open files, a phase goes through its targets in batches of
 * as many as fit, closing the pidfds of an earlier batch to make room, and
 * a later phase opens them again, proven the same process
 * (mr_target_reopen). A limit changes the size of the batches, never which
 * phases run or how often one waits.
 */
#ifndef MR_ACT_H
#define MR_ACT_H

#include "mrelease.h"

/* Descriptors kept aside from the pidfds, for the main thread (at most
 * three at once: a cgroup walk's directory and its listing, or the write to
 * cgroup.kill, or a /proc file), for the pool (its eventfd), and per thread
 * for its file and its jobs' duplicates. */
#define MR_FD_RESERVE 4
#define MR_FD_POOL 1
#define MR_FD_PER_THREAD (MR_JOBS_PER_THREAD + 1)
/* A release that has not returned this long is left behind (the bound is
 * --wait's time, and at least this much, even with --wait 0). */
#define MR_BOUND_MIN_MS 1000
/* Kill until empty: at most this many listings of one cgroup, and no longer
 * than the bound. A killed process cannot fork, so each listing finds only
 * what was made before the kill before it. */
#define MR_ROUNDS_MAX 64
/* Jobs handed to the pool ahead of the threads: each holds a descriptor. */
#define MR_JOBS_PER_THREAD 2

/* A pid to select, from a name or a listing. */
struct mr_pick {
	pid_t pid;
	int cgroup;
	uint64_t ino;
	bool named, stdin;
	bool opened; /* made a target, by the first touch or a cgroup's listing */
};

/* What one run shares between its phases. */
struct mr_act {
	struct mr_run *run;
	struct mr_pool *pool;
	sigset_t held;         /* the signals that interrupt a run */
	int64_t read_left_us;  /* what is left of MR_READ_BOUND_MS for readings */
	int64_t act_start;
	size_t cap;            /* of run->targets */
	struct mr_pick *picks; /* what was selected, in pid order */
	size_t npicks;
	size_t most;           /* pidfds that fit at once */
	size_t open;           /* pidfds held now, for targets or spare */
	unsigned long batch;   /* the batch being filled */
	unsigned int phase_batches; /* batches of the phase under way */
	size_t fd_used, fd_kept, fd_limit; /* in use, kept aside, the limit */
	size_t undying;        /* --dying: processes stat said were not dying */
	bool no_room;          /* not one pidfd fitted: said once */
	int64_t release_until; /* the release phase under way gives up then */
	unsigned int retries;
	size_t stuck;
	bool nosys;
	bool begun;            /* the figures before the first act are taken */
	int nested;            /* mrelease is in a nested pid namespace: 1, 0,
				* or -errno when that cannot be told */
};

/* The targets by pid, to find the one a listed pid is. */
struct mr_pidx {
	pid_t pid;
	size_t i;
};

enum mr_job_kind {
	MR_JOB_READ,    /* the figures before */
	MR_JOB_RELEASE, /* release, then the figures after */
};

/* What a phase does with each batch of targets it holds. */
typedef int (*mr_batch_fn)(struct mr_act *a, const size_t *items, size_t n);

/* A step failed with -errno r: run->fatal names it. Inline, so that
 * callers (and the analyzer) see r come back. */
static inline int mr_fatal(struct mr_run *run, int r, const char *what)
{
	snprintf(run->fatal, sizeof(run->fatal), "%s", what);
	return r;
}

/* act.c */
void mr_note(struct mr_run *run, enum mr_note_kind kind, int cgroup, size_t n, int errnum);
bool mr_stopped(struct mr_act *a);
size_t *mr_in_state(struct mr_run *run, enum mr_state state, size_t *n);
void mr_begin(struct mr_act *a);
struct mr_pidx *mr_index_targets(const struct mr_run *run);
ssize_t mr_find_target(const struct mr_pidx *v, size_t n, pid_t pid);
struct mr_target *mr_add_target(struct mr_act *a, const struct mr_target *t);
void mr_phase(struct mr_act *a);
void mr_next_batch(struct mr_act *a);
bool mr_room(struct mr_act *a, bool make);
bool mr_batch_holds(const struct mr_act *a);
void mr_took(struct mr_act *a, struct mr_target *t);
void mr_no_room(struct mr_act *a, struct mr_target *t);
void mr_close_spare(struct mr_act *a, int fd);
void mr_close_target(struct mr_act *a, struct mr_target *t);
int mr_hold(struct mr_act *a, struct mr_target *t);
int mr_hold_one(struct mr_act *a, struct mr_target *t);
int mr_batches(struct mr_act *a, const size_t *items, size_t n, mr_batch_fn fn);

/* select.c */
int mr_select(struct mr_act *a, const struct mr_pidlist *named);
int mr_touch(struct mr_act *a, mr_batch_fn fn);
struct mr_pick *mr_find_pick(struct mr_act *a, pid_t pid);
struct mr_pick *mr_pending(struct mr_act *a, pid_t pid);
int mr_open_pick(struct mr_act *a, struct mr_pick *p, int pidfd, struct mr_target **out);

/* kill.c */
int mr_first_signal(struct mr_act *a, const size_t *items, size_t n);
int mr_kill_batch(struct mr_act *a, const size_t *items, size_t n);
int mr_grace(struct mr_act *a);
int mr_kill_named(struct mr_act *a);
bool mr_still_member(struct mr_act *a, struct mr_target *t);
bool mr_send(struct mr_act *a, struct mr_target *t, int sig);

/* cgkill.c */
bool mr_check_listing(struct mr_act *a, int c, const struct mr_pidlist *l, size_t outside);
void mr_plan_kills(struct mr_run *run);
int mr_kill_cgroups(struct mr_act *a);
void mr_stop_rest(struct mr_run *run);

/* jobs.c */
int mr_run_jobs(struct mr_act *a, enum mr_job_kind kind, const size_t *items, size_t n,
		int64_t deadline);
int mr_read_before(struct mr_act *a, const size_t *items, size_t n);
int mr_release_in(struct mr_act *a, enum mr_state state, int64_t deadline);
void mr_end_not_dying(struct mr_run *run, struct mr_target *t, bool dumping);

/* predict.c */
int mr_predict(struct mr_act *a, const size_t *items, size_t n);
void mr_predict_end(struct mr_act *a);
void mr_predict_writes(struct mr_run *run);

/* settle.c */
int mr_wait_targets(struct mr_act *a, const size_t *items, size_t n, int64_t deadline,
		    bool *gone);
void mr_exited(struct mr_run *run, struct mr_target *t);
void mr_wait_exited(struct mr_act *a);
int mr_wait_exits(struct mr_act *a);
void mr_finish(struct mr_act *a);

#endif
