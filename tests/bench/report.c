/* report.c: the results as a table on stdout and as a JSON file.  One
 * column table drives the main rows of both; JSON carries raw integers in
 * microseconds and null for what was not measured, the table humanizes
 * them.  Progress and diagnostics go to stderr, never here. */
#define _GNU_SOURCE
#include <err.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"

void fmt_ms(char *buf, size_t len, int64_t us, const struct bench *b)
{
	if (us == TIMED_OUT)
		snprintf(buf, len, "> %g s", (double)b->timeout_us / US_PER_S);
	else if (us < 0)
		snprintf(buf, len, "-");
	else if (us < US_PER_MS)
		snprintf(buf, len, "%.3f ms", (double)us / US_PER_MS);
	else if (us < 10 * US_PER_MS)
		snprintf(buf, len, "%.2f ms", (double)us / US_PER_MS);
	else
		snprintf(buf, len, "%.1f ms", (double)us / US_PER_MS);
}

/* The 1, 5 and 15 minute load averages, for the header. */
void read_load(char *buf, size_t len)
{
	char raw[128];
	double l1, l5, l15;

	if (mr_read_file("/proc/loadavg", raw, sizeof(raw)) > 0 &&
	    sscanf(raw, "%lf %lf %lf", &l1, &l5, &l15) == 3)
		snprintf(buf, len, "%.2f %.2f %.2f", l1, l5, l15);
	else
		snprintf(buf, len, "?");
}

static bool shown(const struct scenario *sc)
{
	return sc->ran && sc->available;
}

/* ---- the rows: one column table for the text and the JSON ---- */

/* COL_COUNT: "done/planned" in the table, the number done in JSON.
 * COL_RATIO: the row's median over a reference row's, "> " where the row
 * timed out. */
enum col_type { COL_STR, COL_COUNT, COL_US, COL_RATIO };

struct column {
	const char *key;    /* JSON key */
	const char *header; /* table header */
	int width;          /* negative: left-aligned */
	enum col_type type;
};

enum col_id {
	C_SCENARIO, C_METHOD, C_RUNS, C_MIN, C_MEDIAN, C_MAX, C_KILL, C_XFLOOR, C_XPKILL, NCOLS
};

static const struct column columns[NCOLS] = {
	[C_SCENARIO] = { "scenario", "SCENARIO", -12, COL_STR },
	[C_METHOD] = { "label", "METHOD", -36, COL_STR },
	[C_RUNS] = { "runs", "RUNS", 6, COL_COUNT },
	[C_MIN] = { "min_us", "MIN", 11, COL_US },
	[C_MEDIAN] = { "median_us", "MEDIAN", 11, COL_US },
	[C_MAX] = { "max_us", "MAX", 11, COL_US },
	/* mrelease's own kill_us: from its start to its last SIGKILL. */
	[C_KILL] = { "kill_us_median", "KILL_US", 11, COL_US },
	[C_XFLOOR] = { "vs_floor", "/FLOOR", 8, COL_RATIO },
	[C_XPKILL] = { "vs_pkill_m", "/PKILL-M", 8, COL_RATIO },
};

/* A cell: a string, a number (-1: null) or a ratio. */
struct cell {
	const char *str;
	int64_t num;
	struct ratio ratio;
	char buf[64];
};

static void get_cell(const struct bench *b, const struct scenario *sc, const struct series *s,
		     enum col_id c, struct cell *v)
{
	struct stats st;
	bool have = series_stats(s, &st);

	v->str = NULL;
	v->num = -1;
	v->ratio = (struct ratio){ 0 };
	switch (c) {
	case C_SCENARIO: v->str = sc->name; break;
	case C_METHOD: v->str = s->label; break;
	case C_RUNS:
		snprintf(v->buf, sizeof(v->buf), "%d/%d", s->n, s->planned);
		v->str = v->buf;
		v->num = s->n;
		break;
	case C_MIN: v->num = have ? st.min : -1; break;
	case C_MEDIAN: v->num = have ? st.med : -1; break;
	case C_MAX: v->num = have ? st.max : -1; break;
	case C_KILL:
		v->num = s->has_self ? self_median(s, offsetof(struct self_report, kill_us)) : -1;
		break;
	case C_XFLOOR:
		v->ratio = ratio_of(b, s, series_ref(sc, "floor", s->x));
		break;
	case C_XPKILL:
		v->ratio = ratio_of(b, s, series_ref(sc, "pkill_m", s->x));
		break;
	case NCOLS: break;
	}
}

static void print_cell(const struct bench *b, FILE *f, enum col_id c, const struct cell *v)
{
	const struct column *col = &columns[c];
	char t[32] = "-";

	if (col->type == COL_US)
		fmt_ms(t, sizeof(t), v->num, b);
	else if (col->type == COL_RATIO && v->ratio.valid)
		snprintf(t, sizeof(t), "%s%.*f", v->ratio.lower_bound ? ">" : "",
			 v->ratio.v < 100 ? 2 : 0, v->ratio.v);
	fprintf(f, "%s%*s", c ? " " : "", col->width,
		col->type == COL_STR || col->type == COL_COUNT ? v->str : t);
}

