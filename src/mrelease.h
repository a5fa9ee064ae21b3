/* mrelease.h: the core library's interface.
 *
 * Map of src/:
 *   parse.c    strict parsers: numbers, seconds, pids, signals, CPU lists,
 *              stdin pids
 *   file.c     small whole-file reads and writes; JSON and terminal escaping
 *   sys.h      syscall shims and kernel constants
 *   measure.c  /proc reads: identity and memory figures (direct), MemAvailable
 *              (libproc2)
 *   protect.c  what a run guards: its own memory and OOM score, descriptors,
 *              the chain of its ancestors
 *   target.c   opening a target by pidfd (and again, proven the same
 *              process), and checking what it is
 *   pool.c     worker threads that run the jobs they are given
 *   release.c  signals through pidfds, process_mrelease with retries, waits
 *   cgpath.c   cgroup mounts, and naming a cgroup: paths, pasted lines, units
 *   cgroup.c   a cgroup's members, its membership checks, cgroup.kill
 *   cgmem.c    a cgroup's memory counters
 *   run.c      a whole run: the table of contents of its phases
 *   act.c      what the phases share (act.h): notes, the signals that stop
 *              a run, and the batches that bound the pidfds held at once
 *   select.c   the targets: pids named, cgroup members, the dying; and
 *              their first touch, in batches
 *   kill.c     the first signal, the grace, the kills of the pids named
 *   cgkill.c   the kills of the cgroups, and the refusals that stop them
 *   jobs.c     readings and releases on the worker threads
 *   settle.c   the exits waited for, and what is left
 *   predict.c  the dry run
 *   sched.c    nice and CPU affinity of the releasing threads
 *   psi.c      memory pressure triggers, for --follow
 *   robust.c   whether a dying process can be released at once without
 *              leaving a robust lock it holds unmarked, for --follow
 *   killwatch.c every SIGKILL the kernel generates, through a tracepoint,
 *              for --follow
 *
 * Nothing here prints or exits: functions return 0 or -errno, and what
 * became of each target is recorded in it (and what the run noticed, in its
 * notes) for cmd/ to report.
 */
#ifndef MRELEASE_H
#define MRELEASE_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* A figure that was not measured: JSON null, "-" in the table. */
#define MR_UNKNOWN ((int64_t)-1)

#define MR_PID_MAX 4194304 /* PID_MAX_LIMIT on 64-bit kernels */
#define MR_COMM_LEN 16     /* TASK_COMM_LEN */
#define MR_SECONDS_MAX 86400
/* How long, in all, a run's readings of memory figures may hold up its
 * kills; what is not read by then is given up. */
#define MR_READ_BOUND_MS 100

enum mr_measure_mode {
	MR_MEASURE_STATUS, MR_MEASURE_SMAPS, MR_MEASURE_NONE,
	MR_MEASURE_RSS, /* statm: RSS alone, for the figures after a release */
};

/* A target goes from selected towards released; each from MR_RELEASED on
 * is where it ends. It changes only through mr_target_*(). */
enum mr_state {
	MR_SELECTED,    /* named, or listed in a cgroup: nothing done yet */
	MR_OPENED,      /* its pidfd is open, and it is what it should be */
	MR_ASKED,       /* the --grace signal was accepted for it (t->signal) */
	MR_KILLED,      /* SIGKILL was accepted for it, or its cgroup's write */
	MR_RELEASED,    /* process_mrelease stripped its address space */
	MR_EXITED,      /* gone, or its own exit freed it, before a release did */
	MR_FAILED,      /* see t->reason */
	MR_LEFT_OUT,    /* not a target after all (t->reason); not a failure */
	MR_INTERRUPTED, /* a signal stopped the run before it was done with it */
	MR_PREDICTED,   /* dry run: the run would kill (with --kill) and release it */
};

