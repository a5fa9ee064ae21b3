/* startup.c: what mrelease costs by itself, with nothing released:
 * overhead (--dry-run with each --measure mode on an S MiB victim). */
#define _GNU_SOURCE
#include <err.h>
#include <stdio.h>

#include "bench.h"
#include "mrelease.h"

static const char *const measure_modes[] = { "smaps", "status", "none" };

void scenario_overhead(struct bench *b, struct scenario *sc)
{
	struct spawn_spec s = { .kind = KID_VICTIM, .bytes = b->bytes, .chunks = 1, .cpu = -1 };
	struct series *rows[ARRAY_LEN(measure_modes)];
	char pid[16], opt[ARRAY_LEN(measure_modes)][24], id[32];
	int runs = (int)b->opt.overhead_runs;
	struct kid *v;

	snprintf(sc->setup, sizeof(sc->setup),
		 "one victim of %zu MiB, free to run; mrelease --dry-run reads its figures and "
		 "releases nothing", b->bytes / MIB);
	sc->available = true;
	for (size_t m = 0; m < ARRAY_LEN(measure_modes); m++) {
		snprintf(opt[m], sizeof(opt[m]), "--measure=%s", measure_modes[m]);
		snprintf(id, sizeof(id), "measure_%s", measure_modes[m]);
		rows[m] = series_add(sc, id, opt[m], runs, "mrelease --dry-run %s PID", opt[m]);
	}
	v = start_victim(&s);
	snprintf(pid, sizeof(pid), "%d", v->pid);
	/* Interleaved, so that drift hits every mode alike. */
	for (int run = 0; run < runs; run++)
		for (size_t m = 0; m < ARRAY_LEN(measure_modes); m++) {
			const char *argv[] = { b->opt.mrelease, "--dry-run", opt[m], pid, NULL };

			time_process(b, sc, run, rows[m], argv);
		}
	kid_reap(v);
}
