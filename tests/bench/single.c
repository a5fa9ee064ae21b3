/* single.c: the scenarios of one victim at a time: idle (free to run),
 * starved (it cannot get a CPU to exit on), stuck (held by the v1
 * freezer, as in uninterruptible sleep), grace (it ignores SIGTERM), all
 * of S MiB; sweep (stuck, of growing size).  (follow is in follow.c.)  Every sample has a fresh
 * victim, touched before the clock starts; the methods, the floor among
 * them, take turns within each run, so that drift on a shared machine
 * hits them all alike. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "mrelease.h"

#define RELEASE_CPU 0 /* starved: where mrelease and mr-bench run */
#define VICTIM_CPU 1  /* starved: where the victim and the busy loop fight */
#define STR(x) #x
#define XSTR(x) STR(x)

struct single {
	bool starve;           /* SCHED_IDLE victim beside a nice -20 loop on VICTIM_CPU */
	bool ignore_term;      /* the victim ignores SIGTERM */
	size_t bytes;
	struct cgdir *freezer; /* the v1 freezer that holds the victim, or NULL */
	struct meter meter;
	bool checked_state;
};

enum how { HOW_KILL, HOW_FLOOR, HOW_MRELEASE, HOW_PKILL, HOW_MUNMAP };

/* One row of a single-victim scenario and how to time it. */
struct method {
	struct series *s;
	enum how how;
	const char *arg;       /* HOW_MRELEASE: one more option, or NULL */
	int runs;
};

/* The freezer must leave the victim in D state, the stand-in for an
 * uninterruptible sleep; say so once if this kernel does otherwise. */
static void check_frozen(struct single *su, const struct kid *v)
{
	struct mr_stat st = { .state = '?' };

	if (su->checked_state)
		return;
	su->checked_state = true;
	if (mr_proc_stat("/proc", v->pid, &st) || st.state != 'D')
		warnx("victim %d: state %c when frozen, not D", v->pid, st.state);
}

static struct kid *prepare_victim(struct single *su, struct kid **hog)
{
	struct spawn_spec s = {
		.kind = KID_VICTIM, .bytes = su->bytes, .chunks = 1,
		.cpu = su->starve ? VICTIM_CPU : -1, .sched_idle = su->starve,
		.ignore_term = su->ignore_term,
	};
	struct kid *v;
	int e;

	spec_join(&s, su->freezer ? su->freezer->path : NULL);
	spec_join(&s, su->meter.cg->path);
	v = start_victim(&s);
	if (su->freezer) {
		if ((e = cg_freeze(su->freezer, mr_now_us() + 10 * US_PER_S)))
			errx(EXIT_FATAL, "freeze %s: %s", su->freezer->path, strerror(-e));
		check_frozen(su, v);
	}
	*hog = su->starve ? start_hog(VICTIM_CPU) : NULL;
	return v;
}

static void finish_victim(const struct single *su, struct kid *v, struct kid *hog)
{
	cg_thaw(su->freezer);
	kid_reap(hog);
	kid_reap(v);
}

static void time_method(const struct bench *b, const struct scenario *sc, struct single *su,
			const struct method *m, int run)
{
	const char *args[8];
	struct kid *v, *hog;
	struct victims vs = { .v = &v, .n = 1, .bytes = su->bytes, .meter = &su->meter };
	int n = 0;

	if (m->how == HOW_MUNMAP) {
		time_munmap(b, sc, run, m->s, su->bytes, 1, -1);
		return;
	}
	v = prepare_victim(su, &hog);
	switch (m->how) {
	case HOW_KILL:
		time_sigkill(b, sc, run, m->s, &vs);
		break;
	case HOW_FLOOR:
		time_floor(b, sc, run, m->s, &vs);
		break;
	case HOW_MRELEASE:
		args[n++] = "--kill";
		if (m->arg)
			args[n++] = m->arg;
		if (su->starve) {
			args[n++] = "--affinity";
			args[n++] = XSTR(RELEASE_CPU);
		}
		args[n] = NULL;
		time_mrelease(b, sc, run, m->s, pid_args(args, &vs), NULL, &vs);
		break;
	case HOW_PKILL:
		time_pkill(b, sc, run, m->s, &vs);
		break;
	case HOW_MUNMAP:
		break;
	}
	finish_victim(su, v, hog);
}