/* Why a target failed or was left out. */
enum mr_reason {
	MR_R_NONE,
	MR_R_NO_PROCESS,  /* named, and there is no such process */
	MR_R_INIT,        /* pid 1 of our pid namespace */
	MR_R_SELF,        /* mrelease itself */
	MR_R_ANCESTOR,    /* a process mrelease runs under; see t->comm */
	MR_R_KTHREAD,
	MR_R_THREAD,      /* a thread id, not a process; see t->tgid */
	MR_R_INODE,       /* not the pidfs inode that was asked for (t->ino) */
	MR_R_NO_PIDFS,    /* an inode was asked for, but pidfds have none here */
	MR_R_NO_PIDFD,    /* pidfd_open is missing */
	MR_R_OPEN,        /* pidfd_open failed: errnum */
	MR_R_FIRST,       /* the --grace signal could not be sent: errnum */
	MR_R_KILL,        /* SIGKILL could not be sent: errnum */
	MR_R_RELEASE,     /* process_mrelease failed: errnum */
	MR_R_FILTERED,    /* process_mrelease refused by a seccomp filter (EPERM,
			   * which the call itself never returns) */
	MR_R_NOT_EXITING, /* not dying, and --kill not given */
	MR_R_SHARED_MM,   /* killed, but its address space is shared with a live process */
	MR_R_COREDUMP,    /* killed, but not released while its core dump ran */
	MR_R_NOSYS,       /* no process_mrelease, and it did not exit within the wait */
	MR_R_STUCK,       /* its release did not return within the bound */
	MR_R_NO_WORKER,   /* no worker thread was left to release it */
	MR_R_MEMBERSHIP,  /* whether it is in its cgroup cannot be read: errnum */
	MR_R_STOPPED,     /* not killed: the run stopped at a cgroup it refused */
	MR_R_UNPROVEN,    /* its pidfd was closed to make room, and the process
			   * its pid names now cannot be proven the same one */
	/* Left out: */
	MR_R_LEFT,        /* not in the cgroup (any more) when its kill came */
	MR_R_GONE,        /* a cgroup member that was gone before it was opened, or
			   * whose pid named another process by then */
	MR_R_NOT_DYING,   /* --dying: it is not dying */
	MR_R_ROBUST,      /* guarded: it may hold a robust lock that its exit must
			   * mark; released once dying long enough (cfg.aged) */
	MR_R_ON_CPU,      /* guarded: a thread of it may still run user code, and
			   * take such a lock; asked again soon */
};

/* Why a target's figures are null. */
enum mr_figures {
	MR_FIG_UNREAD,    /* not read yet, or not asked for (--measure=none) */
	MR_FIG_READ,      /* read */
	MR_FIG_ERRNO,     /* fig_file could not be read: fig_errnum */
	MR_FIG_GIVEN_UP,  /* not read within MR_READ_BOUND_MS */
	MR_FIG_NO_THREAD, /* no worker thread to read them without delaying the kill */
	MR_FIG_LATE,      /* found by a listing after the selection (kill until
	                   * empty, or the one just before a cgroup.kill write) */
};

struct mr_mem {
	int64_t rss_kb, pss_kb, anon_kb, swap_kb;
};

/* What --wait saw of a released target. */
enum mr_waited {
	MR_WAITED_NO,      /* not waited for */
	MR_WAITED_GONE,    /* it exited within the wait */
	MR_WAITED_RUNNING, /* still there when the wait ended */
};

struct mr_target {
	pid_t pid;
	int cgroup;  /* index into the run's cgroups, or -1 */
	enum mr_state state;
	enum mr_reason reason;
	int errnum;
	int signal;  /* the last signal accepted for it, or 0 */
	int pidfd;
	uint64_t ino; /* its pidfd's pidfs inode (0 before Linux 6.9), or with
		       * MR_R_INODE the one that was asked for */
	uint64_t start; /* its start time, in clock ticks after boot (0: unread):
			 * with ino, what proves a pid opened again is its own */
	unsigned long batch; /* the run's: the batch its pidfd is held for */
	bool named;  /* named by pid, not only found in a cgroup */
	bool stdin;  /* named on standard input */
	pid_t tgid;
	pid_t mm_pid; /* where /proc shows its memory: pid, or a live thread */
	char comm[MR_COMM_LEN];
	struct mr_mem before, after;
	/* The figures are optional, the kill is not. */
	enum mr_figures figures;
	const char *fig_file;
	int fig_errnum;
	int64_t release_us;
	enum mr_waited waited;
	bool late;    /* opened after the write to cgroup.kill that killed it: its
		       * pid may name another process by then */
};

