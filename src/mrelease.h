/* mrelease.h: the core library's interface.
 *
 * Map of src/:
 *   parse.c    strict parsers: numbers, seconds, pids, CPU lists, stdin pids
 *   file.c     small whole-file reads and writes, JSON strings
 *   sys.h      syscall shims: pidfd_open, pidfd_send_signal, process_mrelease
 *   measure.c  /proc reads: identity and memory figures (direct), MemAvailable
 *              (libproc2)
 *   protect.c  what a run guards: its own memory and OOM score, descriptors,
 *              the chain of its ancestors
 *   target.c   opening a target by pidfd and checking what it is
 *   pool.c     the worker threads: figures and releases in parallel, with a
 *              watchdog for reads and releases that never return
 *   release.c  signals through pidfds, process_mrelease with retries, waits
 *   cgroup.c   cgroup mounts, resolution, members, cgroup.kill, memory
 *   run.c      a whole run: selection and the kill policy, top to bottom
 *   sched.c    nice and CPU affinity of the releasing threads
 *
 * Nothing here prints or exits: functions return 0 or -errno, and what went
 * wrong with one target is recorded in that target (and what the run
 * noticed, in its notes) for cmd/ to report.
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
#define MR_WINDOWS 20      /* kill windows: the first kill, and the rescans */

enum mr_measure_mode { MR_MEASURE_SMAPS, MR_MEASURE_STATUS, MR_MEASURE_NONE };

enum mr_status {
	MR_PENDING,     /* selected, nothing decided yet */
	MR_RELEASED,    /* its address space was stripped by process_mrelease */
	MR_EXITED,      /* it was gone, or went by itself, before we released it */
	MR_FAILED,
	MR_SKIPPED,     /* dry run */
	MR_INTERRUPTED, /* the run was interrupted before it was done with it */
};

/* Why a target failed; cmd/ turns these into words. */
enum mr_error {
	MR_E_NONE,
	MR_E_ERRNO,       /* see mr_target.errnum */
	MR_E_OPEN,        /* pidfd_open failed: errnum */
	MR_E_KILL,        /* SIGKILL could not be sent: errnum */
	MR_E_TERM,        /* SIGTERM could not be sent: errnum */
	MR_E_NO_PROCESS,  /* no such process when we looked */
	MR_E_INIT,        /* pid 1 of our pid namespace */
	MR_E_SELF,        /* mrelease itself */
	MR_E_ANCESTOR,    /* a process mrelease runs under; see mr_target.comm */
	MR_E_KTHREAD,
	MR_E_THREAD,      /* a thread id, not a process; see mr_target.tgid */
	MR_E_NOT_EXITING, /* not dying and --kill not given */
	MR_E_SHARED_MM,   /* killed, but its address space is shared with a live process */
	MR_E_NOSYS,       /* no process_mrelease and the fallback wait timed out */
	MR_E_INODE,       /* not the pidfs inode that was asked for */
	MR_E_NO_PIDFS,    /* an inode was given, but pidfds have none here */
	MR_E_NO_PIDFD,    /* pidfd_open is missing */
	MR_E_STUCK,       /* its open or release did not return in time; errnum: the job */
	MR_E_MEMBERSHIP,  /* whether it is still in its cgroup cannot be read: errnum */
};

/* proc_errnum of figures given up because reading them made no progress. */
#define MR_GAVE_UP (-1)

struct mr_mem {
	int64_t rss_kb, pss_kb, anon_kb, swap_kb;
};

