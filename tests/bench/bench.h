/* bench.h: mr-bench's private interface.
 *
 * Map of tests/bench/ (README.md says what is measured and how):
 *   floor.c     mr-floor: pidfd_open, SIGKILL, process_mrelease, nothing else
 *   main.c      options, the list of scenarios, and main()
 *   kids.c      children: victims, the busy loop, the munmap child, the
 *               template that clones stuck victims; the signals and the
 *               clean-up that runs on every exit
 *   cgroups.c   the cgroups mr-bench makes (v2, v1 freezer, v1 memory) and
 *               the memory meter that says when the memory is back
 *   tools.c     running mrelease, mr-floor, pkill, strace and /bin/true,
 *               and mrelease --follow as a service; reading mrelease's
 *               --json (and --follow's NDJSON) with jansson; finding a
 *               pkill -m
 *   methods.c   the timed ways of ending victims: SIGKILL, cgroup.kill,
 *               the floor, mrelease, pkill -m, and munmap
 *   single.c    scenarios of one victim: idle, starved, stuck, grace, sweep
 *   follow.c    scenarios of mrelease --follow as a service: follow (a stuck
 *               victim SIGKILLed by mr-bench), oom (a stuck victim the
 *               kernel's OOM killer kills); the tracefs mount it needs
 *   many.c      scenarios of many: cgroup, many, tiny, batches
 *   killus.c    scenario killus: mrelease's kill_us at 64 MiB and 4 GiB
 *   startup.c   scenarios of mrelease's own cost: startup, protect, overhead
 *   stats.c     rows of samples, medians, ratios, the line fit, the targets
 *   report.c    the table on stdout and the JSON file
 *
 * Times are microseconds throughout (mr_now_us, CLOCK_MONOTONIC), and
 * TIMED_OUT marks a sample that hit --timeout.
 */
#ifndef MR_BENCH_H
#define MR_BENCH_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define US_PER_MS 1000LL
#define US_PER_S 1000000LL
#define MIB (1UL << 20)
#define TIMED_OUT INT64_MAX
#define MAX_RUNS 100
#define MAX_ROWS 16
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Exit statuses of mr-bench itself; missed targets are results, not errors. */
enum { EXIT_DONE = 0, EXIT_USAGE = 2, EXIT_FATAL = 3, EXIT_INTERRUPTED = 130 };

/* In the order they run and print. */
enum scenario_id {
	SC_IDLE, SC_STARVED, SC_STUCK, SC_GRACE, SC_FOLLOW, SC_OOM, SC_CGROUP, SC_MANY,
	SC_TINY, SC_BATCHES, SC_SWEEP, SC_KILLUS, SC_STARTUP, SC_PROTECT, SC_OVERHEAD, NSCENARIOS
};

/* mr-floor's exit statuses (floor.c): it prints nothing. */
enum {
	FLOOR_DONE = 0,     /* every pid released, or gone before it could be */
	FLOOR_OPEN = 1,     /* a pidfd_open failed */
	FLOOR_USAGE = 2,    /* no pids, or one that is not a pid */
	FLOOR_SIGNAL = 3,   /* a pidfd_send_signal failed */
	FLOOR_MRELEASE = 4, /* a process_mrelease failed */
};

struct bench_opts {
	const char *mrelease;
	const char *floor;       /* --floor PATH, or NULL: mr-floor beside mr-bench */
	const char *json;
	const char *pkill;       /* --pkill PATH, or NULL: look in PATH */
	long size_mib;           /* S */
	long runs, kill_runs, overhead_runs;
	unsigned int timeout_ms, grace_ms;
	bool quick, size_set, runs_set, kill_runs_set, overhead_set, timeout_set, grace_set;
	unsigned int only;       /* bit per scenario_id; 0 = all */
};

/* mrelease's own account of one run, from its --json summary; -1 where it
 * said null. */
struct self_report {
	int64_t kill_us, elapsed_us, release_us; /* release_us: the slowest target */
	int64_t exited; /* targets it found exiting by themselves: nothing to release */
	int64_t batches; /* the most batches one phase went through (issue 26) */
};