/* How a cgroup's members are killed. */
enum mr_cgkill {
	MR_CGKILL_NONE,
	MR_CGKILL_FILE,        /* one write to cgroup.kill */
	MR_CGKILL_UNTIL_EMPTY, /* list, kill each through its pidfd, list again */
};

/* A cgroup named by --cgroup or --unit, with what was found and done. */
struct mr_cgroup {
	char *path;        /* absolute, as resolved */
	char *rel;         /* as /proc/PID/cgroup names it */
	char *controllers; /* v1: the hierarchy's super options */
	bool v2;
	bool root;         /* the top of a cgroup mount: every process below it */
	char *memory_file; /* memory.current, or v1 memory.usage_in_bytes; or NULL */
	uint64_t id;       /* v2: its id (its directory's inode number) */
	uint64_t *ids;     /* v2: the ids of the cgroups its last listing visited,
			    * sorted */
	size_t nids;
	enum mr_cgkill kill;
	bool killed;       /* cgroup.kill was written, or kill-until-empty ended empty */
	bool settled;      /* its kill is done: its members are settled by it */
	int kill_errnum;   /* the write to cgroup.kill, or the listing, failed */
	unsigned int rounds;  /* listings made for its kill, by either method */
	size_t remaining;  /* members not killed when kill-until-empty stopped */
	size_t outside;    /* members outside our pid namespace (listed as 0) */
	size_t members, released, failed, left_out;
	int64_t memory_before_kb, memory_after_kb;
};

struct mr_cgmount {
	char *path;
	char *root; /* the hierarchy's directory mounted there */
	bool v2;
	char *options; /* super options: the v1 controllers */
};

struct mr_cgmounts {
	struct mr_cgmount *m;
	size_t n;
};

/* How the releasing threads run. */
struct mr_sched {
	bool set_nice;
	int nice;
	bool set_affinity;
	cpu_set_t cpus;
};

/* A pid as named, with the pidfs inode the caller expects it to have
 * ("PID:INODE"), or 0 for any. */
struct mr_pidspec {
	pid_t pid;
	bool stdin; /* read from standard input: a generated list */
	uint64_t ino;
};

struct mr_pidlist {
	struct mr_pidspec *v;
	size_t len, cap;
};

/* What a run noticed, for cmd/ to tell (some only with --verbose). */
enum mr_note_kind {
	MR_N_THREADS,       /* n: threads the jobs run on (0: the main thread) */
	MR_N_THREADS_SHORT, /* n, errnum: fewer threads than asked */
	MR_N_NICE,          /* errnum: --nice could not be applied */
	MR_N_AFFINITY,      /* errnum: --affinity could not be applied */
	MR_N_CGKILL,        /* cgroup: killed with cgroup.kill */
	MR_N_UNTIL_EMPTY,   /* cgroup, n: killed until empty in n listings */
	MR_N_NOT_EMPTY,     /* cgroup, n: n members remain after kill-until-empty */
	MR_N_KILL_FAILED,   /* cgroup, errnum: its kill failed */
	MR_N_OUTSIDE,       /* cgroup, n: members outside our pid namespace, not
			     * released (no --kill) */
	MR_N_GIVEN_UP,      /* n: targets whose figures were given up */
	MR_N_STUCK,         /* n: releases that did not return in time */
	MR_N_RETRIES,       /* n: process_mrelease retries */
	MR_N_NOSYS,         /* no process_mrelease: waited for the exits */
	MR_N_GRACE_END,     /* pid, comm, sig, n (ms): did not exit in the grace */
	MR_N_NOT_DYING,     /* n: --dying: processes not dying, left alone */
	MR_N_LEFT_OTHER,    /* n: --dying: the others left out */
	MR_N_INTERRUPTED,   /* n: targets left unfinished */
	MR_N_NO_KCMP,       /* errnum: a dry run cannot tell shared address spaces */
	MR_N_BATCHES,       /* n batches in a phase at most, m pidfds at once */
	MR_N_NO_ROOM,       /* n descriptors in use or kept aside, m the limit:
			     * not one pidfd fits */
	MR_N_THREADS_ROOM,  /* n threads of m asked: the limit on open files
			     * leaves room for no more beside the pidfds */
	MR_N_COUNT
};