struct mr_target {
	pid_t pid;
	uint64_t want_ino; /* the pidfs inode it must have, or 0 */
	uint64_t ino;      /* its pidfd's pidfs inode, 0 before Linux 6.9 */
	int pidfd;
	pid_t tgid;
	pid_t mm_pid; /* where /proc shows its memory: pid, or a live thread */
	char comm[MR_COMM_LEN];
	int cgroup; /* index into the run's cgroups, or -1 */
	struct mr_mem before, after;
	/* The figures are optional, the kill is not: a /proc file that could
	 * not be read leaves the figures null and is only a warning. */
	const char *proc_file; /* the file, or NULL when all went well */
	int proc_errnum;
	int64_t release_us;
	enum mr_status status;
	enum mr_error error;
	int errnum;
	bool termed;   /* SIGTERM sent (--grace) */
	bool killed;   /* SIGKILL sent, through its pidfd or cgroup.kill */
	bool waiting;  /* no process_mrelease: its exit is to be waited for */
	bool dropped;  /* a cgroup member whose pid went to another process */
	bool named;    /* named by pid, not only found in a cgroup */
	bool stuck;    /* its open or release never returned: left behind */
	bool rescanned; /* found by the second listing, after the kill began */
	pid_t ppid;    /* its parent, from /proc/PID/stat, or 0 */
	signed char exited; /* after --wait: 1 gone, 0 still running; -1 not asked */
};

/* How a cgroup's members were killed. */
enum mr_cgkill { MR_CGKILL_NONE, MR_CGKILL_FILE, MR_CGKILL_PIDFD };

/* A cgroup named by --cgroup, with what was found and done in it. */
struct mr_cgroup {
	char *path;        /* absolute, as resolved */
	char *rel;         /* as /proc/PID/cgroup names it */
	char *controllers; /* v1: the hierarchy's super options */
	bool v2;
	bool root;         /* the top of a cgroup mount: every process below it */
	char *memory_file; /* memory.current, or v1 memory.usage_in_bytes; or NULL */
	bool holds_protected; /* holds mrelease, pid 1 or a protected ancestor */
	enum mr_cgkill kill;
	bool kill_sent;    /* cgroup.kill was written */
	size_t outside;    /* members outside our pid namespace (listed as 0) */
	size_t members, released, failed;
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
	uint64_t ino;
};

struct mr_pidlist {
	struct mr_pidspec *v;
	size_t len, cap;
};

/* What a run noticed, for cmd/ to tell with --verbose (or always, where
 * the kind says so in cmd/). */
enum mr_note_kind {
	MR_N_THREADS,        /* n: threads the pool runs on */
	MR_N_THREADS_SHORT,  /* errnum: fewer threads than asked (n started) */
	MR_N_LEFT_OUT,       /* pid, cgroup, why (an mr_error), comm */
	MR_N_CGKILL,         /* cgroup: killed with cgroup.kill */
	MR_N_CGKILL_PIDFD,   /* cgroup, why: killed through pidfds instead */
	MR_N_CGKILL_FAILED,  /* cgroup, errnum: cgroup.kill failed; pidfds instead */
	MR_N_LATE_FORK,      /* pid, cgroup: forked before the kill, or by a killed
			      * member (why 1); killed too */
	MR_N_LATE_ARRIVAL,   /* pid, cgroup: came after the kill began; left alone */
	MR_N_MOVED_IN,       /* pid, cgroup: moved in after the listing; left alone */
	MR_N_NO_RESCAN,      /* cgroup: no watermarks (no pidfs, or no thread for
			      * them): only children of killed members are found */
	MR_N_REUSED,         /* pid, cgroup: its pid went to a newer process since
			      * the listing; left alone */
	MR_N_OUTSIDE,        /* cgroup, n: members outside our pid namespace,
			      * killed by cgroup.kill, never seen */
	MR_N_RESCAN_FAILED,  /* cgroup, errnum */
	MR_N_BATCHES,        /* n: batches, for want of descriptors */
	MR_N_FIGURES_STALLED,/* n: targets whose figures were given up */
	MR_N_STALLED,        /* n: threads stuck; one more was started */
	MR_N_RETRIES,        /* n: process_mrelease retries */
	MR_N_NOSYS,          /* no process_mrelease: waited for the exits */
	MR_N_GRACE_CUT,      /* the grace was cut short by a signal */
	MR_N_INTERRUPTED,    /* n: targets left unfinished; why: 1 while waiting */
	MR_N_STUCK,          /* n: targets whose open or release never returned;
			      * why: the job */
};