/* One method in one scenario: what was run and what it took. */
struct series {
	char id[32];           /* JSON id, and the key targets look rows up by */
	char label[48];
	char command[256];
	long x;                /* victims (tiny) or MiB (sweep); 0 elsewhere */
	bool available, has_self;
	char why[240];
	int planned, failed, n;
	int64_t us[MAX_RUNS];  /* or TIMED_OUT */
	struct self_report self[MAX_RUNS];
	char error[240];       /* the first failure */
	char note[240];        /* the first sample that timed out after mrelease was done */
};

struct scenario {
	const char *name;
	bool ran, available;
	char why[240];
	char setup[3 * PATH_MAX + 400];
	struct series rows[MAX_ROWS];
	int nrows;
};

struct pkill_info {
	bool found;
	char path[PATH_MAX];
	char version[128];
	char why[400];         /* why there is none, or which were passed over */
};

struct bench {
	struct bench_opts opt;
	size_t bytes;          /* S in bytes */
	int64_t timeout_us;
	char version[128];
	char floor[PATH_MAX];  /* mr-floor */
	char v1_freezer[PATH_MAX], v1_memory[PATH_MAX], v2_root[PATH_MAX];
	char load_start[64], load_end[64];
	int64_t started;
	struct pkill_info pkill;
	struct scenario sc[NSCENARIOS];
};

/* ---- kids.c ---- */

struct kid {
	pid_t pid;
	int pidfd;
	/* Reaped first by the clean-up: a busy loop, so that a starved victim
	 * can die, or a holder, so that the victim it stalls can. */
	bool first;
	/* The signal that ends it: SIGKILL, or SIGTERM for a service, which
	 * is stopped as a service is (and killed if it lingers). */
	int stop_signal;
	/* A template: the pipes it takes requests on and answers on, and
	 * whether a copy was asked for and not yet read; -1, -1, false else.
	 * An OOM victim: ask is the pipe that tells it to go over its limit. */
	int ask, answer;
	bool pending;
};

enum kid_kind { KID_VICTIM, KID_HOG, KID_MUNMAP, KID_TEMPLATE, KID_HOLDER, KID_OOM };

/* The comm of every victim: what pkill -x matches, beside -P mr-bench. */
#define VICTIM_COMM "mrb-victim"

struct spawn_spec {
	enum kid_kind kind;
	size_t bytes;          /* private anonymous memory to touch, in all */
	int chunks;            /* split over this many mappings */
	int cpu;               /* pin here once touched; -1 leaves it free */
	bool sched_idle;       /* switch to SCHED_IDLE once touched */
	bool ignore_term;      /* SIGTERM ignored: for --grace */
	int njoin;             /* join these cgroups first (a template: its copies do) */
	const char *join[3];
	/* oom: the write end of the pipe whose lock a holder keeps (KID_HOLDER)
	 * and a thread of the victim then waits for (KID_OOM); and the bytes
	 * the victim touches beyond its own when told to go. */
	int stall_fd;
	size_t over;
};

void kids_init(void);
void check_interrupt(void);
bool poll_until(int fd, short events, int64_t deadline, bool interruptible);
void sleep_us(int64_t us);
int64_t setup_budget(size_t bytes);
void spec_join(struct spawn_spec *s, const char *cgroup);
struct kid *kid_track(pid_t pid, bool first);
void kid_untrack(struct kid *k);
int kid_reap(struct kid *k);
void start_victims(const struct spawn_spec *s, int n, struct kid **out);
struct kid *start_victim(const struct spawn_spec *s);
struct kid *start_hog(int cpu);
struct kid *start_template(const struct spawn_spec *s);
struct kid *template_copy(struct kid *t);
struct kid *start_oom_victim(const struct spawn_spec *s);
void oom_go(struct kid *k);
int munmap_run(const struct spawn_spec *s, int64_t extra_us, int64_t *us);
void cleanup(void);

/* ---- cgroups.c ---- */

enum cg_kind { CG_V2, CG_FREEZER, CG_MEMORY };

struct cgdir {
	char path[PATH_MAX];
	int dirfd;
	bool used;
	enum cg_kind kind;
};

struct cgdir *cg_create(const char *mount, enum cg_kind kind);
void cg_thaw(struct cgdir *cg);
int cg_freeze(struct cgdir *cg, int64_t deadline);
void cg_remove(struct cgdir *cg);
void cg_thaw_all(void);
void cg_remove_all(void);

