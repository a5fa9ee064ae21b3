/* startup.c: what mrelease costs by itself, with nothing released:
 * startup (a whole --dry-run --kill process against a bare fork+exec of
 * /bin/true), protect (what its self-protection at start costs, by
 * strace) and overhead (--dry-run --kill with each --measure mode on an
 * S MiB victim).  --kill, since without it a victim that is not exiting
 * is a failure, and a dry run of --kill reads what a real one would. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"

#define TINY_VICTIM MIB

static const char *const measure_modes[] = { "smaps", "status", "none" };

static struct kid *tiny_victim(char *pid, size_t len)
{
	struct spawn_spec s = { .kind = KID_VICTIM, .bytes = TINY_VICTIM, .chunks = 1, .cpu = -1 };
	struct kid *v = start_victim(&s);

	snprintf(pid, len, "%d", v->pid);
	return v;
}

/* mrelease --dry-run --kill on a 1 MiB victim, fork to exit, against
 * fork+exec of /bin/true: what a whole mrelease process costs beyond any
 * process. */
void scenario_startup(struct bench *b, struct scenario *sc)
{
	int runs = (int)b->opt.overhead_runs;
	struct series *dry, *tru;
	char pid[16];
	struct kid *v;

	if (access("/bin/true", X_OK)) {
		snprintf(sc->why, sizeof(sc->why), "/bin/true: %s", strerror(errno));
		return;
	}
	snprintf(sc->setup, sizeof(sc->setup),
		 "one victim of %lu KiB, free to run; both timed from before fork() until the "
		 "child's pidfd polls readable", TINY_VICTIM >> 10);
	sc->available = true;
	dry = series_add(sc, "dry_run", "mrelease --dry-run --kill, 1 MiB", runs,
			 "mrelease --dry-run --kill PID, stdout to /dev/null");
	tru = series_add(sc, "true", "/bin/true", runs, "/bin/true");
	v = tiny_victim(pid, sizeof(pid));
	/* Interleaved, so that drift hits both alike. */
	for (int run = 0; run < runs; run++) {
		const char *argv[] = { b->opt.mrelease, "--dry-run", "--kill", pid, NULL };
		const char *targv[] = { "/bin/true", NULL };

		time_process(b, sc, run, dry, argv);
		time_process(b, sc, run, tru, targv);
	}
	kid_reap(v);
}

/* ---- protect: oom_score_adj and mlockall at start ---- */

/* The time strace -T puts at the end of a line, "<0.000123>", in us. */
static int64_t strace_us(const char *line, const char *end)
{
	const char *lt = memrchr(line, '<', (size_t)(end - line));

	return lt ? (int64_t)(strtod(lt + 1, NULL) * US_PER_S + 0.5) : -1;
}

/* What a call returned: the text between " = " and " <". */
static void strace_ret(const char *line, const char *end, char *out, size_t len)
{
	/* The arguments here hold no " = "; a write's are padded before it. */
	const char *eq = memmem(line, (size_t)(end - line), " = ", 3);
	const char *lt = memrchr(line, '<', (size_t)(end - line));

	if (eq && lt && lt > eq + 4)
		snprintf(out, len, "%.*s", (int)(lt - (eq + 3) - 1), eq + 3);
	else
		snprintf(out, len, "?");
}

/* From one strace log: the mlockall call, and the write to the descriptor
 * that /proc/self/oom_score_adj was opened on, with what each returned.
 * 0, or -1 with why. */
static int parse_strace(char *log, int64_t *mlock_us, int64_t *write_us, char *rets,
			size_t retlen, char *why, size_t len)
{
	char prefix[32] = "", mret[64] = "?", wret[64] = "?";

	*mlock_us = *write_us = -1;
	for (char *line = log, *end; *line; line = *end ? end + 1 : end) {
		const char *eq;

		end = line + strcspn(line, "\n");
		if (!strncmp(line, "mlockall(", 9)) {
			*mlock_us = strace_us(line, end);
			strace_ret(line, end, mret, sizeof(mret));
		} else if (!strncmp(line, "openat(", 7) &&
			   memmem(line, (size_t)(end - line), "\"/proc/self/oom_score_adj\"", 26) &&
			   (eq = memmem(line, (size_t)(end - line), ") = ", 4))) {
			snprintf(prefix, sizeof(prefix), "write(%ld,", strtol(eq + 4, NULL, 10));
		} else if (prefix[0] && !strncmp(line, prefix, strlen(prefix)) && *write_us < 0) {
			*write_us = strace_us(line, end);
			strace_ret(line, end, wret, sizeof(wret));
		}
	}
	snprintf(rets, retlen, "mlockall returned %s, the write to oom_score_adj %s", mret, wret);
	if (*mlock_us < 0 || *write_us < 0) {
		snprintf(why, len, "no %s in the strace log",
			 *mlock_us < 0 ? "mlockall call" : "write to /proc/self/oom_score_adj");
		return -1;
	}
	return 0;
}