enum mr_cgkill_why { MR_WHY_PROTECTED, MR_WHY_V1, MR_WHY_NO_RECURSIVE, MR_WHY_GRACE };

struct mr_note {
	enum mr_note_kind kind;
	pid_t pid;
	int cgroup;
	int errnum;
	int why; /* MR_N_LEFT_OUT: an mr_error; MR_N_CGKILL_PIDFD: an mr_cgkill_why */
	size_t n;
	char comm[MR_COMM_LEN];
};

/* The processes a run never touches without --force (and some not even
 * then): itself, and the chain of processes it runs under. */
struct mr_ancestor {
	pid_t pid;
	char comm[MR_COMM_LEN];
};

/* What the caller asks of a run. */
struct mr_config {
	bool kill, dry_run, recursive, force, wait, grace;
	enum mr_measure_mode measure;
	unsigned int grace_ms, wait_ms;
	unsigned int jobs; /* 0: one per CPU of the affinity set */
	struct mr_sched sched;
	/* The signal mask while the run waits: the caller blocks the signals
	 * that should end a wait, and lets them in here; a signal caught then
	 * interrupts the run. */
	sigset_t waitmask;
	const char *proc; /* "/proc": a seam for tests */
	int64_t start_us; /* when mrelease started, for kill_us */
};

/* A run: its configuration, what it selected, and what became of it. */
struct mr_run {
	struct mr_config cfg;
	struct mr_target *targets;
	size_t ntargets;
	struct mr_cgmounts mounts;
	struct mr_cgroup *cgroups;
	size_t ncgroups;
	struct mr_ancestor *ancestors; /* parent first, up to (not with) pid 1 */
	size_t nancestors;
	struct mr_note *notes;
	size_t nnotes;
	unsigned int threads;
	int64_t mem_available_before_kb, mem_available_after_kb;
	int64_t kill_us;    /* from cfg.start_us to the last SIGKILL, or unknown */
	unsigned int bound_ms; /* how long a stuck open or release is given */
	int64_t elapsed_us; /* from the first signal to the end, or unknown */
	bool sent;          /* a signal or release went out: a fatal error reports */
	bool interrupted;   /* a signal caught while waiting ended the run */
	bool interrupted_waiting; /* ... during --wait, after the releases */
	/* pidfs watermarks (0: none): before and after the first listing,
	 * and the kill windows: from a listing to the end of the kill loop
	 * that follows it (without --grace the first one opens at the first
	 * listing). They tell a pid reused since the listing, and a late fork
	 * from a late arrival. */
	uint64_t listed_ino, listed_end_ino;
	uint64_t win_lo[MR_WINDOWS], win_hi[MR_WINDOWS];
	size_t nwin;
	bool win_open;
	char fatal[4200];   /* with a -errno from mr_run(): the step that failed */
};

/* parse.c */
int mr_parse_long(const char *s, long min, long max, long *out);
int mr_parse_seconds(const char *s, unsigned int max_s, unsigned int *ms);
int mr_parse_pid(const char *s, pid_t *pid);
int mr_parse_pidspec(const char *s, struct mr_pidspec *spec);
int mr_parse_cpulist(const char *s, cpu_set_t *set);
int mr_cpus_online(cpu_set_t *set);
int mr_pidlist_add(struct mr_pidlist *l, struct mr_pidspec spec);
int mr_pidlist_read(struct mr_pidlist *l, FILE *in, char *bad, size_t badlen);
void mr_pidlist_free(struct mr_pidlist *l);

/* file.c */
ssize_t mr_read_file(const char *path, char *buf, size_t len);
ssize_t mr_read_fileat(int dirfd, const char *name, char *buf, size_t len);
int mr_write_file(const char *dir, const char *name, const char *text);
size_t mr_utf8_len(const unsigned char *p);
void mr_json_string(FILE *out, const char *s);

/* measure.c */
int mr_parse_stat(char *buf, char comm[MR_COMM_LEN], char *state, pid_t *ppid,
		  unsigned long *flags);
