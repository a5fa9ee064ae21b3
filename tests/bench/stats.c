/* stats.c: rows of samples and what is made of them: medians, ratios of
 * medians, the straight-line fit of time against victims, and the
 * issue's targets, each judged MET or MISSED on the medians of one run. */
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
	s->self[s->n] = self ? *self : (struct self_report){ -1, -1, -1, -1 };
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

/* The median of one field of mrelease's own reports (offsetof in struct
 * self_report) over the samples that have it; -1 when none does. */
int64_t self_median(const struct series *s, size_t field_offset)
{
	int64_t v[MAX_RUNS];
	int n = 0;

	for (int i = 0; s && i < s->n; i++) {
		int64_t x;

		memcpy(&x, (const char *)&s->self[i] + field_offset, sizeof(x));
		if (x >= 0 && s->us[i] != TIMED_OUT)
			v[n++] = x;
	}
	return n ? median_of(v, n) : -1;
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
	GOAL_RATIO_MAX,   /* num / den at most limit */
	GOAL_SPEEDUP_MIN, /* den / num at least limit */
	GOAL_COST_MAX,    /* the fitted cost per target of num, at most limit ms */
};

struct target_def {
	enum scenario_id sc;
	const char *num, *den; /* row ids; num a fit prefix for GOAL_COST_MAX */
	enum goal_kind kind;
	double limit;
	const char *what, *against, *goal;
};

static const struct target_def target_defs[MAX_TARGETS] = {
	{ SC_STUCK, "mrelease", "limit", GOAL_RATIO_MAX, 1.15,
	  "one 1 GiB stuck victim, default measure", "munmap of 1 GiB in one process", "<= 1.15x" },
	{ SC_STUCK, "mrelease_status", "limit", GOAL_RATIO_MAX, 1.05,
	  "the same, --measure=status", "munmap of 1 GiB", "<= 1.05x" },
	{ SC_CGSTUCK, "jobs2", "jobs1", GOAL_SPEEDUP_MIN, 1.8,
	  "64 x 16 MiB stuck victims, --jobs 2", "--jobs 1", ">= 1.8x faster" },
	{ SC_TINY, "mrelease", NULL, GOAL_COST_MAX, 0.08,
	  "cost per target, fitted over 1-512 tiny stuck victims",
	  "0.187 ms (pkill -m, measured elsewhere)", "<= 0.08 ms" },
	{ SC_STARTUP, "dry_run", "true", GOAL_RATIO_MAX, 2.5,
	  "--dry-run on a tiny victim, fork, exec and exit included", "/bin/true", "<= 2.5x" },
	{ SC_CGROUP, "mrelease_status", "cgroup_kill", GOAL_RATIO_MAX, 1.05,
	  "64 x 16 MiB free-running in one cgroup, --measure=status",
	  "cgroup.kill + wait until memory is back", "<= 1.05x" },
	{ SC_CGROUP, "mrelease", "cgroup_kill", GOAL_RATIO_MAX, 1.2,
	  "the same, default measure", "cgroup.kill + wait until memory is back", "<= 1.2x" },
	{ SC_IDLE, "mrelease_status", "kill", GOAL_RATIO_MAX, 1.05,
	  "one free-running victim, --measure=status", "kill -9 + wait", "<= 1.05x" },
};

const char *verdict_name(enum verdict v)
{
	return v == V_MET ? "MET" : v == V_MISSED ? "MISSED" : "n/a";
}

static void judge(const struct bench *b, const struct target_def *d, struct target *t)
{
	const struct scenario *sc = &b->sc[d->sc];
	const struct series *num = series_find(sc, d->num);
	const struct series *den = d->den ? series_find(sc, d->den) : NULL;
	struct ratio r = { 0 };
	struct fit f;

	*t = (struct target){ .what = d->what, .against = d->against, .goal = d->goal,
			      .unit = "x", .verdict = V_NA };
	if (!sc->ran || !sc->available)
		return;
	switch (d->kind) {
	case GOAL_COST_MAX:
		f = fit_rows(sc, d->num);
		if (!f.valid)
			return;
		t->unit = "ms";
		t->valid = true;
		t->value = f.per_target_us / (double)US_PER_MS;
		t->ratio = t->value / PKILL_REFERENCE_MS;
		t->verdict = t->value <= d->limit ? V_MET : V_MISSED;
		return;
	case GOAL_RATIO_MAX:
		r = ratio_of(b, num, den);
		if (!r.valid)
			return;
		t->verdict = !r.lower_bound && r.v <= d->limit ? V_MET : V_MISSED;
		break;
	case GOAL_SPEEDUP_MIN:
		r = ratio_of(b, den, num);
		if (!r.valid)
			return;
		/* A timed-out --jobs 1 is a lower bound: enough if it reaches. */
		t->verdict = r.v >= d->limit ? V_MET : r.lower_bound ? V_NA : V_MISSED;
		break;
	}
	t->valid = true;
	t->lower_bound = r.lower_bound;
	t->value = t->ratio = r.v;
}

int collect_targets(const struct bench *b, struct target *t)
{
	for (size_t i = 0; i < ARRAY_LEN(target_defs); i++)
		judge(b, &target_defs[i], &t[i]);
	return (int)ARRAY_LEN(target_defs);
}