struct mr_note {
	enum mr_note_kind kind;
	pid_t pid;
	int cgroup; /* index into the run's cgroups, or -1 */
	int errnum;
	int sig;
	size_t n, m;
	char comm[MR_COMM_LEN];
};

/* Why a cgroup is not killed at all: what it holds. */
enum mr_refusal {
	MR_REFUSE_NONE,
	MR_REFUSE_SELF,     /* mrelease itself */
	MR_REFUSE_ANCESTOR, /* a process mrelease runs under (pid 1 included) */
	MR_REFUSE_OUTSIDE,  /* a member outside our pid namespace (listed as 0) */
	MR_REFUSE_INIT,     /* pid 1 of our pid namespace */
	MR_REFUSE_UNSEEN,   /* v1, and we are in a nested pid namespace: a v1
			     * listing leaves out what we cannot see */
};

struct mr_refused {
	enum mr_refusal what;
	int cgroup;
	pid_t pid;
	char comm[MR_COMM_LEN];
};

/* The processes a run never kills: itself, and the chain of processes it
 * runs under, up to pid 1. */
struct mr_ancestor {
	pid_t pid;
	char comm[MR_COMM_LEN];
};

/* A memory pressure trigger: "some" or "full" stalls of stall_us within
 * any window_us. */
struct mr_pressure {
	bool full;
	unsigned int stall_us, window_us;
};

/* What the caller asks of a run. */
struct mr_config {
	bool kill, dry_run, recursive, wait, grace, dying;
	int first_signal; /* --grace: sent first (SIGTERM) */
	enum mr_measure_mode measure;
	unsigned int grace_ms, wait_ms;
	unsigned int jobs; /* 0: one per CPU of the affinity set */
	struct mr_sched sched;
	/* The signal mask while the run waits: the caller blocks the signals
	 * that interrupt a run, and lets them in here. */
	sigset_t waitmask;
	const char *proc; /* "/proc": a seam for tests */
	int64_t start_us; /* when mrelease started, for kill_us */
	/* --follow's guard: a target that may hold a robust futex lock is
	 * released only if aged (sorted by pid; an inode of 0 matches any)
	 * names it, the caller having seen it dying long enough. */
	bool robust_guard;
	const struct mr_pidlist *aged;
};

/* A run: its configuration, what it selected, and what became of it. */
struct mr_run {
	struct mr_config cfg;
	pid_t self;         /* mrelease's own pid */
	bool pidfs;         /* pidfds have inodes of their own (Linux 6.9) */
	struct mr_target *targets;
	size_t ntargets;
	pid_t *missing; /* named pids with no such process, kept small */
	size_t nmissing;
	pid_t *unreached; /* selected pids no batch reached: the run stopped
			   * first (interrupted, or at a cgroup it refused) */
	size_t nunreached;
	size_t not_dying; /* --dying: processes left alone as not dying, found so
			   * by /proc/PID/stat alone (not targets) */
	struct mr_cgmounts mounts;
	struct mr_cgroup *cgroups;
	size_t ncgroups;
	struct mr_ancestor *ancestors; /* parent first, up to pid 1 */
	size_t nancestors;
	struct mr_note *notes;
	size_t nnotes;
	struct mr_refused refused;
	unsigned int threads;
	bool nice_applied, affinity_applied;
	int64_t mem_available_before_kb, mem_available_after_kb;
	int64_t kill_us;    /* from cfg.start_us to the last kill, or unknown */
	unsigned int bound_ms; /* how long a release may make no progress */
	int64_t elapsed_us; /* from the first signal or release to the end */
	bool sent;          /* a signal or release went out */
	unsigned int batches; /* the most that one phase went through: more than
			       * one when the pidfds do not all fit at once */
	bool interrupted;   /* a signal stopped the run */
	char fatal[4200];   /* with a -errno from mr_run(): the step that failed */
};