static void json_cell(FILE *f, enum col_id c, const struct cell *v)
{
	fprintf(f, ",\"%s\":", columns[c].key);
	if (columns[c].type == COL_STR)
		mr_json_string(f, v->str ? v->str : "");
	else if (columns[c].type == COL_COUNT)
		fprintf(f, "%" PRId64, v->num);
	/* A lower bound is no ratio; the samples say the row timed out. */
	else if (columns[c].type == COL_RATIO && v->ratio.valid && !v->ratio.lower_bound)
		fprintf(f, "%.4f", v->ratio.v);
	else if (columns[c].type == COL_RATIO || v->num < 0 || v->num == TIMED_OUT)
		fputs("null", f);
	else
		fprintf(f, "%" PRId64, v->num);
}

static void print_row(const struct bench *b, FILE *f, const struct scenario *sc,
		      const struct series *s)
{
	struct cell v;

	if (!s->available) {
		fprintf(f, "%-12s %-36s not available: %s\n", sc->name, s->label, s->why);
		return;
	}
	if (s->n == 0) {
		fprintf(f, "%-12s %-36s %4d/%d  %s\n", sc->name, s->label, 0, s->planned,
			s->error[0] ? s->error : "no result");
		return;
	}
	for (int c = 0; c < NCOLS; c++) {
		get_cell(b, sc, s, c, &v);
		print_cell(b, f, c, &v);
	}
	fputc('\n', f);
}

static void print_rows(const struct bench *b, FILE *f)
{
	for (int c = 0; c < NCOLS; c++)
		fprintf(f, "%s%*s", c ? " " : "", columns[c].width, columns[c].header);
	fputc('\n', f);
	for (int i = 0; i < NSCENARIOS; i++) {
		const struct scenario *sc = &b->sc[i];

		if (!sc->ran)
			continue;
		if (!sc->available) {
			fprintf(f, "%-12s not available: %s\n", sc->name, sc->why);
			continue;
		}
		for (int r = 0; r < sc->nrows; r++)
			print_row(b, f, sc, &sc->rows[r]);
	}
	fprintf(f, "(KILL_US: mrelease's own kill_us, from its start to its last SIGKILL; /FLOOR "
		   "and /PKILL-M: this\n row's median over the median of the floor, or of pkill -m, "
		   "on the same victims in the\n same runs; \">\" where this row timed out)\n");
}

/* ---- the text report ---- */

static void print_header(const struct bench *b, FILE *f)
{
	struct utsname u;
	char thp[128] = "?", mem[8192];
	const char *p;
	long total = 0;

	uname(&u);
	if (mr_read_file("/proc/meminfo", mem, sizeof(mem)) > 0 && (p = strstr(mem, "MemTotal:")))
		total = strtol(p + strlen("MemTotal:"), NULL, 10);
	if (mr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp)) > 0) {
		char *l = strchr(thp, '['), *r = l ? strchr(l, ']') : NULL;

		if (l && r) {
			*r = '\0';
			memmove(thp, l + 1, strlen(l + 1) + 1);
		}
	}
	fprintf(f, "mrelease benchmark%s\n",
		b->opt.quick ? " (--quick smoke run: numbers are not meaningful)" : "");
	fprintf(f, "  mrelease   %s (%s)\n", b->opt.mrelease, b->version);
	fprintf(f, "  floor      %s (pidfd_open, SIGKILL, process_mrelease; one pid after another)\n",
		b->floor);
	if (b->pkill.found)
		fprintf(f, "  pkill -m   %s (%s)\n", b->pkill.path, b->pkill.version);
	else
		fprintf(f, "  pkill -m   not found: %s\n", b->pkill.why);
	fprintf(f, "  machine    %ld CPUs, Linux %s, MemTotal %.1f GiB, THP %s\n",
		sysconf(_SC_NPROCESSORS_ONLN), u.release, (double)total / 1048576.0, thp);
	fprintf(f, "  load       load average (1, 5, 15 min) %s at start, %s at end\n",
		b->load_start, b->load_end);
	fprintf(f, "  settings   S = %ld MiB, runs = %ld, kill runs where SIGKILL cannot free = %ld, "
		   "timeout = %g s, overhead runs = %ld\n",
		b->opt.size_mib, b->opt.runs, b->opt.kill_runs, (double)b->timeout_us / US_PER_S,
		b->opt.overhead_runs);
	fprintf(f, "  victims    forked by mr-bench: mmap (MAP_POPULATE) and write every page of private\n"
		   "             anonymous memory, report ready on a pipe, pause; fresh ones for every run\n");
	fprintf(f, "  timed      from just before the first act (SIGKILL, cgroup.kill, the fork of mr-floor,\n"
		   "             mrelease or pkill) until the act is over (victim, tool exited; cgroup empty)\n"
		   "             and the anonymous RSS (memory.stat total_rss) of a cgroup-v1 memory cgroup\n"
		   "             that the victims joined (%s/mr-bench.*) is under 1%% of what they\n"
		   "             touched; the methods take turns within each run\n",
		b->v1_memory[0] ? b->v1_memory : "(none here)");
	if (b->opt.runs < 5)
		fprintf(f, "  note       fewer than 5 runs: min/median/max are not a real table\n");
}