/* strace -T times each call in the kernel; mrelease --dry-run --kill is
 * traced for only the calls wanted, so the rest of the run is not slowed. */
void scenario_protect(struct bench *b, struct scenario *sc)
{
	const char *probe[] = { "strace", "-V", NULL };
	int runs = (int)b->opt.overhead_runs;
	struct series *ml, *wr, *both;
	struct tool_result r;
	char pid[16], why[160], rets[160];
	struct kid *v;

	run_cmd(probe, NULL, false, 10 * US_PER_S, &r);
	if (r.status != 0) {
		snprintf(sc->why, sizeof(sc->why), "no strace in PATH (Debian: apt-get install strace)");
		return;
	}
	snprintf(sc->setup, sizeof(sc->setup),
		 "strace -T -e trace=mlockall,openat,write mrelease --dry-run --kill PID, on a victim of "
		 "%lu KiB; the time strace gives each call", TINY_VICTIM >> 10);
	sc->available = true;
	ml = series_add(sc, "mlockall", "mlockall(MCL_CURRENT|FUTURE|ONFAULT)", runs,
			"the mlockall call's time under strace -T");
	wr = series_add(sc, "oom_score_adj", "write -1000 to oom_score_adj", runs,
			"the write to /proc/self/oom_score_adj's time under strace -T");
	both = series_add(sc, "both", "both, summed", runs, "the two, added up for each run");
	v = tiny_victim(pid, sizeof(pid));
	for (int run = 0; run < runs; run++) {
		char log[] = "/tmp/mr-bench-strace.XXXXXX", text[65536];
		const char *argv[] = { "strace", "-o", log, "-T", "-e", "trace=mlockall,openat,write",
				       "--", b->opt.mrelease, "--dry-run", "--kill", pid, NULL };
		int64_t mus, wus;
		int fd = mkstemp(log);

		if (fd < 0)
			err(EXIT_FATAL, "mkstemp %s", log);
		close(fd);
		run_cmd(argv, NULL, false, b->timeout_us, &r);
		if (r.status != 0) {
			record_failure(sc, both, "strace: exit %d: %s", r.status, r.err);
		} else if (mr_read_file(log, text, sizeof(text)) < 0 ||
			   parse_strace(text, &mus, &wus, rets, sizeof(rets), why, sizeof(why))) {
			record_failure(sc, both, "%s", why);
		} else {
			/* A refused write (EACCES without CAP_SYS_RESOURCE) costs
			 * less than one that is done: say which was timed. */
			if (!both->note[0])
				snprintf(both->note, sizeof(both->note), "%s", rets);
			record(b, sc, run, ml, mus, NULL);
			record(b, sc, run, wr, wus, NULL);
			record(b, sc, run, both, mus + wus, NULL);
		}
		unlink(log);
	}
	kid_reap(v);
}

void scenario_overhead(struct bench *b, struct scenario *sc)
{
	struct spawn_spec s = { .kind = KID_VICTIM, .bytes = b->bytes, .chunks = 1, .cpu = -1 };
	struct series *rows[ARRAY_LEN(measure_modes)];
	char pid[16], opt[ARRAY_LEN(measure_modes)][24], id[32];
	int runs = (int)b->opt.overhead_runs;
	struct kid *v;

	snprintf(sc->setup, sizeof(sc->setup),
		 "one victim of %zu MiB, free to run; mrelease --dry-run --kill reads its figures "
		 "and sends and releases nothing", b->bytes / MIB);
	sc->available = true;
	for (size_t m = 0; m < ARRAY_LEN(measure_modes); m++) {
		snprintf(opt[m], sizeof(opt[m]), "--measure=%s", measure_modes[m]);
		snprintf(id, sizeof(id), "measure_%s", measure_modes[m]);
		rows[m] = series_add(sc, id, opt[m], runs, "mrelease --dry-run --kill %s PID",
				     opt[m]);
	}
	v = start_victim(&s);
	snprintf(pid, sizeof(pid), "%d", v->pid);
	/* Interleaved, so that drift hits every mode alike. */
	for (int run = 0; run < runs; run++)
		for (size_t m = 0; m < ARRAY_LEN(measure_modes); m++) {
			const char *argv[] = { b->opt.mrelease, "--dry-run", "--kill", opt[m], pid,
					       NULL };

			time_process(b, sc, run, rows[m], argv);
		}
	kid_reap(v);
}
