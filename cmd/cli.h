/* cli.h: the front end's options, exit codes and reporter. */
#ifndef MR_CLI_H
#define MR_CLI_H

#include "mrelease.h"

#define MR_NELEMS(a) (sizeof(a) / sizeof((a)[0]))

enum mr_exit {
	MR_EXIT_OK = 0,      /* every target released or gone */
	MR_EXIT_NONE = 1,    /* none released or gone, or nothing selected */
	MR_EXIT_USAGE = 2,
	MR_EXIT_FATAL = 3,
	MR_EXIT_PARTIAL = 64 /* some released, some not */
};

/* The options, as argp leaves them. */
struct mr_options {
	struct mr_config cfg;
	bool json, quiet, verbose, read_stdin;
	struct mr_pidlist pids;
	const char **cgroups;
	size_t ncgroups;
};

/* report.c */
void mr_report_diagnostics(const struct mr_run *run, bool verbose);
void mr_report_text(FILE *out, const struct mr_run *run);
void mr_report_json(FILE *out, const struct mr_run *run);
bool mr_target_done(const struct mr_target *t);

/* signals.c */
void mr_hold_signals(sigset_t *waitmask);
void mr_release_signals(bool interrupted);

#endif