static void print_setup(const struct bench *b, FILE *f)
{
	fprintf(f, "\nSetup\n");
	for (int i = 0; i < NSCENARIOS; i++)
		if (shown(&b->sc[i]))
			fprintf(f, "  %-12s %s\n", b->sc[i].name, b->sc[i].setup);
	fprintf(f, "\nCommands\n");
	for (int i = 0; i < NSCENARIOS; i++)
		for (int r = 0; shown(&b->sc[i]) && r < b->sc[i].nrows; r++)
			fprintf(f, "  %-12s %-36s %s\n", b->sc[i].name, b->sc[i].rows[r].label,
				b->sc[i].rows[r].command);
}

/* Per sample: wall time less mrelease's kill_us and elapsed_us, which
 * leaves exec, start-up before main(), the report, exit, and mr-bench's
 * wait for the meter. */
static int64_t rest_median(const struct series *s)
{
	struct series t = *s;
	struct stats st;
	int n = 0;

	for (int i = 0; i < s->n; i++) {
		const struct self_report *x = &s->self[i];

		if (s->us[i] == TIMED_OUT || x->kill_us < 0 || x->elapsed_us < 0)
			continue;
		t.us[n++] = s->us[i] - x->kill_us - x->elapsed_us;
	}
	t.n = n;
	return series_stats(&t, &st) ? st.med : -1;
}

static void print_time_split(const struct bench *b, FILE *f)
{
	char w[32], k[32], e[32], r[32], rest[32];

	fprintf(f, "\nWhere mrelease's time goes (medians; from its --json)\n");
	fprintf(f, "  %-12s %-36s %10s %10s %10s %10s %10s\n", "", "", "wall", "to kill",
		"kill->end", "release", "other");
	for (int i = 0; i < NSCENARIOS; i++) {
		const struct scenario *sc = &b->sc[i];

		for (int j = 0; shown(sc) && j < sc->nrows; j++) {
			const struct series *s = &sc->rows[j];
			struct stats st;

			if (!s->has_self || !series_stats(s, &st))
				continue;
			fmt_ms(w, sizeof(w), st.med, b);
			fmt_ms(k, sizeof(k), self_median(s, offsetof(struct self_report, kill_us)), b);
			fmt_ms(e, sizeof(e), self_median(s, offsetof(struct self_report, elapsed_us)),
			       b);
			fmt_ms(r, sizeof(r), self_median(s, offsetof(struct self_report, release_us)),
			       b);
			fmt_ms(rest, sizeof(rest), rest_median(s), b);
			fprintf(f, "  %-12s %-36s %10s %10s %10s %10s %10s\n", sc->name, s->label, w, k,
				e, r, rest);
		}
	}
	fprintf(f, "  (to kill: kill_us, start to last SIGKILL; kill->end: elapsed_us, first signal to\n"
		   "  the end of the releases; release: the slowest target's release_us; other: wall\n"
		   "  less both: fork, exec, start-up before main(), report, exit, and the meter's wait,\n"
		   "  which for a victim free to run is its own exit; \"-\" where the two overlap: with\n"
		   "  --grace the first signal is the SIGTERM, with cgroup.kill the write itself, in\n"
		   "  batches every batch's kills lie between the first signal and the last SIGKILL;\n"
		   "  --follow sends no signal, and its release is the victim's \"release\" line)\n");
}

/* ---- tiny: the fitted cost per target ---- */

static const struct {
	const char *prefix, *label;
} fit_tools[] = {
	{ "floor", "mr-floor" }, { "mrelease", "mrelease --kill" }, { "pkill_m", "pkill -m" },
};

/* mrelease's own clock splits its cost per target at the SIGKILL. */
static void print_fit_split(const struct scenario *sc, FILE *f)
{
	struct fit k = fit_rows_field(sc, "mrelease", (long)offsetof(struct self_report, kill_us));
	struct fit e = fit_rows_field(sc, "mrelease",
				      (long)offsetof(struct self_report, elapsed_us));

	if (k.valid && e.valid)
		fprintf(f, "  %-16s of which %.4f ms before the kill (kill_us), %.4f ms from the "
			   "first signal to the end (elapsed_us)\n", "",
			k.per_target_us / US_PER_MS, e.per_target_us / US_PER_MS);
}

/* The plain division at the largest N: fixed costs spread over N. */
static void print_divided(const struct bench *b, const struct scenario *sc, FILE *f)
{
	const long *counts = tiny_counts(b);
	long n = 0;

	while (counts[n + 1])
		n++;
	fprintf(f, "  divided at N = %ld (median / N, fixed cost included):", counts[n]);
	for (size_t t = 0; t < ARRAY_LEN(fit_tools); t++) {
		struct stats st;

		if (series_stats(series_ref(sc, fit_tools[t].prefix, counts[n]), &st) &&
		    st.med != TIMED_OUT)
			fprintf(f, " %s %.4f ms;", fit_tools[t].label,
				(double)st.med / US_PER_MS / (double)counts[n]);
	}
	fputc('\n', f);
}

