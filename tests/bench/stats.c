/* stats.c: rows of samples and what is made of them: medians, ratios of
 * medians, the straight-line fit of time against victims, and the
 * issue's targets, each judged met or missed on the medians of one run. */
#define _GNU_SOURCE
#include <err.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct series *series_add(struct scenario *sc, const char *id, const char *label, int planned,
			  const char *cmdfmt, ...)
{
	struct series *s;
	va_list ap;

	if (sc->nrows == MAX_ROWS)
		errx(EXIT_FATAL, "%s: more than %d rows", sc->name, MAX_ROWS);
	s = &sc->rows[sc->nrows++];
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->label, sizeof(s->label), "%s", label);
	s->planned = planned;
	s->available = true;
	va_start(ap, cmdfmt);
	vsnprintf(s->command, sizeof(s->command), cmdfmt, ap);
	va_end(ap);
	return s;
}

struct series *series_find(const struct scenario *sc, const char *id)
{
	for (int i = 0; i < sc->nrows; i++)
		if (!strcmp(sc->rows[i].id, id))
			return (struct series *)&sc->rows[i];
	return NULL;
}

/* The row a ratio is taken against: ref ("floor", "pkill_m") in a
 * scenario of one point, "<ref>_<x>" beside a row of x (tiny, sweep). */
const struct series *series_ref(const struct scenario *sc, const char *ref, long x)
{
	char id[32];

	if (!x)
		return series_find(sc, ref);
	snprintf(id, sizeof(id), "%s_%ld", ref, x);
	return series_find(sc, id);
}

void series_unavailable(struct series *s, const char *why)
{
	s->available = false;
	snprintf(s->why, sizeof(s->why), "%s", why);
}

/* One sample; self is mrelease's own report of it, or NULL. */
void record(const struct bench *b, const struct scenario *sc, int run, struct series *s,
	    int64_t us, const struct self_report *self)
{
	char t[32];

	if (s->n == MAX_RUNS)
		errx(EXIT_FATAL, "%s: %s: more than %d samples", sc->name, s->id, MAX_RUNS);
	s->self[s->n] = self ? *self : (struct self_report){ -1, -1, -1, -1, -1 };
	s->has_self |= self != NULL;
	s->us[s->n++] = us;
	fmt_ms(t, sizeof(t), us, b);
	fprintf(stderr, "mr-bench: %-12s run %d/%d  %-36s %s\n", sc->name, run + 1, s->planned,
		s->label, t);
}

void record_failure(const struct scenario *sc, struct series *s, const char *fmt, ...)
{
	char msg[240];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->failed++;
	if (!s->error[0])
		snprintf(s->error, sizeof(s->error), "%s", msg);
	warnx("%s: %s: %s", sc->name, s->label, msg);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The median is the middle sample, the lower middle for an even count: a
 * sample that was measured, never an average of two. */
static int64_t median_of(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_i64);
	return v[(n - 1) / 2];
}

/* min, median, max; a timed-out run sorts last as TIMED_OUT. */
bool series_stats(const struct series *s, struct stats *st)
{
	int64_t v[MAX_RUNS];

	if (!s || !s->available || s->n == 0)
		return false;
	st->n = s->n;
	memcpy(v, s->us, sizeof(v[0]) * (size_t)s->n);
	st->med = median_of(v, s->n);
	st->min = v[0];
	st->max = v[s->n - 1];
	return true;
}

/* One field of mrelease's own reports (offsetof in struct self_report),
 * sorted, over the samples that have it: how many. */
static int self_sorted(const struct series *s, size_t field_offset, int64_t *v)
{
	int n = 0;

	for (int i = 0; s && i < s->n; i++) {
		int64_t x;

		memcpy(&x, (const char *)&s->self[i] + field_offset, sizeof(x));
		if (x >= 0 && s->us[i] != TIMED_OUT)
			v[n++] = x;
	}
	qsort(v, (size_t)n, sizeof(v[0]), cmp_i64);
	return n;
}

/* The median of that field; -1 when no sample has it. */
int64_t self_median(const struct series *s, size_t field_offset)
{
	int64_t v[MAX_RUNS];
	int n = self_sorted(s, field_offset, v);

	return n ? v[(n - 1) / 2] : -1;
}

/* Quartiles, like the median, are samples that were measured: the
 * nearest rank, ceil(p * n). */
struct spread kill_us_spread(const struct series *s)
{
	int64_t v[MAX_RUNS];
	int n = self_sorted(s, offsetof(struct self_report, kill_us), v);

	if (!n)
		return (struct spread){ 0 };
	return (struct spread){ true, v[(n + 3) / 4 - 1], v[(n - 1) / 2], v[(3 * n + 3) / 4 - 1] };
}

struct ratio ratio_of(const struct bench *b, const struct series *num, const struct series *den)
{
	struct stats a, d;
	struct ratio r = { 0 };