/* When is the memory back?  See cgroups.c. */
struct meter {
	struct cgdir *cg;
};

bool cg_available(const struct bench *b, struct scenario *sc, bool freezer, bool v2);
void meter_open(const struct bench *b, struct meter *m);
void meter_close(struct meter *m);
int64_t wait_memory_back(const struct meter *m, size_t bytes, int64_t deadline);
void meter_limit(const struct meter *m, size_t bytes);
int64_t meter_oom_kills(const struct meter *m);
int64_t wait_oom_kill(const struct meter *m, int64_t before, int64_t deadline);

/* ---- tools.c ---- */

struct tool_result {
	int status;            /* exit status; 128 + signal; -1 timed out */
	int64_t start_us, end_us;
	char err[240];         /* first line of its stderr */
	char *out;             /* its stdout, when captured */
};

/* What a command gets besides its arguments; a NULL cmd_env means
 * standard input from /dev/null and mr-bench's own limits. */
struct cmd_env {
	int in;                /* standard input: this file, from its offset; -1: /dev/null */
	long nofile;           /* RLIMIT_NOFILE, soft and hard, that it may not raise
				  (CAP_SYS_RESOURCE dropped from its bounding set); 0: mr-bench's */
};

/* A command left running, as a service runs: mrelease --follow. */
struct service {
	struct kid *k;         /* NULL once stopped */
	int out, errfd;        /* memfds: its stdout and stderr */
	int64_t start_us;
};

/* What mrelease --json said of a run. */
struct mr_report {
	struct self_report self;
	long targets, released, exited, failed;
	char error[160];       /* the first failed target's error */
};

/* One "release" line of mrelease --follow --json. */
struct follow_release {
	pid_t pid;
	bool released;         /* status "released" */
	int64_t release_us;    /* -1 for null */
	char error[80];        /* its status, and its error if it has one */
	char trigger[16];      /* what woke the sweep that wrote it, from the "sweep"
				  line that follows it; "" if none does */
};

#define MAX_FOLLOW_RELEASES (2 * MAX_RUNS)

/* The triggers of a sweep, as mrelease --follow --json names them. */
enum follow_trigger { FT_START, FT_SIGNALS, FT_SETTLE, FT_LOST, FT_PRESSURE, FT_TIMER, FT_COUNT };
extern const char *const follow_triggers[FT_COUNT];

/* What mrelease --follow --json said over its life, from its NDJSON. */
struct follow_report {
	bool start;            /* the "start" line, its first */
	bool sources[3];       /* its "sources": signals, pressure, timer */
	char declined_signals[160]; /* why not on signals, from "declined" */
	bool summary;          /* the "summary" line, written when a signal ends it */
	int64_t sweeps, on[FT_COUNT]; /* the summary's counts; -1 where absent */
	int64_t signal_events, signal_events_lost, records_dropped;
	int nlines;            /* "release" lines, all of them */
	int n;                 /* those kept in rel[] */
	struct follow_release rel[MAX_FOLLOW_RELEASES];
};

enum follow_source { FS_SIGNALS, FS_PRESSURE, FS_TIMER };

void run_cmd(const char *const *argv, const struct cmd_env *env, bool capture,
	     int64_t timeout_us, struct tool_result *r);
void run_mrelease(const struct bench *b, const char *const *args, const struct cmd_env *env,
		  bool capture, int64_t timeout_us, struct tool_result *r);
void service_start(const char *const *argv, struct service *sv);
bool service_ready(const struct service *sv, int64_t deadline);
char *service_output(const struct service *sv);
void service_stop(struct service *sv, int64_t timeout_us, struct tool_result *r);
int parse_report(const char *text, struct mr_report *rep, char *why, size_t len);
int parse_follow(const char *text, struct follow_report *rep, char *why, size_t len);
void find_pkill(struct bench *b);

/* ---- methods.c ---- */

struct victims {
	struct kid **v;
	int n;
	size_t bytes;          /* all of theirs, for the meter's 1 % */
	const struct meter *meter; /* NULL: a sample ends when the tool exits */
};