static void print_fits(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_TINY];
	struct fit fits[ARRAY_LEN(fit_tools)];

	if (!shown(sc))
		return;
	fprintf(f, "\nCost per target (tiny: T = fixed + per_target x N, least squares over the "
		   "medians)\n");
	for (size_t t = 0; t < ARRAY_LEN(fit_tools); t++) {
		fits[t] = fit_rows(sc, fit_tools[t].prefix);
		if (!fits[t].valid) {
			fprintf(f, "  %-16s no fit: fewer than two medians\n", fit_tools[t].label);
			continue;
		}
		fprintf(f, "  %-16s fixed %7.2f ms, per target %.4f ms (%d points)\n",
			fit_tools[t].label, fits[t].fixed_us / US_PER_MS,
			fits[t].per_target_us / US_PER_MS, fits[t].points);
		if (!strcmp(fit_tools[t].prefix, "mrelease"))
			print_fit_split(sc, f);
	}
	for (size_t t = 0; t < ARRAY_LEN(fit_tools); t += 2)
		if (fits[1].valid && fits[t].valid && fits[t].per_target_us > 0)
			fprintf(f, "  per target, mrelease / %s: %.2f\n", fit_tools[t].label,
				fits[1].per_target_us / fits[t].per_target_us);
	print_divided(b, sc, f);
}

/* ---- sweep: ms per GiB ---- */

static double ms_per_gib(int64_t us, long mib)
{
	return (double)us / US_PER_MS * 1024.0 / (double)mib;
}

/* The medians of mrelease and of the floor at one size; false if either
 * is missing or timed out. */
static bool sweep_point(const struct scenario *sc, long mib, struct stats *m, struct stats *l)
{
	return series_stats(series_ref(sc, "mrelease", mib), m) &&
	       series_stats(series_ref(sc, "floor", mib), l) && m->med != TIMED_OUT &&
	       l->med != TIMED_OUT;
}

static void print_sweep(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_SWEEP];
	const long *sizes = sweep_sizes(b);
	struct fit fm, fl;

	if (!shown(sc))
		return;
	fprintf(f, "\nSize sweep (one stuck victim; medians)\n");
	fprintf(f, "  %8s %12s %10s %12s %10s %8s\n", "MiB", "mrelease", "ms/GiB", "floor",
		"ms/GiB", "ratio");
	for (size_t i = 0; sizes[i]; i++) {
		struct stats m, l;

		if (!sweep_point(sc, sizes[i], &m, &l)) {
			fprintf(f, "  %8ld  n/a\n", sizes[i]);
			continue;
		}
		fprintf(f, "  %8ld %9.1f ms %10.1f %9.1f ms %10.1f %8.2f\n", sizes[i],
			(double)m.med / US_PER_MS, ms_per_gib(m.med, sizes[i]),
			(double)l.med / US_PER_MS, ms_per_gib(l.med, sizes[i]),
			(double)m.med / (double)l.med);
	}
	fm = fit_rows(sc, "mrelease");
	fl = fit_rows(sc, "floor");
	if (fm.valid && fl.valid)
		fprintf(f, "  fitted: mrelease %.1f ms/GiB %+.2f ms, floor %.1f ms/GiB %+.2f ms\n",
			fm.per_target_us * 1024 / US_PER_MS, fm.fixed_us / US_PER_MS,
			fl.per_target_us * 1024 / US_PER_MS, fl.fixed_us / US_PER_MS);
}

/* ---- killus: kill_us against the victim's size ---- */

static void print_killus(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_KILLUS];
	const long mib[] = { KILLUS_SMALL_MIB, killus_large_mib(b) };

	if (!shown(sc))
		return;
	fprintf(f, "\nkill_us against size (killus; one stuck victim, default options)\n");
	for (size_t i = 0; i < ARRAY_LEN(mib); i++) {
		struct spread k = kill_us_spread(series_ref(sc, "mrelease", mib[i]));

		if (k.valid)
			fprintf(f, "  %5ld MiB  kill_us median %.3f ms, quartiles %.3f..%.3f ms\n",
				mib[i], (double)k.med / US_PER_MS, (double)k.q1 / US_PER_MS,
				(double)k.q3 / US_PER_MS);
		else
			fprintf(f, "  %5ld MiB  no kill_us\n", mib[i]);
	}
}

static int64_t row_median(const struct scenario *sc, const char *id)
{
	struct stats st;

	return series_stats(series_find(sc, id), &st) && st.med != TIMED_OUT ? st.med : -1;
}

/* ---- grace: back within G plus the release? ---- */

struct grace_result {
	bool valid, held;
	int64_t median_us, release_us, bound_us;
};

static struct grace_result grace_result(const struct bench *b)
{
	const struct scenario *sc = &b->sc[SC_GRACE];
	struct grace_result g = { 0 };

	if (!shown(sc))
		return g;
	g.median_us = row_median(sc, "grace");
	g.release_us = row_median(sc, "mrelease");
	if (g.median_us < 0 || g.release_us < 0)
		return g;
	g.valid = true;
	g.bound_us = (int64_t)b->opt.grace_ms * US_PER_MS + g.release_us;
	g.held = g.median_us <= g.bound_us;
	return g;
}