	if (!num || !den || !series_stats(num, &a) || !series_stats(den, &d) ||
	    d.med == TIMED_OUT || d.med <= 0)
		return r;
	r.valid = true;
	r.lower_bound = a.med == TIMED_OUT;
	r.v = (double)(r.lower_bound ? b->timeout_us : a.med) / (double)d.med;
	return r;
}

/* Least squares of median time against x over the rows "<prefix>_<x>":
 * the wall time, or with field >= 0 the median of that field (offsetof in
 * struct self_report) of mrelease's own reports. */
struct fit fit_rows_field(const struct scenario *sc, const char *prefix, long field)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n, den;
	size_t len = strlen(prefix);
	struct fit f = { 0 };

	for (int i = 0; i < sc->nrows; i++) {
		const struct series *s = &sc->rows[i];
		struct stats st;

		if (strncmp(s->id, prefix, len) || s->id[len] != '_' || s->x <= 0 ||
		    !series_stats(s, &st) || st.med == TIMED_OUT)
			continue;
		if (field >= 0 && (st.med = self_median(s, (size_t)field)) < 0)
			continue;
		f.points++;
		sx += (double)s->x;
		sy += (double)st.med;
		sxx += (double)s->x * (double)s->x;
		sxy += (double)s->x * (double)st.med;
	}
	n = f.points;
	den = n * sxx - sx * sx;
	if (f.points < 2 || den == 0)
		return f;
	f.valid = true;
	f.per_target_us = (n * sxy - sx * sy) / den;
	f.fixed_us = (sy - f.per_target_us * sx) / n;
	return f;
}

struct fit fit_rows(const struct scenario *sc, const char *prefix)
{
	return fit_rows_field(sc, prefix, -1);
}

/* ---- the targets ---- */

enum goal_kind {
	GOAL_RATIO_MAX,    /* median num / median den at most limit */
	GOAL_AHEAD,        /* median num / median den under 1 */
	GOAL_FIT_MAX,      /* fitted cost per target, num's / den's, at most limit */
	GOAL_KILL_US_SAME, /* killus: medians apart by no more than the wider IQR */
	GOAL_KILL_US_MAX,  /* killus: both medians at most limit ms */
};

struct target_def {
	enum scenario_id sc;
	const char *num, *den; /* row ids; fit prefixes for GOAL_FIT_MAX; unused for killus */
	enum goal_kind kind;
	double limit;
	const char *what, *against, *goal;
};

static const struct target_def target_defs[] = {
	{ SC_STUCK, "mrelease", "floor", GOAL_RATIO_MAX, 1.05,
	  "one 1 GiB stuck victim, mrelease --kill PID", "the floor, mr-floor PID", "<= 1.05x" },
	{ SC_STUCK, "mrelease", "pkill_m", GOAL_AHEAD, 1,
	  "the same", "pkill -m", "< 1x (ahead)" },
	{ SC_FOLLOW, "follow", "floor", GOAL_RATIO_MAX, 1.1,
	  "one 1 GiB stuck victim SIGKILLed, mrelease --follow", "the floor, mr-floor PID",
	  "<= 1.1x" },
	{ SC_MANY, "mrelease", "floor", GOAL_RATIO_MAX, 0.8,
	  "128 x 8 MiB stuck victims, mrelease --kill PID...", "the floor (serial)", "<= 0.8x" },
	{ SC_MANY, "mrelease", "pkill_m", GOAL_AHEAD, 1,
	  "the same", "pkill -m", "< 1x (ahead)" },
	{ SC_TINY, "mrelease", "floor", GOAL_FIT_MAX, 1,
	  "cost per target, 1 MiB stuck victims, fitted over N", "the floor's, fitted alike",
	  "<= 1x" },
	{ SC_CGROUP, "mrelease", "cgroup_kill", GOAL_RATIO_MAX, 1.05,
	  "64 x 16 MiB free-running, mrelease --kill --cgroup", "cgroup.kill + wait", "<= 1.05x" },
	{ SC_STARTUP, "dry_run", "true", GOAL_RATIO_MAX, 2,
	  "--dry-run --kill on a tiny victim, fork to exit", "fork+exec of /bin/true", "<= 2x" },
	{ SC_KILLUS, NULL, NULL, GOAL_KILL_US_SAME, 0,
	  "kill_us, one stuck victim: 4 GiB less 64 MiB", "", "|diff| <= IQR" },
	{ SC_KILLUS, NULL, NULL, GOAL_KILL_US_MAX, 2,
	  "kill_us, one stuck victim: 64 MiB and 4 GiB", "", "both <= 2 ms" },
};

_Static_assert(ARRAY_LEN(target_defs) <= MAX_TARGETS, "MAX_TARGETS too small");

const char *verdict_name(enum verdict v)
{
	return v == V_MET ? "met" : v == V_MISSED ? "missed" : "n/a";
}

/* Why a row gives no figure, for the target's detail. */
static bool row_missing(const struct bench *b, const struct series *s, const char *id,
			struct target *t)
{
	struct stats st;

