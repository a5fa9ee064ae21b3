/* cli.h: the front end's options, exit codes and reporter. */
#ifndef MR_CLI_H
#define MR_CLI_H

#include "mrelease.h"

#define MR_NELEMS(a) (sizeof(a) / sizeof((a)[0]))
/* A name escaped for the terminal: 4 bytes for each of its bytes at most. */
#define MR_SAFE_LEN 4 * 4096 + 1

enum mr_exit {
	MR_EXIT_OK = 0,      /* every target released or gone */
	MR_EXIT_NONE = 1,    /* none released or gone, or nothing selected */
	MR_EXIT_USAGE = 2,   /* a usage error, or a cgroup refused */
	MR_EXIT_FATAL = 3,
	MR_EXIT_PARTIAL = 64 /* some released, some not */
};

/* The options, as argp leaves them. */
struct mr_options {
	struct mr_config cfg;
	bool json, quiet, verbose, read_stdin, signal_set;
	bool stdout_closed; /* at the start: the report goes nowhere */
	bool pid_args; /* a PID argument was given, though it may hold none */
	bool follow, pressure_set, no_signals, no_pressure;
	struct mr_pressure pressure;
	unsigned int interval_ms; /* --follow: a sweep every so often, or 0 */
	unsigned int settle_ms;   /* --follow: from a SIGKILL seen to its release */
	bool settle_set;
	const char *metrics;      /* --follow: a Prometheus text file to keep */
	struct mr_pidlist pids;
	const char **cgroups, **units;
	size_t ncgroups, nunits;
};

/* text.c */
/* A sentence, and when it is said: always, or only with --verbose (a
 * target's reason is always said). */
struct mr_text {
	bool always;
	const char *fmt;
	const char *if_zero; /* said instead when n is 0 */
};

/* What a template is filled in from. */
struct mr_fields {
	const struct mr_run *run;
	pid_t pid;
	const char *comm;
	int cgroup, errnum, sig;
	size_t n, m;
	const struct mr_target *t; /* or NULL */
};

const char *mr_safe(const char *s);
const char *mr_expand(const char *fmt, const struct mr_fields *f, char *buf, size_t len);
const char *mr_reason_text(const struct mr_run *run, const struct mr_target *t, char *buf,
			   size_t len);
const char *mr_figures_text(const struct mr_run *run, const struct mr_target *t, char *buf,
			    size_t len);
bool mr_target_done(const struct mr_target *t);
size_t mr_selected(const struct mr_run *run);

/* What woke a sweep of --follow: its start; SIGKILLs seen (a release of
 * those processes alone); the settle time of processes left for it (those
 * alone); SIGKILLs lost (the kernel's ring was full: every process is
 * looked at); memory pressure; the timer. */
enum mr_trigger {
	MR_T_START, MR_T_SIGNALS, MR_T_SETTLE, MR_T_LOST, MR_T_PRESSURE, MR_T_TIMER, MR_T_COUNT
};
extern const char *const mr_trigger_names[MR_T_COUNT];

/* The sources --follow wakes on. */
enum mr_source { MR_SRC_SIGNALS, MR_SRC_PRESSURE, MR_SRC_TIMER, MR_SRC_COUNT };
extern const char *const mr_source_names[MR_SRC_COUNT];

/* What one sweep of --follow did. */
struct mr_sweep {
	unsigned long number;    /* from 1 */
	enum mr_trigger trigger;
	size_t not_dying, targets;
	size_t released, failed; /* what it found new */
	size_t known;            /* dying processes said before alike */
	int64_t freed_kb, elapsed_us;
};

/* What --follow did since its start. */
struct mr_follow_totals {
	unsigned long sweeps, by_trigger[MR_T_COUNT];
	size_t released, failed;
	int64_t freed_kb;
	uint64_t events, lost; /* SIGKILLs seen, and lost to a full ring */
	uint64_t dropped;      /* records standard output could not take */
};

/* How --follow starts: the sources in use, and why each other is not. */
struct mr_follow_start {
	bool used[MR_SRC_COUNT];
	const char *declined[MR_SRC_COUNT];
	const struct mr_options *o;
};

/* report.c */
void mr_report_text(FILE *out, const struct mr_run *run);
void mr_report_json(FILE *out, const struct mr_run *run);
void mr_report_follow_start(FILE *out, const struct mr_follow_start *st, const char *when);
void mr_report_follow_header(FILE *out);
void mr_report_follow_target(FILE *out, const struct mr_run *run, const struct mr_target *t,
			     const char *when, bool json);
void mr_report_sweep(FILE *out, const struct mr_sweep *w, const char *when);
void mr_report_message(FILE *out, const char *type, const char *message, const char *when);
void mr_report_follow_end(FILE *out, const struct mr_follow_totals *f, const char *when,
			  bool json);

/* diag.c */
void mr_report_diagnostics(const struct mr_run *run, bool verbose);
const char *mr_note_text(const struct mr_run *run, const struct mr_note *n, bool verbose,
			 char *buf, size_t len);
void mr_report_note(const struct mr_run *run, const struct mr_note *n, bool verbose);
void mr_report_refusal(const struct mr_run *run);

/* follow.c */
int mr_follow(const struct mr_options *o, struct mr_run *run);

/* metrics.c */
int mr_metrics_write(const char *path, const struct mr_follow_totals *t,
		     const struct mr_follow_start *st);

/* signals.c */
void mr_hold_signals(sigset_t *waitmask);
void mr_release_signals(bool interrupted);

#endif