static void run_methods(const struct bench *b, const struct scenario *sc, struct single *su,
			const struct method *m, int nm)
{
	for (int run = 0; run < b->opt.runs; run++)
		for (int i = 0; i < nm; i++)
			if (m[i].s->available && run < m[i].runs)
				time_method(b, sc, su, &m[i], run);
}

static struct method floor_method(struct scenario *sc, int runs)
{
	return (struct method){
		series_add(sc, "floor", "mr-floor (the floor)", runs,
			   "mr-floor PID: pidfd_open, SIGKILL, process_mrelease"),
		HOW_FLOOR, NULL, runs };
}

static struct method pkill_method(const struct bench *b, struct scenario *sc, int runs)
{
	struct method m = {
		series_add(sc, "pkill_m", "pkill -m", runs,
			   "%s -9 --mrelease --count -P MR-BENCH -x " VICTIM_COMM,
			   b->pkill.found ? b->pkill.path : "pkill"),
		HOW_PKILL, NULL, runs };

	if (!b->pkill.found)
		series_unavailable(m.s, b->pkill.why);
	return m;
}

/* The rows idle, starved and stuck share: SIGKILL + wait, the floor,
 * mrelease --kill with default options (--affinity where starved), pkill
 * -m; and for stuck, munmap of as much in one process. */
static void run_single(struct bench *b, struct scenario *sc, struct single *su)
{
	const char *aff = su->starve ? " --affinity " XSTR(RELEASE_CPU) : "";
	int runs = (int)b->opt.runs;
	/* Where SIGKILL cannot free the memory, it only waits out --timeout. */
	int kill_runs = su->starve || su->freezer ? (int)b->opt.kill_runs : runs;
	struct method m[5];
	int n = 0;

	su->bytes = b->bytes;
	m[n++] = (struct method){
		series_add(sc, "kill", "SIGKILL + wait", kill_runs,
			   "pidfd_send_signal(SIGKILL), poll the pidfd"),
		HOW_KILL, NULL, kill_runs };
	m[n++] = floor_method(sc, runs);
	m[n++] = (struct method){
		series_add(sc, "mrelease", "mrelease --kill", runs, "mrelease --json --kill%s PID",
			   aff),
		HOW_MRELEASE, NULL, runs };
	m[n++] = pkill_method(b, sc, runs);
	if (su->freezer)
		m[n++] = (struct method){
			series_add(sc, "munmap", "munmap (one process, no kill)", runs,
				   "munmap() of the same memory in the process that touched it"),
			HOW_MUNMAP, NULL, runs };
	meter_open(b, &su->meter);
	run_methods(b, sc, su, m, n);
	meter_close(&su->meter);
}

void scenario_idle(struct bench *b, struct scenario *sc)
{
	struct single su = { 0 };

	if (!cg_available(b, sc, false, false))
		return;
	snprintf(sc->setup, sizeof(sc->setup),
		 "one victim of %zu MiB, not pinned, nothing else running", b->bytes / MIB);
	sc->available = true;
	run_single(b, sc, &su);
}

void scenario_starved(struct bench *b, struct scenario *sc)
{
	struct single su = { .starve = true };
	cpu_set_t saved, release;

	if (!cg_available(b, sc, false, false))
		return;
	if (sched_getaffinity(0, sizeof(saved), &saved))
		err(EXIT_FATAL, "sched_getaffinity");
	if (!CPU_ISSET(RELEASE_CPU, &saved) || !CPU_ISSET(VICTIM_CPU, &saved)) {
		snprintf(sc->why, sizeof(sc->why), "needs CPUs %d and %d", RELEASE_CPU, VICTIM_CPU);
		return;
	}
	snprintf(sc->setup, sizeof(sc->setup),
		 "victim of %zu MiB at SCHED_IDLE pinned to CPU %d, a nice -20 busy loop "
		 "pinned to CPU %d; mr-bench and mrelease --affinity %d on CPU %d",
		 b->bytes / MIB, VICTIM_CPU, VICTIM_CPU, RELEASE_CPU, RELEASE_CPU);
	sc->available = true;
	/* mr-bench waits on CPU 0 too, and its children start there. */
	CPU_ZERO(&release);
	CPU_SET(RELEASE_CPU, &release);
	if (sched_setaffinity(0, sizeof(release), &release))
		err(EXIT_FATAL, "sched_setaffinity");
	run_single(b, sc, &su);
	if (sched_setaffinity(0, sizeof(saved), &saved))
		err(EXIT_FATAL, "sched_setaffinity");
}

