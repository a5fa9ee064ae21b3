/* many.c: the scenarios of many victims at once: cgroup (64 victims of
 * S/64 in one cgroup-v2 cgroup, free to run their exit path), many (128
 * victims of S/128 held by the v1 freezer, so that only a reaper can take
 * their memory), tiny (1 to 256 stuck victims of 1 MiB, for what each
 * one more target costs) and batches (2000 stuck victims of 1 MiB, their
 * pids on mrelease's stdin, with and without a limit on open files that
 * makes each phase go in batches).  Every method, the floor among them, has fresh
 * victims and takes its turn within each run. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"

#define CG_VICTIMS 64
#define MANY_VICTIMS 128
#define TINY_MAX 256
#define BATCHES_VICTIMS 2000
#define BATCHES_VICTIMS_QUICK 256

struct many {
	struct cgdir *cg;      /* cgroup: the v2 cgroup mrelease --cgroup is given */
	struct cgdir *freezer; /* many, tiny, batches: the v1 freezer; else NULL */
	struct meter meter;
	struct kid **v;        /* n of them while a sample runs, else NULL */
	int n;
	size_t each;
};

/* MANY_STDIN: mrelease --kill -, the pids on its stdin; MANY_STDIN_LIMITED:
 * the same under RLIMIT_NOFILE BATCHES_NOFILE, which it may not raise. */
enum many_how {
	MANY_CGROUP_KILL, MANY_FLOOR, MANY_MRELEASE, MANY_PKILL, MANY_STDIN, MANY_STDIN_LIMITED
};

/* All victims at once (they touch side by side), then the freeze. */
static void start_many(struct many *m)
{
	struct spawn_spec s = { .kind = KID_VICTIM, .bytes = m->each, .chunks = 1, .cpu = -1 };
	int e;

	m->v = calloc((size_t)m->n, sizeof(*m->v));
	if (!m->v)
		err(EXIT_FATAL, "malloc");
	spec_join(&s, m->cg ? m->cg->path : NULL);
	spec_join(&s, m->freezer ? m->freezer->path : NULL);
	spec_join(&s, m->meter.cg->path);
	start_victims(&s, m->n, m->v);
	if (m->freezer && (e = cg_freeze(m->freezer, mr_now_us() + 10 * US_PER_S)))
		errx(EXIT_FATAL, "freeze %s: %s", m->freezer->path, strerror(-e));
}

static void reap_many(struct many *m)
{
	cg_thaw(m->freezer);
	for (int i = 0; i < m->n; i++)
		kid_reap(m->v[i]);
	free(m->v);
	m->v = NULL;
}

/* One sample of one method on fresh victims. */
static void time_many(const struct bench *b, const struct scenario *sc, struct many *m,
		      enum many_how how, struct series *s, int run)
{
	struct victims vs = { .n = m->n, .bytes = m->each * (size_t)m->n, .meter = &m->meter };
	static const char *const kill_head[] = { "--kill", NULL };
	static const char *const stdin_args[] = { "--kill", "-", NULL };
	const char *cg_args[] = { "--kill", "--cgroup", m->cg ? m->cg->path : "", NULL };
	struct cmd_env env = { .in = -1 };

	start_many(m);
	vs.v = m->v; /* allocated by start_many */
	switch (how) {
	case MANY_CGROUP_KILL:
		time_cgroup_kill(b, sc, run, s, m->cg, &vs);
		break;
	case MANY_FLOOR:
		time_floor(b, sc, run, s, &vs);
		break;
	case MANY_MRELEASE:
		/* The cgroup itself where there is one, else every pid. */
		time_mrelease(b, sc, run, s, m->cg ? cg_args : pid_args(kill_head, &vs), NULL,
			      &vs);
		break;
	case MANY_PKILL:
		time_pkill(b, sc, run, s, &vs);
		break;
	case MANY_STDIN:
	case MANY_STDIN_LIMITED:
		/* The list is written before the clock starts; reading it is
		 * part of mrelease's run. */
		env.in = pid_list(&vs);
		env.nofile = how == MANY_STDIN_LIMITED ? BATCHES_NOFILE : 0;
		time_mrelease(b, sc, run, s, stdin_args, &env, &vs);
		close(env.in);
		break;
	}
	reap_many(m);
}

