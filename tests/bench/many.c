/* many.c: the scenarios of many victims at once: cgroup (64 victims of
 * S/64 in one cgroup-v2 cgroup, free to run their exit path),
 * cgroup-stuck (the same 64, also held by the v1 freezer, so that only a
 * reaper can take their memory) and tiny (1 to 512 stuck victims of
 * 1 MiB, for what each one more target costs). */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"

#define CG_VICTIMS 64

struct many {
	struct cgdir *cg;      /* the v2 cgroup mrelease --cgroup is given */
	struct cgdir *freezer; /* cgroup-stuck: the v1 freezer; else NULL */
	struct meter meter;
	struct kid *v[CG_VICTIMS];
	size_t each;
};

/* All victims at once (they touch side by side), then the freeze. */
static void start_many(struct many *m)
{
	struct spawn_spec s = { .kind = KID_VICTIM, .bytes = m->each, .chunks = 1, .cpu = -1 };
	int e;

	spec_join(&s, m->cg->path);
	spec_join(&s, m->freezer ? m->freezer->path : NULL);
	spec_join(&s, m->meter.cg->path);
	start_victims(&s, CG_VICTIMS, m->v);
	if (m->freezer && (e = cg_freeze(m->freezer, mr_now_us() + 10 * US_PER_S)))
		errx(EXIT_FATAL, "freeze %s: %s", m->freezer->path, strerror(-e));
}

static void reap_many(struct many *m)
{
	cg_thaw(m->freezer);
	for (int i = 0; i < CG_VICTIMS; i++)
		kid_reap(m->v[i]);
}

/* cgroup: against cgroup.kill, mrelease --cgroup with the default measure
 * and with --measure=status.  cgroup-stuck: --jobs 1 against --jobs 2,
 * where cgroup.kill only waits out --timeout (--kill-runs times). */
static void run_cgroup(struct bench *b, struct scenario *sc, bool stuck)
{
	struct many m = { .each = b->bytes / CG_VICTIMS };
	struct victims vs = { .v = m.v, .n = CG_VICTIMS, .bytes = m.each * CG_VICTIMS,
			      .meter = &m.meter };
	int runs = (int)b->opt.runs, kill_runs = stuck ? (int)b->opt.kill_runs : runs;
	struct series *kill, *mrel[2], *limit;

	if (!cg_available(b, sc, stuck, true))
		return;
	m.cg = cg_create(b->v2_root, CG_V2);
	if (faccessat(m.cg->dirfd, "cgroup.kill", F_OK, 0)) {
		snprintf(sc->why, sizeof(sc->why), "no cgroup.kill (Linux 5.14 or later)");
		cg_remove(m.cg);
		return;
	}
	if (stuck)
		m.freezer = cg_create(b->v1_freezer, CG_FREEZER);
	meter_open(b, &m.meter);
	snprintf(sc->setup, sizeof(sc->setup), "%d victims of %zu KiB each in %s (cgroup v2)%s%s%s",
		 CG_VICTIMS, m.each >> 10, m.cg->path, stuck ? ", also frozen in " : "",
		 stuck ? m.freezer->path : "",
		 stuck ? " (cgroup-v1 freezer) so that they cannot run their exit path" : "");
	sc->available = true;

	kill = series_add(sc, "cgroup_kill", "cgroup.kill + wait", kill_runs,
			  "write 1 to cgroup.kill, wait for \"populated 0\" in cgroup.events");
	if (stuck) {
		mrel[0] = series_add(sc, "jobs1", "mrelease --jobs 1", runs,
				     "mrelease --json --kill --cgroup PATH --jobs 1");
		mrel[1] = series_add(sc, "jobs2", "mrelease --jobs 2", runs,
				     "mrelease --json --kill --cgroup PATH --jobs 2");
	} else {
		mrel[0] = series_add(sc, "mrelease", "mrelease --kill --cgroup", runs,
				     "mrelease --json --kill --cgroup PATH");
		mrel[1] = series_add(sc, "mrelease_status", "mrelease --cgroup --measure=status",
				     runs, "mrelease --json --kill --cgroup PATH --measure=status");
	}
	limit = series_add(sc, "limit", "munmap (limit)", runs,
			   "munmap() of %d mappings of %zu KiB in one process", CG_VICTIMS,
			   m.each >> 10);

	for (int run = 0; run < runs; run++) {
		if (run < kill_runs) {
			start_many(&m);
			time_cgroup_kill(b, sc, run, kill, m.cg, &vs);
			reap_many(&m);
		}
		for (int j = 0; j < 2; j++) {
			const char *args[8] = { "--kill", "--cgroup", m.cg->path };
			int n = 3;

			if (stuck) {
				args[n++] = "--jobs";
				args[n++] = j ? "2" : "1";
			} else if (j) {
				args[n++] = "--measure=status";
			}
			args[n] = NULL;
			start_many(&m);
			time_mrelease(b, sc, run, mrel[j], args, &vs);
			reap_many(&m);
		}
		time_limit(b, sc, run, limit, m.each * CG_VICTIMS, CG_VICTIMS, -1);
	}
	meter_close(&m.meter);
	cg_remove(m.freezer);
	cg_remove(m.cg);
}