void scenario_stuck(struct bench *b, struct scenario *sc)
{
	struct single su = { 0 };

	if (!cg_available(b, sc, true, false))
		return;
	su.freezer = cg_create(b->v1_freezer, CG_FREEZER);
	snprintf(sc->setup, sizeof(sc->setup),
		 "victim of %zu MiB frozen by the cgroup-v1 freezer (%s, freezer.state FROZEN; "
		 "the task shows state D) as a stand-in for uninterruptible sleep",
		 b->bytes / MIB, su.freezer->path);
	sc->available = true;
	run_single(b, sc, &su);
	cg_remove(su.freezer);
}

/* ---- sweep: one stuck victim of growing size ---- */

static const long sweep_mib[] = { 64, 256, 1024, 2048, 0 };
static const long sweep_mib_quick[] = { 16, 64, 0 };

const long *sweep_sizes(const struct bench *b)
{
	return b->opt.quick ? sweep_mib_quick : sweep_mib;
}

/* The floor and mrelease --kill on one frozen victim at each size: how
 * the release scales, in ms per GiB. */
void scenario_sweep(struct bench *b, struct scenario *sc)
{
	const long *sizes = sweep_sizes(b);
	struct method m[2 * 8];
	struct single su = { 0 };
	char id[32], label[48];
	int runs = (int)b->opt.runs, n = 0;

	if (!cg_available(b, sc, true, false))
		return;
	su.freezer = cg_create(b->v1_freezer, CG_FREEZER);
	sc->available = true;
	for (size_t i = 0; sizes[i]; i++) {
		snprintf(id, sizeof(id), "floor_%ld", sizes[i]);
		snprintf(label, sizeof(label), "mr-floor, %ld MiB", sizes[i]);
		m[n] = (struct method){
			series_add(sc, id, label, runs, "mr-floor PID (%ld MiB)", sizes[i]),
			HOW_FLOOR, NULL, runs };
		m[n++].s->x = sizes[i];
		snprintf(id, sizeof(id), "mrelease_%ld", sizes[i]);
		snprintf(label, sizeof(label), "mrelease --kill, %ld MiB", sizes[i]);
		m[n] = (struct method){
			series_add(sc, id, label, runs, "mrelease --json --kill PID (%ld MiB)",
				   sizes[i]),
			HOW_MRELEASE, NULL, runs };
		m[n++].s->x = sizes[i];
	}
	snprintf(sc->setup, sizeof(sc->setup),
		 "one victim frozen by the cgroup-v1 freezer (%s), of %ld MiB up to %ld MiB",
		 su.freezer->path, sizes[0], m[n - 1].s->x);
	meter_open(b, &su.meter);
	for (int run = 0; run < runs; run++)
		for (int i = 0; i < n; i++) {
			su.bytes = (size_t)m[i].s->x * MIB;
			time_method(b, sc, &su, &m[i], run);
		}
	meter_close(&su.meter);
	cg_remove(su.freezer);
}

/* ---- grace: a victim that ignores SIGTERM ---- */

/* mrelease --kill --grace=G on a victim free to run that ignores SIGTERM:
 * it must wait out G, then kill and release; the memory should be back
 * no later than G plus the release time of plain mrelease --kill on the
 * same kind of victim, timed beside it, with the floor. */
void scenario_grace(struct bench *b, struct scenario *sc)
{
	static char grace[32];
	char label[48];
	unsigned int g = b->opt.grace_ms;
	struct single su = { .ignore_term = true, .bytes = b->bytes };
	int runs = (int)b->opt.runs;
	struct method m[3];

	if (!cg_available(b, sc, false, false))
		return;
	snprintf(grace, sizeof(grace), "--grace=%g", g / 1000.0);
	snprintf(label, sizeof(label), "mrelease --kill %s", grace);
	snprintf(sc->setup, sizeof(sc->setup),
		 "one victim of %zu MiB that ignores SIGTERM, not pinned, free to run",
		 b->bytes / MIB);
	sc->available = true;
	m[0] = floor_method(sc, runs);
	m[1] = (struct method){
		series_add(sc, "mrelease", "mrelease --kill", runs, "mrelease --json --kill PID"),
		HOW_MRELEASE, NULL, runs };
	m[2] = (struct method){
		series_add(sc, "grace", label, runs, "mrelease --json --kill %s PID", grace),
		HOW_MRELEASE, grace, runs };
	meter_open(b, &su.meter);
	run_methods(b, sc, &su, m, 3);
	meter_close(&su.meter);
}