/* parse.c */
int mr_parse_long(const char *s, long min, long max, long *out);
int mr_parse_seconds(const char *s, unsigned int max_s, unsigned int *ms);
int mr_parse_pid(const char *s, pid_t *pid);
int mr_parse_pidspec(const char *s, struct mr_pidspec *spec);
int mr_parse_signal(const char *s, int *sig);
const char *mr_signal_name(int sig);
int mr_parse_cpulist(const char *s, cpu_set_t *set);
int mr_cpus_online(cpu_set_t *set);
int mr_pidlist_add(struct mr_pidlist *l, struct mr_pidspec spec);
int mr_pidlist_read(struct mr_pidlist *l, FILE *in, bool from_stdin, char *bad, size_t badlen);
int mr_pidlist_check(struct mr_pidlist *l, struct mr_pidspec *a, struct mr_pidspec *b);
void mr_pidlist_free(struct mr_pidlist *l);

/* file.c */
ssize_t mr_read_file(const char *path, char *buf, size_t len);
ssize_t mr_read_fileat(int dirfd, const char *name, char *buf, size_t len);
ssize_t mr_read_file_all(const char *path, char **buf);
int mr_write_file(const char *dir, const char *name, const char *text, int64_t *done_us);
size_t mr_utf8_len(const unsigned char *p);
void mr_json_string(FILE *out, const char *s);
const char *mr_text_escape(const char *s, char *buf, size_t len);
void mr_unescape_octal(char *s);
bool mr_file_in(const char *dir, const char *name);

/* The fields of /proc/PID/stat a target is checked with. */
struct mr_stat {
	char comm[MR_COMM_LEN];
	char state;
	pid_t ppid;
	unsigned long flags;
	uint64_t start; /* clock ticks after boot */
};

/* measure.c */
int mr_parse_stat(char *buf, struct mr_stat *st);
void mr_parse_mem(const char *buf, enum mr_measure_mode mode, struct mr_mem *mem);
int mr_proc_stat(const char *proc, pid_t pid, struct mr_stat *st);
int mr_proc_thread_stat(const char *proc, pid_t pid, pid_t tid, struct mr_stat *st);
int mr_proc_tgid(const char *proc, pid_t pid, pid_t *tgid);
int mr_proc_dying(const char *proc, pid_t pid, bool *dumping);
int mr_parse_stat_dying(const char *buf);
int mr_proc_may_be_dying(const char *proc, pid_t pid);
int mr_measure(const char *proc, enum mr_measure_mode mode, pid_t pid, int pidfd,
	       struct mr_mem *mem);
int mr_mem_available_kb(int64_t *kb);
void mr_mem_unknown(struct mr_mem *mem);

/* protect.c */
int mr_std_fds(void);
void mr_protect_self(void);
int mr_proc_own(const char *proc, pid_t *seen);
int mr_pidns_nested(const char *proc);
int mr_ancestors(const char *proc, struct mr_ancestor **out, size_t *n);
void mr_fd_raise(void);
size_t mr_fd_room(const char *proc, size_t reserve, size_t *used, size_t *limit);
void mr_fd_grow(size_t n);

