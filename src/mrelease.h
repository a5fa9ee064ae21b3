/* mrelease.h: the core library's interface.
 *
 * Map of src/:
 *   parse.c    strict parsers: numbers, pids, CPU lists, the stdin pid list
 *   sys.h      syscall shims: pidfd_open, pidfd_send_signal, process_mrelease
 *   measure.c  everything read through libproc2: identity, memory, MemAvailable
 *   target.c   opening a target by pidfd and checking what it is
 *   release.c  SIGKILL, process_mrelease with retries, waiting, worker threads
 *   sched.c    nice and CPU affinity of the releasing threads
 *   cgroup.c   cgroup mounts, members, freeze, cgroup.kill, memory counters
 *
 * Nothing here prints or exits: functions return 0 or -errno, and what went
 * wrong with one target is recorded in that target for cmd/ to report.
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

enum mr_measure_mode { MR_MEASURE_SMAPS, MR_MEASURE_STATUS, MR_MEASURE_NONE };

enum mr_status {
	MR_PENDING,  /* selected, nothing decided yet */
	MR_RELEASED, /* its address space was stripped by process_mrelease */
	MR_EXITED,   /* it was gone, or went, before we could release it */
	MR_FAILED,
	MR_SKIPPED,  /* dry run */
};

/* Why a target failed; cmd/ turns these into words. */
enum mr_error {
	MR_E_NONE,
	MR_E_ERRNO,       /* see mr_target.errnum */
	MR_E_NO_PROCESS,  /* no such process when we looked */
	MR_E_INIT,        /* pid 1 of our pid namespace */
	MR_E_SELF,        /* mrelease itself */
	MR_E_KTHREAD,
	MR_E_THREAD,      /* a thread id, not a process; see mr_target.tgid */
	MR_E_NOT_EXITING, /* not dying and --kill not given */
	MR_E_SHARED_MM,   /* killed, but its address space is shared with a live process */
	MR_E_UNREADABLE,  /* the measurement file could not be read */
	MR_E_TIMEOUT,     /* still there after the wait */
	MR_E_NOSYS,       /* no process_mrelease and the fallback wait timed out */
	MR_E_INODE,       /* not the pidfs inode that was asked for */
	MR_E_NO_PIDFS,    /* an inode was given, but pidfds have none here */
	MR_E_NO_PIDFD,    /* pidfd_open is missing */
	MR_E_PROC,        /* alive, but not to be read in /proc */
};

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
	unsigned long long start_time; /* clock ticks after boot */
	int cgroup;                    /* index into the cgroup list, or -1 */
	struct mr_mem before, after;
	int64_t release_us;
	enum mr_status status;
	enum mr_error error;
	int errnum;
	bool killed;
	bool waiting; /* no process_mrelease: its exit is to be waited for */
};

/* A cgroup named by --cgroup, with what was found and done in it. */
struct mr_cgroup {
	char *path;        /* absolute, as resolved */
	char *rel;         /* as /proc/PID/cgroup names it */
	char *controllers; /* v1: the hierarchy's super options */
	bool v2;
	char *memory_file; /* memory.current, or v1 memory.usage_in_bytes; or NULL */
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

struct mr_release_opts {
	bool kill;
	unsigned int jobs;
	struct mr_sched sched;
	/* With kill: called once the threads are ready, before the first
	 * SIGKILL, to kill by other means first (cgroup.kill). */
	void (*kill_first)(void *arg);
	void *kill_first_arg;
};

/* What a release run noticed beyond each target's own result. */
struct mr_release_stats {
	bool nosys;             /* process_mrelease missing: waited instead */
	unsigned int retries;   /* EAGAIN/EINTR retries over all targets */
	int sched_error;        /* -errno from applying nice/affinity, or 0 */
};

/* parse.c */
int mr_parse_long(const char *s, long min, long max, long *out);
int mr_parse_pid(const char *s, pid_t *pid);
int mr_parse_cpulist(const char *s, cpu_set_t *set);
int mr_cpus_online(cpu_set_t *set);

/* A pid as named, with the pidfs inode the caller expects it to have
 * ("PID:INODE"), or 0 for any. */
struct mr_pidspec {
	pid_t pid;
	uint64_t ino;
};
int mr_parse_pidspec(const char *s, struct mr_pidspec *spec);

struct mr_pidlist {
	struct mr_pidspec *v;
	size_t len, cap;
};
int mr_pidlist_add(struct mr_pidlist *l, struct mr_pidspec spec);
int mr_pidlist_read(struct mr_pidlist *l, FILE *in, char *bad, size_t badlen);
void mr_pidlist_free(struct mr_pidlist *l);

/* measure.c */
struct mr_procinfo;
int mr_procinfo_new(struct mr_procinfo **pi, enum mr_measure_mode mode);
void mr_procinfo_free(struct mr_procinfo *pi);
int mr_proc_identity(struct mr_procinfo *pi, struct mr_target *t, unsigned long *flags, char *state);
int mr_measure(struct mr_procinfo *pi, const struct mr_target *t, struct mr_mem *mem);
int mr_mem_available_kb(int64_t *kb);
void mr_mem_unknown(struct mr_mem *mem);

/* target.c */
void mr_target_init(struct mr_target *t, struct mr_pidspec spec, int cgroup);
int mr_target_open(struct mr_procinfo *pi, struct mr_target *t);
bool mr_target_alive(const struct mr_target *t);
void mr_target_fail(struct mr_target *t, enum mr_error error, int errnum);
void mr_target_close(struct mr_target *t);

/* release.c */
int mr_target_kill(struct mr_target *t);
int mr_release_all(struct mr_target *targets, size_t n, const struct mr_release_opts *o,
		   struct mr_release_stats *stats);
int mr_wait_exit(struct mr_target *targets, size_t n, unsigned int timeout_ms,
		 const sigset_t *sigmask, bool released);
int64_t mr_now_us(void);

/* cgroup.c */
int mr_cgmounts_read(struct mr_cgmounts *ms, const char *mountinfo);
int mr_cgmounts_parse(struct mr_cgmounts *ms, FILE *f);
void mr_cgmounts_free(struct mr_cgmounts *ms);
const struct mr_cgmount *mr_cgmounts_v2(const struct mr_cgmounts *ms);
int mr_cgroup_resolve(const struct mr_cgmounts *ms, const char *arg, struct mr_cgroup *cg);
void mr_cgroup_free(struct mr_cgroup *cg);
int mr_cgroup_members(const struct mr_cgroup *cg, bool recursive, struct mr_pidlist *out);
int mr_cgroup_holds(const struct mr_cgroup *cg, pid_t pid, bool recursive);
int mr_cgroup_frozen(const struct mr_cgroup *cg, bool *frozen);
int mr_cgroup_freeze(const struct mr_cgroup *cg, bool frozen);
int mr_cgroup_wait_frozen(const struct mr_cgroup *cg, unsigned int timeout_ms);
int mr_cgroup_kill(const struct mr_cgroup *cg);
int mr_cgroup_memory_kb(const struct mr_cgroup *cg, int64_t *kb);

/* sched.c */
int mr_sched_apply(const struct mr_sched *s);

#endif