/* Rows: cgroup.kill + wait (cgroup only), the floor, mrelease, pkill -m. */
static void run_many(const struct bench *b, struct scenario *sc, struct many *m)
{
	int runs = (int)b->opt.runs;
	struct series *rows[4];
	enum many_how how[4];
	int n = 0;

	if (m->cg) {
		how[n] = MANY_CGROUP_KILL;
		rows[n++] = series_add(sc, "cgroup_kill", "cgroup.kill + wait", runs,
				       "write 1 to cgroup.kill, wait for \"populated 0\" in "
				       "cgroup.events");
	}
	how[n] = MANY_FLOOR;
	rows[n++] = series_add(sc, "floor", "mr-floor (the floor)", runs,
			       "mr-floor PID... (%d pids, one after another)", m->n);
	how[n] = MANY_MRELEASE;
	rows[n++] = m->cg ? series_add(sc, "mrelease", "mrelease --kill --cgroup", runs,
				       "mrelease --json --kill --cgroup PATH")
			  : series_add(sc, "mrelease", "mrelease --kill", runs,
				       "mrelease --json --kill PID... (%d pids)", m->n);
	how[n] = MANY_PKILL;
	rows[n] = series_add(sc, "pkill_m", "pkill -m", runs,
			     "%s -9 --mrelease --count -P MR-BENCH -x " VICTIM_COMM,
			     b->pkill.found ? b->pkill.path : "pkill");
	if (!b->pkill.found)
		series_unavailable(rows[n], b->pkill.why);
	n++;
	meter_open(b, &m->meter);
	for (int run = 0; run < runs; run++)
		for (int i = 0; i < n; i++)
			if (rows[i]->available)
				time_many(b, sc, m, how[i], rows[i], run);
	meter_close(&m->meter);
}

/* cgroup: 64 victims free to run in one v2 cgroup, against cgroup.kill. */
void scenario_cgroup(struct bench *b, struct scenario *sc)
{
	struct many m = { .n = CG_VICTIMS, .each = b->bytes / CG_VICTIMS };

	if (!cg_available(b, sc, false, true))
		return;
	m.cg = cg_create(b->v2_root, CG_V2);
	if (faccessat(m.cg->dirfd, "cgroup.kill", F_OK, 0)) {
		snprintf(sc->why, sizeof(sc->why), "no cgroup.kill (Linux 5.14 or later)");
		cg_remove(m.cg);
		return;
	}
	snprintf(sc->setup, sizeof(sc->setup),
		 "%d victims of %zu KiB each in %s (cgroup v2), free to run", m.n, m.each >> 10,
		 m.cg->path);
	sc->available = true;
	run_many(b, sc, &m);
	cg_remove(m.cg);
}

/* many: 128 stuck victims, their pids given to each tool. */
void scenario_many(struct bench *b, struct scenario *sc)
{
	struct many m = { .n = MANY_VICTIMS, .each = b->bytes / MANY_VICTIMS };

	if (!cg_available(b, sc, true, false))
		return;
	m.freezer = cg_create(b->v1_freezer, CG_FREEZER);
	snprintf(sc->setup, sizeof(sc->setup),
		 "%d victims of %zu KiB each, frozen by the cgroup-v1 freezer (%s); the floor "
		 "and mrelease are given their pids", m.n, m.each >> 10, m.freezer->path);
	sc->available = true;
	run_many(b, sc, &m);
	cg_remove(m.freezer);
}

/* ---- tiny: many small stuck victims, for the cost per target ---- */

#define TINY_BYTES MIB

static const long tiny_full[] = { 1, 16, 64, TINY_MAX, 0 };
static const long tiny_quick[] = { 1, 8, 32, 0 };

const long *tiny_counts(const struct bench *b)
{
	return b->opt.quick ? tiny_quick : tiny_full;
}

/* N victims of 1 MiB, held by the v1 freezer (D state), each ended by the
 * floor, mrelease --kill PID... and pkill -m; T = fixed + per_target * N
 * is fitted over the medians (stats.c), so that the cost of one more
 * target is told apart from the cost of starting a process. */