void time_sigkill(const struct bench *b, const struct scenario *sc, int run,
		  struct series *s, const struct victims *vs);
void time_cgroup_kill(const struct bench *b, const struct scenario *sc, int run,
		      struct series *s, const struct cgdir *cg, const struct victims *vs);
void time_floor(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		const struct victims *vs);
void time_mrelease(const struct bench *b, const struct scenario *sc, int run,
		   struct series *s, const char *const *args, const struct cmd_env *env,
		   const struct victims *vs);
void time_pkill(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		const struct victims *vs);
void time_munmap(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		 size_t bytes, int chunks, int cpu);
void time_process(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		  const char *const *argv);
int64_t sigkill_memory_back(const struct bench *b, const struct victims *vs);
const char **pid_args(const char *const *head, const struct victims *vs);
int pid_list(const struct victims *vs);

/* ---- the scenarios: single.c, many.c, killus.c, startup.c ---- */

typedef void scenario_fn(struct bench *b, struct scenario *sc);
scenario_fn scenario_idle, scenario_starved, scenario_stuck, scenario_grace, scenario_follow;
scenario_fn scenario_oom, scenario_sweep, scenario_cgroup, scenario_many, scenario_tiny;
scenario_fn scenario_batches;
scenario_fn scenario_killus;
scenario_fn scenario_startup, scenario_protect, scenario_overhead;

/* The victim counts of tiny, the sizes of sweep and the two of killus,
 * for this run (full or --quick); the lists end with a 0. */
const long *tiny_counts(const struct bench *b);
const long *sweep_sizes(const struct bench *b);
long killus_large_mib(const struct bench *b);
#define KILLUS_SMALL_MIB 64L

/* batches: its victims, for this run, and the limit on open files of its
 * limited row; follow: the sweep interval of its timer row. */
long batches_victims(const struct bench *b);
#define BATCHES_NOFILE 64L
#define FOLLOW_INTERVAL_MS 50

/* follow, oom: tracefs, for mrelease --follow's signals (follow.c). */
const char *tracefs_need(void);
void tracefs_done(void);

/* ---- stats.c ---- */

struct stats {
	int n;
	int64_t min, med, max;
};

struct ratio {
	bool valid, lower_bound; /* lower_bound: the numerator timed out */
	double v;
};

/* T = fixed + per_target * N, least squares over the medians. */
struct fit {
	bool valid;
	int points;
	double fixed_us, per_target_us;
};

enum verdict { V_NA, V_MET, V_MISSED };

struct target {
	const char *what, *against, *goal;
	const char *unit;      /* "x" for a ratio, "ms" for a time */
	double value;
	char detail[96];       /* the figures behind the value, or why there is none */
	bool valid, lower_bound;
	enum verdict verdict;
};

#define MAX_TARGETS 12

/* The middle half of mrelease's kill_us over a row's runs. */
struct spread {
	bool valid;
	int64_t q1, med, q3;
};

struct series *series_add(struct scenario *sc, const char *id, const char *label, int planned,
			  const char *cmdfmt, ...) __attribute__((format(printf, 5, 6)));
struct series *series_find(const struct scenario *sc, const char *id);
const struct series *series_ref(const struct scenario *sc, const char *ref, long x);
void series_unavailable(struct series *s, const char *why);
void record(const struct bench *b, const struct scenario *sc, int run, struct series *s,
	    int64_t us, const struct self_report *self);
void record_failure(const struct scenario *sc, struct series *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool series_stats(const struct series *s, struct stats *st);
int64_t self_median(const struct series *s, size_t field_offset);
struct spread kill_us_spread(const struct series *s);
struct ratio ratio_of(const struct bench *b, const struct series *num, const struct series *den);
struct fit fit_rows(const struct scenario *sc, const char *prefix);
struct fit fit_rows_field(const struct scenario *sc, const char *prefix, long field);
int collect_targets(const struct bench *b, struct target *t);
const char *verdict_name(enum verdict v);

/* ---- report.c ---- */

void fmt_ms(char *buf, size_t len, int64_t us, const struct bench *b);
void read_load(char *buf, size_t len);
void report_text(const struct bench *b, FILE *f);
void report_json(const struct bench *b, const char *path);

#endif