void mr_parse_mem(const char *buf, enum mr_measure_mode mode, struct mr_mem *mem);
int mr_proc_stat(const char *proc, pid_t pid, char comm[MR_COMM_LEN], char *state,
		 pid_t *ppid, unsigned long *flags);
int mr_proc_tgid(const char *proc, pid_t pid, pid_t *tgid);
int mr_measure(const char *proc, enum mr_measure_mode mode, const struct mr_target *t,
	       struct mr_mem *mem);
int mr_mem_available_kb(int64_t *kb);
void mr_mem_unknown(struct mr_mem *mem);

/* protect.c */
void mr_protect_self(void);
int mr_ancestors(const char *proc, struct mr_ancestor **out, size_t *n);
size_t mr_fd_budget(const char *proc, size_t want, size_t reserve);

/* target.c */
void mr_target_init(struct mr_target *t, struct mr_pidspec spec, int cgroup);
int mr_target_open(const struct mr_run *run, struct mr_target *t);
bool mr_target_alive(const struct mr_target *t);
void mr_target_fail(struct mr_target *t, enum mr_error error, int errnum);
void mr_target_close(struct mr_target *t);
int mr_pidfd_inode(int pidfd, uint64_t *ino);

/* release.c */
int mr_target_signal(struct mr_target *t, int sig);
void mr_target_release(struct mr_target *t, bool once, unsigned int *retries, bool *nosys);
int mr_wait_exit(struct mr_target **waiting, size_t n, int64_t deadline_us,
		 const sigset_t *mask, size_t *left);
int mr_pid_watermark(uint64_t *ino);
int64_t mr_now_us(void);

/* cgroup.c */
int mr_cgmounts_read(struct mr_cgmounts *ms, const char *mountinfo);
int mr_cgmounts_parse(struct mr_cgmounts *ms, FILE *f);
void mr_cgmounts_free(struct mr_cgmounts *ms);
const struct mr_cgmount *mr_cgmounts_v2(const struct mr_cgmounts *ms);
const struct mr_cgmount *mr_cgmounts_v1(const struct mr_cgmounts *ms, const char *controller);
int mr_cgroup_resolve(const struct mr_cgmounts *ms, const char *arg, struct mr_cgroup *cg,
		      char *tried, size_t triedlen);
void mr_cgroup_free(struct mr_cgroup *cg);
int mr_cgroup_members(const struct mr_cgroup *cg, bool recursive, struct mr_pidlist *out,
		      size_t *outside);
int mr_cgroup_holds(const char *proc, const struct mr_cgroup *cg, pid_t pid, bool recursive);
int mr_cgroup_kill(const struct mr_cgroup *cg);
int mr_cgroup_memory_kb(const struct mr_cgroup *cg, int64_t *kb);

/* sched.c */
int mr_sched_apply(const struct mr_sched *s);

/* pool.c */
enum mr_job {
	MR_JOB_OPEN,        /* open, check and read the figures */
	MR_JOB_TRY_RELEASE, /* release if dying already; leave pending if not */
	MR_JOB_RELEASE,
};
struct mr_pool;
int mr_pool_start(struct mr_pool **p, struct mr_run *run, unsigned int jobs);
int mr_pool_ready(struct mr_pool *p);
int mr_pool_run(struct mr_pool *p, enum mr_job job, struct mr_target **items, size_t n,
		unsigned int bound_ms);
void mr_pool_stats(struct mr_pool *p, unsigned int *retries, bool *nosys);
void mr_pool_stop(struct mr_pool *p);

/* run.c */
void mr_run_init(struct mr_run *run, const struct mr_config *cfg);
void mr_note_add(struct mr_run *run, struct mr_note note);
void mr_run_open(const struct mr_run *run, struct mr_target *t);
void mr_run_figures(const struct mr_run *run, enum mr_job job, struct mr_target *t,
		    enum mr_measure_mode mode);
int mr_run(struct mr_run *run, const struct mr_pidlist *named);
void mr_run_free(struct mr_run *run);

#endif