static void print_grace(const struct bench *b, FILE *f)
{
	struct grace_result g = grace_result(b);
	char m[32], r[32], bound[32], d[32];

	if (!g.valid)
		return;
	fmt_ms(m, sizeof(m), g.median_us, b);
	fmt_ms(r, sizeof(r), g.release_us, b);
	fmt_ms(bound, sizeof(bound), g.bound_us, b);
	fmt_ms(d, sizeof(d), g.held ? g.bound_us - g.median_us : g.median_us - g.bound_us, b);
	fprintf(f, "\n--grace (grace; medians)\n");
	fprintf(f, "  memory back after %s with --grace=%g; G + release = %g s + %s = %s: %s (%s %s)\n",
		m, b->opt.grace_ms / 1000.0, b->opt.grace_ms / 1000.0, r, bound,
		g.held ? "held" : "did not hold", d, g.held ? "to spare" : "over");
}

/* ---- batches: what a batch costs ---- */

/* The medians of the two rows and of their JSON's batches (the most one
 * phase went through); the cost of a batch is the difference of the
 * medians over the difference of batches. */
struct batches_result {
	bool valid;
	int64_t unlimited_us, limited_us;
	int64_t batches_unlimited, batches_limited;
	double ratio, per_batch_us;
};

static struct batches_result batches_result(const struct bench *b)
{
	const struct scenario *sc = &b->sc[SC_BATCHES];
	const size_t off = offsetof(struct self_report, batches);
	struct batches_result w = { 0 };

	if (!shown(sc))
		return w;
	w.unlimited_us = row_median(sc, "mrelease");
	w.limited_us = row_median(sc, "limited");
	w.batches_unlimited = self_median(series_find(sc, "mrelease"), off);
	w.batches_limited = self_median(series_find(sc, "limited"), off);
	if (w.unlimited_us <= 0 || w.limited_us < 0 || w.batches_unlimited < 1 ||
	    w.batches_limited <= w.batches_unlimited)
		return w;
	w.valid = true;
	w.ratio = (double)w.limited_us / (double)w.unlimited_us;
	w.per_batch_us = (double)(w.limited_us - w.unlimited_us) /
			 (double)(w.batches_limited - w.batches_unlimited);
	return w;
}

static void print_batches(const struct bench *b, FILE *f)
{
	struct batches_result w = batches_result(b);
	char u[32], l[32];

	if (!shown(&b->sc[SC_BATCHES]))
		return;
	fprintf(f, "\nBatches (batches; %ld stuck victims of 1 MiB, pids on stdin; medians)\n",
		batches_victims(b));
	if (!w.valid) {
		fprintf(f, "  n/a: a row has no median, timed out, or went in no more batches than the "
			   "other\n");
		return;
	}
	fmt_ms(u, sizeof(u), w.unlimited_us, b);
	fmt_ms(l, sizeof(l), w.limited_us, b);
	fprintf(f, "  mrelease --kill -                    %10s in %" PRId64 " batch%s\n", u,
		w.batches_unlimited, w.batches_unlimited == 1 ? "" : "es");
	fprintf(f, "  the same under RLIMIT_NOFILE %-7ld %10s in %" PRId64 " batches\n",
		BATCHES_NOFILE, l, w.batches_limited);
	fprintf(f, "  limited / unlimited %.2f; a batch costs %+.3f ms (the difference of the "
		   "medians over %" PRId64 " more\n  batches; batches: the most one phase went "
		   "through)\n", w.ratio, w.per_batch_us / US_PER_MS,
		w.batches_limited - w.batches_unlimited);
}

/* ---- oom: mrelease --follow against the kernel's oom_reaper ---- */

static void print_oom(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_OOM];
	int64_t reaper = row_median(sc, "reaper"), follow = row_median(sc, "follow");
	char r[32], m[32];

	if (!shown(sc))
		return;
	fprintf(f, "\nOOM kill (oom; one stuck victim of %zu MiB; medians from the OOM kill)\n",
		b->bytes / MIB);
	if (reaper <= 0 || follow <= 0) {
		fprintf(f, "  n/a: a row has no median, or timed out\n");
		return;
	}
	fmt_ms(r, sizeof(r), reaper, b);
	fmt_ms(m, sizeof(m), follow, b);
	fprintf(f, "  memory back after %s with mrelease --follow running, %s with the kernel's "
		   "oom_reaper\n  alone (OOM_REAPER_DELAY 2 s, then its reap): %.1fx sooner\n", m, r,
		(double)reaper / (double)follow);
}

/* ---- protect: oom_score_adj and mlockall at start ---- */

static void print_protect(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_PROTECT];
	int64_t both = row_median(sc, "both");
	int64_t start = row_median(&b->sc[SC_STARTUP], "dry_run");
	char m[32], w[32], t[32];

	if (!shown(sc) || both < 0)
		return;
	fmt_ms(m, sizeof(m), row_median(sc, "mlockall"), b);
	fmt_ms(w, sizeof(w), row_median(sc, "oom_score_adj"), b);
	fmt_ms(t, sizeof(t), both, b);
	fprintf(f, "\nSelf-protection at start (protect; medians under strace -T)\n");
	fprintf(f, "  mlockall %s, oom_score_adj write %s; both %s per start (the median of each "
		   "run's sum)", m, w, t);
	if (shown(&b->sc[SC_STARTUP]) && start > 0)
		fprintf(f, ",\n  %.1f %% of a whole --dry-run (startup)", 100.0 * (double)both /
			(double)start);
	fprintf(f, "\n  (%s)\n", series_find(sc, "both")->note);
}

