/* killus.c: scenario killus, how long mrelease takes to reach its SIGKILL
 * (kill_us in its --json) on one stuck victim with default options, at
 * 64 MiB and at 4 GiB.  Nothing it reads before the kill should cost more
 * for a larger victim.
 *
 * A 4 GiB victim takes some 14 s to touch here, so each size has one
 * template, touched once, and every sample a copy of it (kids.c): page
 * tables and RSS counters as large as a victim of that size, its pages
 * shared copy-on-write.  Since those pages stay with the template, only
 * kill_us is judged here, never when memory is back. */
#define _GNU_SOURCE
#include <err.h>
#include <string.h>

#include "bench.h"
#include "mrelease.h"

#define KILLUS_LARGE_MIB 4096L
#define KILLUS_LARGE_MIB_QUICK 256L

long killus_large_mib(const struct bench *b)
{
	return b->opt.quick ? KILLUS_LARGE_MIB_QUICK : KILLUS_LARGE_MIB;
}

/* One copy of t, frozen, ended by mrelease --kill. */
static void time_copy(const struct bench *b, const struct scenario *sc, int run,
		      struct series *s, struct kid *t, struct cgdir *freezer)
{
	static const char *const head[] = { "--kill", NULL };
	struct kid *v = template_copy(t);
	struct victims vs = { .v = &v, .n = 1, .bytes = (size_t)s->x * MIB };
	int e;

	if ((e = cg_freeze(freezer, mr_now_us() + 10 * US_PER_S)))
		errx(EXIT_FATAL, "freeze %s: %s", freezer->path, strerror(-e));
	time_mrelease(b, sc, run, s, pid_args(head, &vs), NULL, &vs);
	cg_thaw(freezer);
	kid_reap(v);
}

void scenario_killus(struct bench *b, struct scenario *sc)
{
	const long mib[] = { KILLUS_SMALL_MIB, killus_large_mib(b) };
	int runs = (int)b->opt.overhead_runs;
	struct cgdir *freezer;
	struct series *rows[2];
	struct kid *t[2];
	char id[32], label[48];

	if (!cg_available(b, sc, true, false))
		return;
	freezer = cg_create(b->v1_freezer, CG_FREEZER);
	snprintf(sc->setup, sizeof(sc->setup),
		 "a copy (clone, copy-on-write) of a template of %ld or %ld MiB, touched once, "
		 "frozen by the cgroup-v1 freezer (%s); only mrelease's kill_us is judged",
		 mib[0], mib[1], freezer->path);
	sc->available = true;
	for (int i = 0; i < 2; i++) {
		struct spawn_spec s = { .kind = KID_TEMPLATE, .bytes = (size_t)mib[i] * MIB,
					.chunks = 1, .cpu = -1 };

		snprintf(id, sizeof(id), "mrelease_%ld", mib[i]);
		snprintf(label, sizeof(label), "mrelease --kill, %ld MiB", mib[i]);
		rows[i] = series_add(sc, id, label, runs, "mrelease --json --kill PID (%ld MiB)",
				     mib[i]);
		rows[i]->x = mib[i];
		spec_join(&s, freezer->path);
		t[i] = start_template(&s);
	}
	for (int run = 0; run < runs; run++)
		for (int i = 0; i < 2; i++)
			time_copy(b, sc, run, rows[i], t[i], freezer);
	kid_reap(t[1]);
	kid_reap(t[0]);
	cg_remove(freezer);
}