void scenario_cgroup(struct bench *b, struct scenario *sc)
{
	run_cgroup(b, sc, false);
}

void scenario_cgroup_stuck(struct bench *b, struct scenario *sc)
{
	run_cgroup(b, sc, true);
}

/* ---- tiny: many small stuck victims, for the cost per target ---- */

#define TINY_BYTES MIB
#define TINY_MAX 512

const long tiny_counts[] = { 1, 16, 128, TINY_MAX, 0 };
const long tiny_counts_quick[] = { 1, 16, 64, 0 };

static const long *tiny_list(const struct bench *b)
{
	return b->opt.quick ? tiny_counts_quick : tiny_counts;
}

size_t tiny_ncounts(const struct bench *b)
{
	size_t n = 0;

	while (tiny_list(b)[n])
		n++;
	return n;
}

/* N victims of 1 MiB, held by the v1 freezer (D state), each ended by
 * mrelease --kill PID... and by pkill -m; T = fixed + per_target * N is
 * fitted over the medians (stats.c), so that the cost of one more target
 * is told apart from the cost of starting a process. */
void scenario_tiny(struct bench *b, struct scenario *sc)
{
	const long *counts = tiny_list(b);
	size_t nc = tiny_ncounts(b);
	struct series *mrel[8], *pk[8];
	struct kid *v[TINY_MAX];
	struct cgdir *freezer;
	struct meter meter;
	char id[32], label[48];
	int runs = (int)b->opt.runs, e;

	if (!cg_available(b, sc, true, false))
		return;
	freezer = cg_create(b->v1_freezer, CG_FREEZER);
	meter_open(b, &meter);
	snprintf(sc->setup, sizeof(sc->setup),
		 "N victims of %lu KiB each, frozen by the cgroup-v1 freezer (%s), for N = %ld to "
		 "%ld; mrelease --kill is given their pids", TINY_BYTES >> 10, freezer->path,
		 counts[0], counts[nc - 1]);
	sc->available = true;
	for (size_t i = 0; i < nc; i++) {
		snprintf(id, sizeof(id), "mrelease_%ld", counts[i]);
		snprintf(label, sizeof(label), "mrelease --kill, N = %ld", counts[i]);
		mrel[i] = series_add(sc, id, label, runs, "mrelease --json --kill PID... (%ld pids)",
				     counts[i]);
		mrel[i]->x = counts[i];
	}
	for (size_t i = 0; i < nc; i++) {
		snprintf(id, sizeof(id), "pkill_%ld", counts[i]);
		snprintf(label, sizeof(label), "pkill -m, N = %ld", counts[i]);
		pk[i] = series_add(sc, id, label, runs,
				   "%s -9 --mrelease --count -P MR-BENCH -x " VICTIM_COMM,
				   b->pkill.found ? b->pkill.path : "pkill");
		pk[i]->x = counts[i];
		if (!b->pkill.found)
			series_unavailable(pk[i], b->pkill.why);
	}
	for (int run = 0; run < runs; run++)
		for (size_t i = 0; i < nc; i++)
			for (int tool = 0; tool < 2; tool++) {
				struct spawn_spec s = { .kind = KID_VICTIM, .bytes = TINY_BYTES,
							.chunks = 1, .cpu = -1 };
				struct victims vs = { .v = v, .n = (int)counts[i],
						      .bytes = TINY_BYTES * (size_t)counts[i],
						      .meter = &meter };
				static const char *const head[] = { "--kill", NULL };

				if (tool && !pk[i]->available)
					continue;
				spec_join(&s, freezer->path);
				spec_join(&s, meter.cg->path);
				start_victims(&s, vs.n, v);
				if ((e = cg_freeze(freezer, mr_now_us() + 10 * US_PER_S)))
					errx(EXIT_FATAL, "freeze %s: %s", freezer->path, strerror(-e));
				if (tool)
					time_pkill(b, sc, run, pk[i], &vs);
				else
					time_mrelease(b, sc, run, mrel[i], pid_args(head, &vs), &vs);
				cg_thaw(freezer);
				for (int k = 0; k < vs.n; k++)
					kid_reap(v[k]);
			}
	meter_close(&meter);
	cg_remove(freezer);
}