static void print_overhead(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_OVERHEAD];
	const struct series *none = series_find(sc, "measure_none");
	static const char *const modes[] = { "smaps", "status" };
	struct stats sn;

	if (!shown(sc) || !series_stats(none, &sn) || sn.med == TIMED_OUT)
		return;
	fprintf(f, "\nMeasure cost (overhead; medians against --measure=none, %zu MiB victim)\n",
		b->bytes / MIB);
	for (size_t m = 0; m < ARRAY_LEN(modes); m++) {
		char id[32], d[32];
		struct stats st;

		snprintf(id, sizeof(id), "measure_%s", modes[m]);
		if (!series_stats(series_find(sc, id), &st) || st.med == TIMED_OUT)
			continue;
		fmt_ms(d, sizeof(d), st.med > sn.med ? st.med - sn.med : 0, b);
		fprintf(f, "  --measure=%-7s costs %s more\n", modes[m], d);
	}
}

static void fmt_target(char *buf, size_t len, const struct target *t)
{
	if (!t->valid)
		snprintf(buf, len, "n/a");
	else if (!strcmp(t->unit, "ms"))
		snprintf(buf, len, "%.3f ms", t->value);
	else
		snprintf(buf, len, "%s%.2fx", t->lower_bound ? "> " : "", t->value);
}

static void print_targets(const struct bench *b, FILE *f)
{
	struct target t[MAX_TARGETS];
	int nt = collect_targets(b, t);
	char v[48];

	fprintf(f, "\nTargets (medians of this run)\n");
	fprintf(f, "  %-52s %-26s %-9s %-14s %-6s %s\n", "case", "compared with", "value", "goal",
		"result", "from");
	for (int i = 0; i < nt; i++) {
		fmt_target(v, sizeof(v), &t[i]);
		fprintf(f, "  %-52s %-26s %-9s %-14s %-6s %s\n", t[i].what, t[i].against, v,
			t[i].goal, verdict_name(t[i].verdict), t[i].detail);
	}
	if (b->opt.size_mib != 1024 || b->opt.quick)
		fprintf(f, "  (the cases are stated for S = 1024 MiB and a 4 GiB killus victim; this "
			   "run used S = %ld MiB and %ld MiB)\n", b->opt.size_mib,
			killus_large_mib(b));
}

static void print_notes(const struct bench *b, FILE *f)
{
	fprintf(f, "\nNotes\n");
	fprintf(f, "  median is the middle run (the lower middle for an even count); \"> %g s\" is a\n"
		   "  run stopped by --timeout, whose victims were then cleaned up\n",
		(double)b->timeout_us / US_PER_S);
	for (int i = 0; i < NSCENARIOS; i++)
		for (int r = 0; b->sc[i].ran && r < b->sc[i].nrows; r++) {
			const struct series *s = &b->sc[i].rows[r];

			if (s->failed)
				fprintf(f, "  %s %s: %d failed runs, first: %s\n", b->sc[i].name,
					s->label, s->failed, s->error);
			if (s->note[0])
				fprintf(f, "  %s %s: %s\n", b->sc[i].name, s->label, s->note);
		}
	fprintf(f, "  the benchmark took %.0f s\n", (double)(mr_now_us() - b->started) / US_PER_S);
}

void report_text(const struct bench *b, FILE *f)
{
	print_header(b, f);
	fputc('\n', f);
	print_rows(b, f);
	print_setup(b, f);
	print_time_split(b, f);
	print_fits(b, f);
	print_batches(b, f);
	print_sweep(b, f);
	print_killus(b, f);
	print_grace(b, f);
	print_oom(b, f);
	print_protect(b, f);
	print_overhead(b, f);
	print_targets(b, f);
	print_notes(b, f);
}

/* ---- JSON ---- */

static void json_us(FILE *f, int64_t us)
{
	if (us < 0 || us == TIMED_OUT)
		fputs("null", f);
	else
		fprintf(f, "%" PRId64, us);
}

static void json_key_str(FILE *f, const char *key, const char *s)
{
	fprintf(f, ",\"%s\":", key);
	mr_json_string(f, s);
}

static void json_self(FILE *f, const struct series *s, const char *key, size_t off)
{
	fprintf(f, ",\"%s\":[", key);
	for (int i = 0; i < s->n; i++) {
		int64_t x;

		memcpy(&x, (const char *)&s->self[i] + off, sizeof(x));
		fputs(i ? "," : "", f);
		json_us(f, x);
	}
	fputc(']', f);
}

