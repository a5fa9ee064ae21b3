/* cli.h: what the front end gathers in a run and hands to the reporter. */
#ifndef MR_CLI_H
#define MR_CLI_H

#include "mrelease.h"

#define MR_NELEMS(a) (sizeof(a) / sizeof((a)[0]))

enum mr_exit {
	MR_EXIT_OK = 0,      /* every target released or gone */
	MR_EXIT_NONE = 1,    /* no target released */
	MR_EXIT_USAGE = 2,
	MR_EXIT_FATAL = 3,
	MR_EXIT_PARTIAL = 64 /* some released, some failed */
};

struct mr_run {
	struct mr_target *targets;
	size_t ntargets;
	struct mr_cgmounts mounts;
	struct mr_cgroup *cgroups;
	size_t ncgroups;
	enum mr_measure_mode measure;
	bool dry_run;
	int64_t mem_available_before_kb, mem_available_after_kb;
	int64_t elapsed_us;
	struct mr_release_stats stats;
};

/* The options, as argp leaves them. */
struct mr_options {
	bool kill, dry_run, json, quiet, verbose, recursive, wait, read_stdin;
	enum mr_measure_mode measure;
	unsigned int wait_ms;
	unsigned int jobs; /* 0: one per CPU of the affinity set */
	struct mr_sched sched;
	struct mr_pidlist pids;
	const char **cgroups;
	size_t ncgroups;
};

/* select.c */
void mr_resolve_cgroups(const struct mr_options *o, struct mr_run *run);
void mr_select_targets(const struct mr_options *o, struct mr_procinfo *pi, struct mr_run *run);
size_t mr_rescan(const struct mr_options *o, struct mr_procinfo *pi, struct mr_run *run);
void mr_measure_targets(struct mr_procinfo *pi, struct mr_run *run, size_t from);
void mr_measure_after(struct mr_procinfo *pi, struct mr_run *run);
void mr_measure_cgroups(struct mr_run *run, bool after);
void mr_free_run(struct mr_run *run);

/* act.c */
void mr_act(const struct mr_options *o, struct mr_procinfo *pi, struct mr_run *run);
void mr_release_signals(void);

/* report.c */
void mr_report_text(FILE *out, const struct mr_run *run);
void mr_report_json(FILE *out, const struct mr_run *run);
const char *mr_target_strerror(const struct mr_target *t, char *buf, size_t len);
const char *mr_status_name(enum mr_status s);

#endif