void scenario_tiny(struct bench *b, struct scenario *sc)
{
	static const struct {
		enum many_how how;
		const char *id, *label, *command;
	} tools[] = {
		{ MANY_FLOOR, "floor", "mr-floor", "mr-floor PID..." },
		{ MANY_MRELEASE, "mrelease", "mrelease --kill", "mrelease --json --kill PID..." },
		{ MANY_PKILL, "pkill_m", "pkill -m",
		  "pkill -9 --mrelease --count -P MR-BENCH -x " VICTIM_COMM },
	};
	const long *counts = tiny_counts(b);
	struct series *rows[8][ARRAY_LEN(tools)];
	struct many m = { .each = TINY_BYTES };
	char id[32], label[48];
	int runs = (int)b->opt.runs;
	size_t nc = 0;

	if (!cg_available(b, sc, true, false))
		return;
	m.freezer = cg_create(b->v1_freezer, CG_FREEZER);
	for (; counts[nc]; nc++)
		for (size_t t = 0; t < ARRAY_LEN(tools); t++) {
			snprintf(id, sizeof(id), "%s_%ld", tools[t].id, counts[nc]);
			snprintf(label, sizeof(label), "%s, N = %ld", tools[t].label, counts[nc]);
			rows[nc][t] = series_add(sc, id, label, runs, "%s (%ld victims)",
						 tools[t].command, counts[nc]);
			rows[nc][t]->x = counts[nc];
			if (tools[t].how == MANY_PKILL && !b->pkill.found)
				series_unavailable(rows[nc][t], b->pkill.why);
		}
	snprintf(sc->setup, sizeof(sc->setup),
		 "N victims of %lu KiB each, frozen by the cgroup-v1 freezer (%s), for N = %ld to "
		 "%ld; the floor and mrelease --kill are given their pids", TINY_BYTES >> 10,
		 m.freezer->path, counts[0], counts[nc - 1]);
	sc->available = true;
	meter_open(b, &m.meter);
	for (int run = 0; run < runs; run++)
		for (size_t i = 0; i < nc; i++)
			for (size_t t = 0; t < ARRAY_LEN(tools); t++) {
				m.n = (int)counts[i];
				if (rows[i][t]->available)
					time_many(b, sc, &m, tools[t].how, rows[i][t], run);
			}
	meter_close(&m.meter);
	cg_remove(m.freezer);
}

/* ---- batches: what a batch costs ---- */

long batches_victims(const struct bench *b)
{
	return b->opt.quick ? BATCHES_VICTIMS_QUICK : BATCHES_VICTIMS;
}

/* N stuck victims of 1 MiB, their pids on mrelease's stdin (more than a
 * command line of pid_args takes), ended by mrelease --kill - with the
 * limits mr-bench has, and by the same under RLIMIT_NOFILE BATCHES_NOFILE
 * soft and hard, without CAP_SYS_RESOURCE to lift it: there its pidfds do
 * not all fit, and every phase of the run (the first signal, the kills,
 * the releases, the wait) goes through them in batches (issues 21, 26).
 * The two take turns on fresh victims; the report gives the ratio and the
 * cost of a batch. */
void scenario_batches(struct bench *b, struct scenario *sc)
{
	struct many m = { .n = (int)batches_victims(b), .each = TINY_BYTES };
	int runs = (int)b->opt.runs;
	struct series *rows[2];
	const enum many_how how[2] = { MANY_STDIN, MANY_STDIN_LIMITED };
	char label[48];

	if (!cg_available(b, sc, true, false))
		return;
	m.freezer = cg_create(b->v1_freezer, CG_FREEZER);
	snprintf(sc->setup, sizeof(sc->setup),
		 "%d victims of %lu KiB each, frozen by the cgroup-v1 freezer (%s); their pids on "
		 "mrelease's stdin; limited: RLIMIT_NOFILE %ld:%ld set in the child before exec, "
		 "CAP_SYS_RESOURCE dropped from its bounding set", m.n, TINY_BYTES >> 10,
		 m.freezer->path, BATCHES_NOFILE, BATCHES_NOFILE);
	sc->available = true;
	rows[0] = series_add(sc, "mrelease", "mrelease --kill -", runs,
			     "mrelease --json --kill - (%d pids on stdin)", m.n);
	snprintf(label, sizeof(label), "mrelease --kill -, RLIMIT_NOFILE %ld", BATCHES_NOFILE);
	rows[1] = series_add(sc, "limited", label, runs,
			     "mrelease --json --kill - (%d pids on stdin), RLIMIT_NOFILE %ld:%ld, "
			     "no CAP_SYS_RESOURCE", m.n, BATCHES_NOFILE, BATCHES_NOFILE);
	meter_open(b, &m.meter);
	for (int run = 0; run < runs; run++)
		for (int i = 0; i < 2; i++)
			time_many(b, sc, &m, how[i], rows[i], run);
	meter_close(&m.meter);
	cg_remove(m.freezer);
}