static void json_row(const struct bench *b, FILE *f, const struct scenario *sc,
		     const struct series *s)
{
	int timeouts = 0;
	struct cell v;

	fputs("{\"id\":", f);
	mr_json_string(f, s->id);
	for (int c = C_METHOD; c < NCOLS; c++) {
		get_cell(b, sc, s, c, &v);
		json_cell(f, c, &v);
	}
	json_key_str(f, "command", s->command);
	fprintf(f, ",\"available\":%s", s->available ? "true" : "false");
	if (!s->available)
		json_key_str(f, "why", s->why);
	if (s->x)
		fprintf(f, ",\"x\":%ld", s->x);
	fprintf(f, ",\"planned\":%d,\"failed\":%d,\"samples_us\":[", s->planned, s->failed);
	for (int i = 0; i < s->n; i++) {
		fputs(i ? "," : "", f);
		json_us(f, s->us[i]);
		timeouts += s->us[i] == TIMED_OUT;
	}
	fprintf(f, "],\"timeouts\":%d", timeouts);
	if (s->has_self) {
		json_self(f, s, "kill_us", offsetof(struct self_report, kill_us));
		json_self(f, s, "elapsed_us", offsetof(struct self_report, elapsed_us));
		json_self(f, s, "release_us", offsetof(struct self_report, release_us));
		json_self(f, s, "exited", offsetof(struct self_report, exited));
		json_self(f, s, "batches", offsetof(struct self_report, batches));
	}
	if (s->error[0])
		json_key_str(f, "error", s->error);
	if (s->note[0])
		json_key_str(f, "note", s->note);
	fputc('}', f);
}

static void json_config(const struct bench *b, FILE *f)
{
	fputs("\"config\":{\"mrelease\":", f);
	mr_json_string(f, b->opt.mrelease);
	json_key_str(f, "version", b->version);
	json_key_str(f, "floor", b->floor);
	fprintf(f, ",\"size_mib\":%ld,\"runs\":%ld,\"kill_runs\":%ld,\"timeout_us\":%" PRId64
		   ",\"overhead_runs\":%ld,\"grace_ms\":%u,\"quick\":%s,\"cpus\":%ld",
		b->opt.size_mib, b->opt.runs, b->opt.kill_runs, b->timeout_us, b->opt.overhead_runs,
		b->opt.grace_ms, b->opt.quick ? "true" : "false", sysconf(_SC_NPROCESSORS_ONLN));
	json_key_str(f, "load_start", b->load_start);
	json_key_str(f, "load_end", b->load_end);
	fputs(",\"memory_back\":\"memory.stat total_rss < 1%\"}", f);
}

static void json_scenarios(const struct bench *b, FILE *f)
{
	bool first = true;

	fputs(",\"scenarios\":[", f);
	for (int i = 0; i < NSCENARIOS; i++) {
		const struct scenario *sc = &b->sc[i];

		if (!sc->ran)
			continue;
		fputs(first ? "{\"name\":" : ",{\"name\":", f);
		first = false;
		mr_json_string(f, sc->name);
		fprintf(f, ",\"available\":%s", sc->available ? "true" : "false");
		json_key_str(f, sc->available ? "setup" : "why", sc->available ? sc->setup : sc->why);
		fputs(",\"rows\":[", f);
		for (int r = 0; r < sc->nrows; r++) {
			fputs(r ? "," : "", f);
			json_row(b, f, sc, &sc->rows[r]);
		}
		fputs("]}", f);
	}
	fputc(']', f);
}

static void json_pkill(const struct bench *b, FILE *f)
{
	fprintf(f, ",\"pkill\":{\"found\":%s", b->pkill.found ? "true" : "false");
	if (b->pkill.found) {
		json_key_str(f, "path", b->pkill.path);
		json_key_str(f, "version", b->pkill.version);
	}
	if (b->pkill.why[0])
		json_key_str(f, "why", b->pkill.why);
	fputc('}', f);
}

static void json_fits(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_TINY];

	if (!shown(sc))
		return;
	fputs(",\"cost_per_target\":{", f);
	for (size_t t = 0; t < ARRAY_LEN(fit_tools); t++) {
		struct fit fit = fit_rows(sc, fit_tools[t].prefix);

		fprintf(f, "%s\"%s\":", t ? "," : "", fit_tools[t].prefix);
		if (fit.valid)
			fprintf(f, "{\"fixed_us\":%.1f,\"per_target_us\":%.2f,\"points\":%d}",
				fit.fixed_us, fit.per_target_us, fit.points);
		else
			fputs("null", f);
	}
	for (int i = 0; i < 2; i++) {
		static const char *const keys[] = { "mrelease_kill_us", "mrelease_elapsed_us" };
		size_t off = i ? offsetof(struct self_report, elapsed_us)
			       : offsetof(struct self_report, kill_us);
		struct fit fit = fit_rows_field(sc, "mrelease", (long)off);

		fprintf(f, ",\"%s\":", keys[i]);
		if (fit.valid)
			fprintf(f, "{\"fixed_us\":%.1f,\"per_target_us\":%.2f}", fit.fixed_us,
				fit.per_target_us);
		else
			fputs("null", f);
	}
	fputc('}', f);
}

static void json_sweep(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_SWEEP];
	const long *sizes = sweep_sizes(b);

	if (!shown(sc))
		return;
	fputs(",\"sweep\":[", f);
	for (size_t i = 0; sizes[i]; i++) {
		struct stats m, l;

		fprintf(f, "%s{\"size_mib\":%ld", i ? "," : "", sizes[i]);
		if (sweep_point(sc, sizes[i], &m, &l))
			fprintf(f, ",\"mrelease_median_us\":%" PRId64 ",\"floor_median_us\":%" PRId64
				   ",\"mrelease_ms_per_gib\":%.2f,\"floor_ms_per_gib\":%.2f"
				   ",\"ratio\":%.4f",
				m.med, l.med, ms_per_gib(m.med, sizes[i]), ms_per_gib(l.med, sizes[i]),
				(double)m.med / (double)l.med);
		fputc('}', f);
	}
	fputc(']', f);
}