	if (s && series_stats(s, &st))
		return false;
	if (!strcmp(id, "pkill_m") && !b->pkill.found)
		snprintf(t->detail, sizeof(t->detail), "pkill -m not found");
	else
		snprintf(t->detail, sizeof(t->detail), "no result for %s", s ? s->label : id);
	return true;
}

static void judge_ratio(const struct bench *b, const struct scenario *sc,
			const struct target_def *d, struct target *t)
{
	const struct series *num = series_find(sc, d->num), *den = series_find(sc, d->den);
	struct stats a, c;
	char x[32], y[32];
	struct ratio r;

	if (row_missing(b, num, d->num, t) || row_missing(b, den, d->den, t))
		return;
	r = ratio_of(b, num, den);
	series_stats(num, &a);
	series_stats(den, &c);
	fmt_ms(x, sizeof(x), a.med, b);
	fmt_ms(y, sizeof(y), c.med, b);
	snprintf(t->detail, sizeof(t->detail), "%s against %s", x, y);
	if (!r.valid)
		return;
	t->valid = true;
	t->lower_bound = r.lower_bound;
	t->value = r.v;
	if (d->kind == GOAL_AHEAD)
		t->verdict = !r.lower_bound && r.v < 1 ? V_MET : V_MISSED;
	else
		t->verdict = !r.lower_bound && r.v <= d->limit ? V_MET : V_MISSED;
}

static void judge_fit(const struct scenario *sc, const struct target_def *d, struct target *t)
{
	struct fit num = fit_rows(sc, d->num), den = fit_rows(sc, d->den);

	if (!num.valid || !den.valid || den.per_target_us <= 0) {
		snprintf(t->detail, sizeof(t->detail), "no fit: fewer than two medians");
		return;
	}
	snprintf(t->detail, sizeof(t->detail), "%.4f against %.4f ms per target",
		 num.per_target_us / US_PER_MS, den.per_target_us / US_PER_MS);
	t->valid = true;
	t->value = num.per_target_us / den.per_target_us;
	t->verdict = t->value <= d->limit ? V_MET : V_MISSED;
}

static void judge_kill_us(const struct bench *b, const struct scenario *sc,
			  const struct target_def *d, struct target *t)
{
	long large = killus_large_mib(b);
	struct spread small = kill_us_spread(series_ref(sc, "mrelease", KILLUS_SMALL_MIB));
	struct spread big = kill_us_spread(series_ref(sc, "mrelease", large));

	if (!small.valid || !big.valid) {
		snprintf(t->detail, sizeof(t->detail), "no kill_us from mrelease");
		return;
	}
	t->valid = true;
	t->unit = "ms";
	if (d->kind == GOAL_KILL_US_SAME) {
		/* Noise: the wider interquartile range of the two rows. */
		int64_t iqr = small.q3 - small.q1 > big.q3 - big.q1 ? small.q3 - small.q1
								    : big.q3 - big.q1;

		t->value = (double)(big.med - small.med) / US_PER_MS;
		snprintf(t->detail, sizeof(t->detail),
			 "median %.3f ms at %ld MiB, %.3f ms at 64 MiB; noise (IQR) %.3f ms",
			 (double)big.med / US_PER_MS, large, (double)small.med / US_PER_MS,
			 (double)iqr / US_PER_MS);
		t->verdict = llabs(big.med - small.med) <= iqr ? V_MET : V_MISSED;
	} else {
		int64_t worst = big.med > small.med ? big.med : small.med;

		t->value = (double)worst / US_PER_MS;
		snprintf(t->detail, sizeof(t->detail), "the larger median: 64 MiB %.3f ms, "
			 "%ld MiB %.3f ms", (double)small.med / US_PER_MS, large,
			 (double)big.med / US_PER_MS);
		t->verdict = t->value <= d->limit ? V_MET : V_MISSED;
	}
}

static void judge(const struct bench *b, const struct target_def *d, struct target *t)
{
	const struct scenario *sc = &b->sc[d->sc];

	*t = (struct target){ .what = d->what, .against = d->against, .goal = d->goal,
			      .unit = "x", .verdict = V_NA };
	if (!sc->ran || !sc->available) {
		snprintf(t->detail, sizeof(t->detail), "%s: %s", sc->name,
			 sc->ran ? "not available" : "not run");
		return;
	}
	switch (d->kind) {
	case GOAL_RATIO_MAX:
	case GOAL_AHEAD:
		judge_ratio(b, sc, d, t);
		break;
	case GOAL_FIT_MAX:
		judge_fit(sc, d, t);
		break;
	case GOAL_KILL_US_SAME:
	case GOAL_KILL_US_MAX:
		judge_kill_us(b, sc, d, t);
		break;
	}
}

int collect_targets(const struct bench *b, struct target *t)
{
	for (size_t i = 0; i < ARRAY_LEN(target_defs); i++)
		judge(b, &target_defs[i], &t[i]);
	return (int)ARRAY_LEN(target_defs);
}