/* target.c */
void mr_target_init(struct mr_target *t, pid_t pid, int cgroup);
int mr_target_open(const struct mr_run *run, struct mr_target *t, uint64_t want_ino);
int mr_target_reopen(const struct mr_run *run, struct mr_target *t);
bool mr_target_alive(const struct mr_target *t);
void mr_target_end(struct mr_target *t, enum mr_state state, enum mr_reason reason, int errnum);
bool mr_target_ended(const struct mr_target *t);
void mr_target_signalled(struct mr_target *t, int sig);
bool mr_target_to_kill(const struct mr_target *t);
void mr_target_predicted(struct mr_target *t);
void mr_target_waited(struct mr_target *t, bool gone);
void mr_target_close(struct mr_target *t);
int mr_pidfd_inode(int pidfd, uint64_t *ino);
bool mr_pidfd_in_pidfs(int pidfd);
int mr_pidfd_info(int pidfd, pid_t *ppid, uint64_t *cgroupid);
/* A process whose address space may be shared: its pid, the pid /proc
 * shows its memory under, and what mr_mm_sharers found. */
struct mr_mm_query {
	pid_t pid, mm_pid;
	pid_t sharer; /* another process with that address space, or 0 */
};
int mr_mm_sharers(const char *proc, struct mr_mm_query *q, size_t n,
		  bool (*counts)(pid_t pid, void *arg), void *arg);
const struct mr_ancestor *mr_ancestor_of(const struct mr_run *run, pid_t pid);

/* release.c */
int mr_pidfd_signal(int pidfd, int sig);
int mr_release(int pidfd, unsigned int *retries);
int mr_wait_exit(const int *pidfds, size_t n, int64_t deadline_us, const sigset_t *mask, bool *gone);
int64_t mr_now_us(void);

/* cgpath.c */
int mr_cgmounts_read(struct mr_cgmounts *ms, const char *mountinfo);
int mr_cgmounts_parse(struct mr_cgmounts *ms, FILE *f);
void mr_cgmounts_free(struct mr_cgmounts *ms);
const struct mr_cgmount *mr_cgmounts_v2(const struct mr_cgmounts *ms);
const struct mr_cgmount *mr_cgmounts_v1(const struct mr_cgmounts *ms, const char *controller);
int mr_cgroup_resolve(const struct mr_cgmounts *ms, const char *arg, struct mr_cgroup *cg,
		      char *tried, size_t triedlen, char *other, size_t otherlen);
int mr_cgroup_units(const struct mr_cgmounts *ms, const char *name, char ***paths, size_t *n);
void mr_cgroup_free(struct mr_cgroup *cg);
void mr_cgroup_reset(struct mr_cgroup *cg);
bool mr_has_controller(const char *options, const char *name);

/* cgroup.c */
/* What a visit of mr_cgroup_walk says of the cgroup it visited. */
enum { MR_WALK_ON, MR_WALK_PRUNE };
int mr_cgroup_walk(const char *top, bool recursive,
		   int (*visit)(int dirfd, const char *path, void *arg), void *arg);
int mr_cgroup_members(struct mr_cgroup *cg, bool recursive, struct mr_pidlist *out,
		      size_t *outside);
int mr_cgroup_holds(const char *proc, const struct mr_cgroup *cg, pid_t pid, int pidfd,
		    bool recursive);
int mr_cgroup_kill(const struct mr_cgroup *cg, int64_t *done_us);
bool mr_cgroup_can_kill(const struct mr_cgroup *cg);
int mr_cgroup_kill_permitted(const struct mr_cgroup *cg);

/* cgmem.c */
char *mr_cgroup_memory_file(const char *path, bool v2);
int mr_cgroup_memory_kb(const struct mr_cgroup *cg, int64_t *kb);

/* psi.c */
int mr_parse_pressure(const char *s, struct mr_pressure *p);
const char *mr_pressure_text(const struct mr_pressure *p, char *buf, size_t len);
int mr_psi_trigger(const char *file, const struct mr_pressure *p);
int mr_psi_wait(const int *fds, size_t n, int64_t deadline_us, const sigset_t *mask);

/* robust.c */
int mr_robust_clear(const char *proc, pid_t pid);

/* killwatch.c: every SIGKILL on the host, for --follow. */
struct mr_killwatch;

