/* run.h: what the phases of a run share, private to src/. A run goes
 * select.c (the targets), jobs.c (readings and releases on the worker
 * threads), kill.c (the grace, the kills and their refusals), predict.c
 * (the dry run) and settle.c (the exits, and what is left); run.c holds
 * mr_run(), their table of contents, the waves, and the state they share.
 */
#ifndef MR_RUN_H
#define MR_RUN_H

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
	bool opened; /* made a target, by a wave or by a cgroup's listing */
};

/* What one run shares between its phases. */
struct mr_act {
	struct mr_run *run;
	struct mr_pool *pool;
	sigset_t held;        /* the signals that interrupt a run */
	int64_t read_left_us; /* what is left of MR_READ_BOUND_MS for readings */
	int64_t exit_left_us; /* and for the exits waited for before counters */
	int64_t act_start;
	size_t cap;           /* of run->targets */
	struct mr_pick *picks; /* what was selected, in pid order */
	size_t npicks;
	size_t next, next_named; /* where the waves go on, in picks */
	size_t room;          /* pidfds that may still be opened */
	size_t most;          /* pidfds that fit at once */
	size_t fd_used, fd_kept, fd_limit; /* in use, kept aside, the limit */
	size_t undying;       /* --dying: processes stat said were not dying */
	bool no_room;         /* not one pidfd fitted: said once */
	bool in_wave;         /* a pidfd has been opened since the last close */
	unsigned int retries;
	size_t stuck;
	bool nosys;
	bool begun;           /* the figures before the first act are taken */
	bool cgroups_killed;  /* the cgroups' kills are done */
	int nested;           /* mrelease is in a nested pid namespace: 1, 0,
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

/* A step failed with -errno r: run->fatal names it. Inline, so that
 * callers (and the analyzer) see r come back. */
static inline int mr_fatal(struct mr_run *run, int r, const char *what)
{
	snprintf(run->fatal, sizeof(run->fatal), "%s", what);
	return r;
}

/* run.c */
void mr_note(struct mr_run *run, enum mr_note_kind kind, int cgroup, size_t n, int errnum);
bool mr_stopped(struct mr_act *a);
size_t *mr_in_state(struct mr_run *run, enum mr_state state, size_t *n);
void mr_begin(struct mr_act *a);
struct mr_pidx *mr_index_targets(const struct mr_run *run);
ssize_t mr_find_target(const struct mr_pidx *v, size_t n, pid_t pid);
void mr_take_room(struct mr_act *a);
void mr_close_spare(struct mr_act *a, int fd);
int mr_end_wave(struct mr_act *a);
int mr_make_room(struct mr_act *a);

/* select.c */
int mr_select(struct mr_act *a, const struct mr_pidlist *named);
bool mr_picks_left(struct mr_act *a, bool named_only);
ssize_t mr_open_wave(struct mr_act *a, bool named_only);
struct mr_pick *mr_find_pick(struct mr_act *a, pid_t pid);
struct mr_pick *mr_pending(struct mr_act *a, pid_t pid);
int mr_open_pick(struct mr_act *a, struct mr_pick *p, int pidfd, struct mr_target **out);

/* jobs.c */
int mr_run_jobs(struct mr_act *a, enum mr_job_kind kind, const size_t *items, size_t n,
		int64_t deadline);
int mr_read_before(struct mr_act *a);
int mr_release_in(struct mr_act *a, enum mr_state state);
void mr_end_not_dying(struct mr_run *run, struct mr_target *t, bool dumping);

/* kill.c */
bool mr_check_listing(struct mr_act *a, int c, const struct mr_pidlist *l, size_t outside);
void mr_plan_kills(struct mr_run *run);
int mr_grace(struct mr_act *a);
int mr_kill_named(struct mr_act *a);
int mr_kill_cgroups(struct mr_act *a);
void mr_settle_members(struct mr_act *a);
void mr_stop_rest(struct mr_run *run);

/* predict.c */
void mr_predict(struct mr_act *a);
void mr_predict_cgroups(struct mr_run *run);

/* settle.c */
int mr_wait_targets(struct mr_act *a, const size_t *items, size_t n, int64_t deadline,
		    bool *gone);
void mr_exited(struct mr_run *run, struct mr_target *t);
void mr_wait_exited(struct mr_act *a);
int mr_wait_exits(struct mr_act *a);
void mr_close_done(struct mr_act *a);
void mr_finish(struct mr_act *a);

#endif