static void json_killus(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_KILLUS];
	const long mib[] = { KILLUS_SMALL_MIB, killus_large_mib(b) };

	if (!shown(sc))
		return;
	fputs(",\"killus\":[", f);
	for (size_t i = 0; i < ARRAY_LEN(mib); i++) {
		struct spread k = kill_us_spread(series_ref(sc, "mrelease", mib[i]));

		fprintf(f, "%s{\"size_mib\":%ld", i ? "," : "", mib[i]);
		if (k.valid)
			fprintf(f, ",\"kill_us_q1\":%" PRId64 ",\"kill_us_median\":%" PRId64
				   ",\"kill_us_q3\":%" PRId64, k.q1, k.med, k.q3);
		fputc('}', f);
	}
	fputc(']', f);
}

static void json_grace(const struct bench *b, FILE *f)
{
	struct grace_result g = grace_result(b);

	if (!shown(&b->sc[SC_GRACE]))
		return;
	fprintf(f, ",\"grace\":{\"grace_ms\":%u,\"median_us\":", b->opt.grace_ms);
	json_us(f, g.valid ? g.median_us : -1);
	fputs(",\"release_median_us\":", f);
	json_us(f, g.valid ? g.release_us : -1);
	fputs(",\"bound_us\":", f);
	json_us(f, g.valid ? g.bound_us : -1);
	fprintf(f, ",\"held\":%s}", !g.valid ? "null" : g.held ? "true" : "false");
}

static void json_batches(const struct bench *b, FILE *f)
{
	struct batches_result w = batches_result(b);

	if (!shown(&b->sc[SC_BATCHES]))
		return;
	fprintf(f, ",\"batches\":{\"victims\":%ld,\"nofile\":%ld,\"unlimited_median_us\":",
		batches_victims(b), BATCHES_NOFILE);
	json_us(f, w.valid ? w.unlimited_us : -1);
	fputs(",\"limited_median_us\":", f);
	json_us(f, w.valid ? w.limited_us : -1);
	if (w.valid)
		fprintf(f, ",\"batches_unlimited_median\":%" PRId64 ",\"batches_limited_median\":%"
			   PRId64 ",\"ratio\":%.4f,\"per_batch_us\":%.1f}",
			w.batches_unlimited, w.batches_limited, w.ratio, w.per_batch_us);
	else
		fputs(",\"batches_unlimited_median\":null,\"batches_limited_median\":null,"
		      "\"ratio\":null,\"per_batch_us\":null}", f);
}

static void json_oom(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_OOM];
	int64_t reaper = row_median(sc, "reaper"), follow = row_median(sc, "follow");

	if (!shown(sc))
		return;
	fputs(",\"oom\":{\"reaper_median_us\":", f);
	json_us(f, reaper);
	fputs(",\"follow_median_us\":", f);
	json_us(f, follow);
	if (reaper > 0 && follow > 0)
		fprintf(f, ",\"reaper_over_follow\":%.2f}", (double)reaper / (double)follow);
	else
		fputs(",\"reaper_over_follow\":null}", f);
}

static void json_protect(const struct bench *b, FILE *f)
{
	const struct scenario *sc = &b->sc[SC_PROTECT];

	if (!shown(sc))
		return;
	fputs(",\"protect\":{\"mlockall_median_us\":", f);
	json_us(f, row_median(sc, "mlockall"));
	fputs(",\"oom_score_adj_write_median_us\":", f);
	json_us(f, row_median(sc, "oom_score_adj"));
	fputs(",\"sum_median_us\":", f);
	json_us(f, row_median(sc, "both"));
	json_key_str(f, "returned", series_find(sc, "both")->note);
	fputc('}', f);
}

static void json_targets(const struct bench *b, FILE *f)
{
	struct target t[MAX_TARGETS];
	int nt = collect_targets(b, t);

	fputs(",\"targets\":[", f);
	for (int i = 0; i < nt; i++) {
		fputs(i ? ",{\"case\":" : "{\"case\":", f);
		mr_json_string(f, t[i].what);
		json_key_str(f, "compared_with", t[i].against);
		json_key_str(f, "goal", t[i].goal);
		json_key_str(f, "unit", t[i].unit);
		if (t[i].valid)
			fprintf(f, ",\"value\":%.4f,\"lower_bound\":%s", t[i].value,
				t[i].lower_bound ? "true" : "false");
		else
			fputs(",\"value\":null", f);
		json_key_str(f, "detail", t[i].detail);
		fprintf(f, ",\"result\":\"%s\"}", verdict_name(t[i].verdict));
	}
	fputc(']', f);
}

void report_json(const struct bench *b, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		err(EXIT_FATAL, "%s", path);
	fputc('{', f);
	json_config(b, f);
	json_pkill(b, f);
	json_scenarios(b, f);
	json_fits(b, f);
	json_sweep(b, f);
	json_killus(b, f);
	json_grace(b, f);
	json_batches(b, f);
	json_oom(b, f);
	json_protect(b, f);
	json_targets(b, f);
	fputs("}\n", f);
	if (fclose(f))
		err(EXIT_FATAL, "%s", path);
}