/* Where tracefs is mounted, from a mountinfo file (a tracefs mount), into
 * out. 0; -ENOENT none; -ENAMETOOLONG it does not fit in len; -errno. */
int mr_tracefs_find(const char *mountinfo, char *out, size_t len);

/* Open the watch on every online CPU (those perf calls absent are skipped),
 * filtered in the kernel to SIGKILL, behind one epoll descriptor. 0, or
 * -errno with nothing left open: -ENOENT no such tracepoint or tracefs,
 * -EACCES or -EPERM not permitted (CAP_PERFMON or CAP_SYS_ADMIN needed),
 * -EPROTO a record layout not understood. */
int mr_killwatch_open(struct mr_killwatch **out, const char *tracefs);

/* The one descriptor to poll (POLLIN) for new events. */
int mr_killwatch_fd(const struct mr_killwatch *w);

/* Drain the events: the pid of each SIGKILL into pids[0..cap), *n of them,
 * and *lost += the samples the kernel dropped because a ring was full (one
 * more for each ring found full, whose loss the kernel reports only with
 * its next sample). 0 all drained; 1 pids filled up first (call again);
 * -EPROTO a record not understood (that ring is skipped to its end and
 * counted lost, so the watch goes on). No allocation: O(events). The pid
 * is the signalled task's in the initial pid namespace: a thread's own id
 * when a thread was signalled. A pid may come twice: a second SIGKILL to a
 * dying process is an event too. */
int mr_killwatch_read(struct mr_killwatch *w, pid_t *pids, size_t cap, size_t *n,
		      uint64_t *lost);

/* Whether the events' pids are ours: a child of our own, killed through a
 * pidfd, is looked for among the events for up to timeout_ms, and always
 * reaped. 0 seen; -EXDEV SIGKILLs came, none with its pid (we are in
 * another pid namespace); -ETIMEDOUT none came, or some were lost; -errno.
 * The other events read meanwhile are kept for the next mr_killwatch_read.
 * Call it while the process has no other threads (it forks). */
int mr_killwatch_selftest(struct mr_killwatch *w, int timeout_ms);

/* /proc/sys/kernel/perf_event_paranoid into *level: 0, or -errno. */
int mr_perf_paranoid(int *level);

void mr_killwatch_close(struct mr_killwatch *w);

/* sched.c */
void mr_sched_apply(const struct mr_sched *s, int *nice_err, int *affinity_err);

/* pool.c: threads that run the jobs they are given. A job is the caller's
 * (it embeds struct mr_job first) until it is submitted, then the pool's
 * until mr_pool_collect() hands it back done; one abandoned is dropped by
 * the pool once done, by whichever thread finishes it. */
struct mr_job {
	void (*run)(struct mr_job *job);  /* on a worker thread */
	void (*drop)(struct mr_job *job); /* frees it, and all it holds */
	struct mr_job *next;              /* the pool's */
	int state;                        /* the pool's */
};
struct mr_pool;
int mr_pool_start(struct mr_pool **p, unsigned int threads, const struct mr_sched *s,
		  unsigned int *started, int *errnum);
void mr_pool_ready(struct mr_pool *p, int *nice_err, int *affinity_err);
void mr_pool_submit(struct mr_pool *p, struct mr_job **jobs, size_t n);
int mr_pool_collect(struct mr_pool *p, unsigned int want, int64_t deadline_us,
		    const sigset_t *mask, struct mr_job **done);
void mr_pool_abandon(struct mr_pool *p, struct mr_job *job);
unsigned int mr_pool_live(struct mr_pool *p);
void mr_pool_stop(struct mr_pool *p);

/* run.c */
void mr_run_init(struct mr_run *run, const struct mr_config *cfg);
void mr_note_add(struct mr_run *run, struct mr_note note);
int mr_run(struct mr_run *run, const struct mr_pidlist *named);
void mr_run_reset(struct mr_run *run);
void mr_run_free(struct mr_run *run);

#endif
