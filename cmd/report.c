/* report.c: the report on stdout, as a text table or as JSON, both driven
 * by one field table per kind of row. JSON carries raw integers (KiB,
 * microseconds) and null for what was not measured; the table humanizes
 * them and sizes each column to its widest cell, as lsns and lsblk do.
 * Targets left out are not rows; they are counted, and --verbose names
 * them (diag.c). */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

enum vtype { V_INT, V_KIB, V_USEC, V_STR, V_BOOL };

struct field {
	const char *key;    /* JSON key */
	const char *header; /* table header, or NULL: JSON only */
	bool left;          /* left-aligned in the table */
	enum vtype type;
};

/* A value: a string, or a number (V_BOOL: 0 or 1); MR_UNKNOWN and NULL
 * strings are null. */
struct val {
	int64_t num;
	const char *str;
};

/* text: for the table, which may say more than the JSON value. */
typedef struct val (*getter_fn)(const struct mr_run *run, const void *row, int id, bool text,
				 char *buf, size_t len);

enum target_field {
	T_PID, T_COMM, T_RSS_BEFORE, T_RSS_AFTER, T_FREED, T_RELEASE_US, T_SIGNAL, T_STATUS,
	T_ERROR, T_PSS_BEFORE, T_ANON_BEFORE, T_SWAP_BEFORE, T_CGROUP, T_PIDFD_INODE,
	T_EXITED, T_MEASURE_ERROR,
};
static const struct field target_fields[] = {
	[T_PID] = { "pid", "PID", false, V_INT },
	[T_COMM] = { "comm", "COMM", true, V_STR },
	[T_RSS_BEFORE] = { "rss_before_kb", "RSS BEFORE", false, V_KIB },
	[T_RSS_AFTER] = { "rss_after_kb", "RSS AFTER", false, V_KIB },
	[T_FREED] = { "freed_kb", "FREED", false, V_KIB },
	[T_RELEASE_US] = { "release_us", "TIME", false, V_USEC },
	[T_SIGNAL] = { "signal", "SIGNAL", true, V_STR },
	[T_STATUS] = { "status", "STATUS", true, V_STR },
	[T_ERROR] = { "error", NULL, false, V_STR },
	[T_PSS_BEFORE] = { "pss_before_kb", NULL, false, V_KIB },
	[T_ANON_BEFORE] = { "anon_before_kb", NULL, false, V_KIB },
	[T_SWAP_BEFORE] = { "swap_before_kb", NULL, false, V_KIB },
	[T_CGROUP] = { "cgroup", NULL, false, V_STR },
	[T_PIDFD_INODE] = { "pidfd_inode", NULL, false, V_INT },
	[T_EXITED] = { "exited", NULL, false, V_BOOL },
	[T_MEASURE_ERROR] = { "measure_error", NULL, false, V_STR },
};

enum cgroup_field {
	C_PATH, C_MEMBERS, C_RELEASED, C_FAILED, C_LEFT_OUT, C_MEMORY_BEFORE, C_MEMORY_AFTER,
	C_FREED, C_KILL, C_REMAINING, C_KILL_ERROR,
};
static const struct field cgroup_fields[] = {
	[C_PATH] = { "path", "CGROUP", true, V_STR },
	[C_MEMBERS] = { "members", "MEMBERS", false, V_INT },
	[C_RELEASED] = { "released", "RELEASED", false, V_INT },
	[C_FAILED] = { "failed", "FAILED", false, V_INT },
	[C_LEFT_OUT] = { "left_out", NULL, false, V_INT },
	[C_MEMORY_BEFORE] = { "memory_before_kb", "MEM BEFORE", false, V_KIB },
	[C_MEMORY_AFTER] = { "memory_after_kb", "MEM AFTER", false, V_KIB },
	[C_FREED] = { "freed_kb", NULL, false, V_KIB },
	[C_KILL] = { "kill", "KILL", true, V_STR },
	[C_REMAINING] = { "remaining", NULL, false, V_INT },
	[C_KILL_ERROR] = { "kill_error", NULL, false, V_STR },
};

enum summary_field {
	S_TARGETS, S_RELEASED, S_EXITED, S_FAILED, S_INTERRUPTED, S_PREDICTED, S_LEFT_OUT,
	S_RSS_BEFORE, S_RSS_AFTER, S_FREED, S_FREED_BASIS, S_RELEASED_KB, S_EXITED_KB,
	S_MEM_AVAILABLE_DELTA, S_ELAPSED_US, S_KILL_US, S_NICE_APPLIED, S_AFFINITY_APPLIED,
	S_DRY_RUN, S_FIRST_SIGNAL, S_GRACE_MS, S_BATCHES, S_CGROUP_FREED, S_NFIELDS
};
static const struct field summary_fields[] = {
	[S_TARGETS] = { "targets", NULL, false, V_INT },
	[S_RELEASED] = { "released", NULL, false, V_INT },
	[S_EXITED] = { "exited", NULL, false, V_INT },
	[S_FAILED] = { "failed", NULL, false, V_INT },
	[S_INTERRUPTED] = { "interrupted", NULL, false, V_INT },
	[S_PREDICTED] = { "predicted", NULL, false, V_INT },
	[S_LEFT_OUT] = { "left_out", NULL, false, V_INT },
	[S_RSS_BEFORE] = { "rss_before_kb", NULL, false, V_KIB },
	[S_RSS_AFTER] = { "rss_after_kb", NULL, false, V_KIB },
	[S_FREED] = { "freed_kb", NULL, false, V_KIB },
	[S_FREED_BASIS] = { "freed_basis", NULL, false, V_STR },
	[S_RELEASED_KB] = { "released_kb", NULL, false, V_KIB },
	[S_EXITED_KB] = { "exited_kb", NULL, false, V_KIB },
	[S_MEM_AVAILABLE_DELTA] = { "mem_available_delta_kb", NULL, false, V_KIB },
	[S_ELAPSED_US] = { "elapsed_us", NULL, false, V_USEC },
	[S_KILL_US] = { "kill_us", NULL, false, V_USEC },
	[S_NICE_APPLIED] = { "nice_applied", NULL, false, V_BOOL },
	[S_AFFINITY_APPLIED] = { "affinity_applied", NULL, false, V_BOOL },
	[S_DRY_RUN] = { "dry_run", NULL, false, V_BOOL },
	[S_FIRST_SIGNAL] = { "first_signal", NULL, false, V_STR },
	[S_GRACE_MS] = { "grace_ms", NULL, false, V_INT },
	[S_BATCHES] = { "batches", NULL, false, V_INT },
	[S_CGROUP_FREED] = { "cgroup_freed_kb", NULL, false, V_KIB },
};

/* What the freed total is made of: the cgroups' own memory counters where
 * every target is in one; PSS with --measure=smaps (a page shared between
 * targets counted once); otherwise a sum of RSS, which counts such a page
 * once for each target that maps it. A counter never hides what the rows
 * released: a page stays charged to the cgroup where it was first touched
 * (a process that moved in brought no charge). A counter holds each page
 * once, so it falls below the rows' sum where the targets share pages (a
 * parent and its forks), but never below the anonymous memory of any one
 * target born in it: where the counters fell by less than half of that of
 * one target released, pages were charged elsewhere, and the headline is
 * the rows' sum, the counters' fall said beside it. */
enum basis { B_CGROUP, B_PSS, B_RSS };
static const char *const basis_names[] = { [B_CGROUP] = "cgroup", [B_PSS] = "pss", [B_RSS] = "rss_sum" };
static const char *const basis_texts[] = {
	[B_CGROUP] = "by the cgroups' memory counters",
	[B_PSS] = "in PSS (a page shared between targets counted once)",
	[B_RSS] = "as a sum of RSS (a page shared between targets counted once for each)",
};

struct summary {
	int64_t count[S_NFIELDS];
	enum basis basis;
};

static const char *const state_names[] = {
	[MR_SELECTED] = "pending", [MR_OPENED] = "pending", [MR_ASKED] = "pending",
	[MR_KILLED] = "pending",
	[MR_RELEASED] = "released", [MR_EXITED] = "exited", [MR_FAILED] = "failed",
	[MR_LEFT_OUT] = "left out", [MR_INTERRUPTED] = "interrupted", [MR_PREDICTED] = "would release",
};

static const char *const kill_names[] = {
	[MR_CGKILL_NONE] = NULL, [MR_CGKILL_FILE] = "cgroup.kill",
	[MR_CGKILL_UNTIL_EMPTY] = "until empty",
};

/* The rows in pid order: the targets, less those left out; the named pids
 * with no process, and the selected pids no batch reached (the run stopped
 * first), made into targets as they are reached. NULL at the end. */
struct rows {
	const struct mr_run *run;
	size_t i, m, u;
	struct mr_target made;
};

static const struct mr_target *next_row(struct rows *r)
{
	const struct mr_run *run = r->run;
	pid_t t, m, u;

	while (r->i < run->ntargets && run->targets[r->i].state == MR_LEFT_OUT)
		r->i++;
	t = r->i < run->ntargets ? run->targets[r->i].pid : MR_PID_MAX + 1;
	m = r->m < run->nmissing ? run->missing[r->m] : MR_PID_MAX + 1;
	u = r->u < run->nunreached ? run->unreached[r->u] : MR_PID_MAX + 1;
	if (m < t && m <= u) {
		mr_target_init(&r->made, run->missing[r->m++], -1);
		r->made.named = true;
		mr_target_end(&r->made, MR_FAILED, MR_R_NO_PROCESS, 0);
		return &r->made;
	}
	if (u < t) {
		mr_target_init(&r->made, run->unreached[r->u++], -1);
		if (run->refused.what && !run->interrupted)
			mr_target_end(&r->made, MR_FAILED, MR_R_STOPPED, 0);
		else
			mr_target_end(&r->made, MR_INTERRUPTED, MR_R_NONE, 0);
		return &r->made;
	}
	return r->i < run->ntargets ? &run->targets[r->i++] : NULL;
}

static int64_t diff(int64_t a, int64_t b)
{
	return a == MR_UNKNOWN || b == MR_UNKNOWN ? MR_UNKNOWN : a - b;
}

static struct val num(int64_t v)
{
	return (struct val){ .num = v };
}

static struct val str(const char *s)
{
	return (struct val){ .str = s };
}

static const char *status_name(const struct mr_run *run, const struct mr_target *t, bool text)
{
	if (text && t->state == MR_RELEASED && t->waited == MR_WAITED_RUNNING)
		return "released, running";
	if (t->state == MR_PREDICTED && run->cfg.kill)
		return "would kill";
	return state_names[t->state];
}

static struct val target_value(const struct mr_run *run, const void *row, int id, bool text,
			       char *buf, size_t len)
{
	const struct mr_target *t = row;

	switch ((enum target_field)id) {
	case T_PID: return num(t->pid);
	case T_COMM: return str(t->comm[0] ? t->comm : NULL);
	case T_STATUS: return str(status_name(run, t, text));
	case T_SIGNAL: return str(mr_signal_name(t->signal));
	case T_ERROR: return str(mr_reason_text(run, t, buf, len));
	case T_RSS_BEFORE: return num(t->before.rss_kb);
	case T_RSS_AFTER: return num(t->after.rss_kb);
	case T_PSS_BEFORE: return num(t->before.pss_kb);
	case T_ANON_BEFORE: return num(t->before.anon_kb);
	case T_SWAP_BEFORE: return num(t->before.swap_kb);
	case T_FREED: return num(diff(t->before.rss_kb, t->after.rss_kb));
	case T_RELEASE_US: return num(t->release_us);
	case T_CGROUP: return str(t->cgroup >= 0 ? run->cgroups[t->cgroup].path : NULL);
	case T_PIDFD_INODE: return num(t->ino && t->reason != MR_R_INODE ? (int64_t)t->ino : MR_UNKNOWN);
	case T_EXITED: return num(t->waited == MR_WAITED_NO ? MR_UNKNOWN :
				  t->waited == MR_WAITED_GONE);
	case T_MEASURE_ERROR: return str(mr_figures_text(run, t, buf, len));
	}
	return num(MR_UNKNOWN);
}

static bool refused(const struct mr_run *run, const struct mr_cgroup *c)
{
	return run->refused.what && c == &run->cgroups[run->refused.cgroup];
}

/* How it was killed (in a dry run, how it would be) once it was (JSON
 * null, and in the table "refused" or "failed" when it was not). */
static const char *kill_text(const struct mr_run *run, const struct mr_cgroup *c, bool text)
{
	if (c->killed)
		return kill_names[c->kill];
	if (text && refused(run, c))
		return "refused";
	return text && c->kill && (c->rounds || c->kill_errnum || run->cfg.dry_run) &&
	       !run->interrupted ? "failed" : NULL;
}

/* Why its kill failed: refused, or the error of the listing or the write. */
static const char *kill_error(const struct mr_run *run, const struct mr_cgroup *c)
{
	if (refused(run, c))
		return "refused";
	return c->kill_errnum ? strerror(c->kill_errnum) : NULL;
}

static struct val cgroup_value(const struct mr_run *run, const void *row, int id, bool text,
			       char *buf, size_t len)
{
	const struct mr_cgroup *c = row;
	bool unfinished = c->kill == MR_CGKILL_UNTIL_EMPTY && !c->killed &&
			  (c->rounds || run->cfg.dry_run);

	(void)buf, (void)len;
	switch ((enum cgroup_field)id) {
	case C_PATH: return str(c->path);
	case C_MEMBERS: return num((int64_t)c->members);
	case C_RELEASED: return num((int64_t)c->released);
	case C_FAILED: return num((int64_t)c->failed);
	case C_LEFT_OUT: return num((int64_t)c->left_out);
	case C_MEMORY_BEFORE: return num(c->memory_before_kb);
	case C_MEMORY_AFTER: return num(c->memory_after_kb);
	case C_FREED: return num(diff(c->memory_before_kb, c->memory_after_kb));
	case C_KILL: return str(kill_text(run, c, text));
	case C_REMAINING: return num(unfinished ? (int64_t)c->remaining : MR_UNKNOWN);
	case C_KILL_ERROR: return str(kill_error(run, c));
	}
	return num(MR_UNKNOWN);
}

static struct val summary_value(const struct mr_run *run, const void *row, int id, bool text,
				char *buf, size_t len)
{
	const struct summary *s = row;

	(void)text, (void)buf, (void)len;
	if (id == S_FREED_BASIS)
		return str(s->count[S_FREED] == MR_UNKNOWN ? NULL : basis_names[s->basis]);
	if (id == S_FIRST_SIGNAL)
		return str(run->cfg.grace ? mr_signal_name(run->cfg.first_signal) : NULL);
	return num(s->count[id]);
}

static void human_kib(char *buf, size_t len, int64_t kib);

/* The sum line of the table, in the targets' columns; under STATUS, who
 * freed what: process_mrelease, or the processes' own exit. */
static struct val sum_value(const struct mr_run *run, const void *row, int id, bool text,
			    char *buf, size_t len)
{
	const struct summary *s = row;
	char r[32], e[32];

	(void)run, (void)text;
	switch ((enum target_field)id) {
	case T_PID: return str("sum");
	case T_COMM:
		snprintf(buf, len, "%" PRId64 " target%s", s->count[S_TARGETS],
			 s->count[S_TARGETS] == 1 ? "" : "s");
		return str(buf);
	case T_RSS_BEFORE: return num(s->count[S_RSS_BEFORE]);
	case T_RSS_AFTER: return num(s->count[S_RSS_AFTER]);
	case T_FREED: return num(diff(s->count[S_RSS_BEFORE], s->count[S_RSS_AFTER]));
	case T_RELEASE_US: return num(s->count[S_ELAPSED_US]);
	case T_STATUS:
		if (!s->count[S_RELEASED] && !s->count[S_EXITED])
			return str("");
		human_kib(r, sizeof(r), s->count[S_RELEASED_KB]);
		human_kib(e, sizeof(e), s->count[S_EXITED_KB]);
		snprintf(buf, len, "released %s, exited %s", r, e);
		return str(buf);
	default: return str("");
	}
}

/* Sums over what is known; null if nothing is. */
static void add_known(int64_t *sum, int64_t v)
{
	if (v == MR_UNKNOWN)
		return;
	*sum = *sum == MR_UNKNOWN ? v : *sum + v;
}

/* The freed total by the cgroups' counters, where every row is in a cgroup
 * whose counter was read before and after; else MR_UNKNOWN. */
static int64_t cgroup_freed(const struct mr_run *run)
{
	int64_t sum = MR_UNKNOWN;

	if (!run->ncgroups || run->nmissing || run->nunreached)
		return MR_UNKNOWN;
	for (size_t i = 0; i < run->ntargets; i++)
		if (run->targets[i].state != MR_LEFT_OUT && run->targets[i].cgroup < 0)
			return MR_UNKNOWN;
	for (size_t c = 0; c < run->ncgroups; c++) {
		int64_t d = diff(run->cgroups[c].memory_before_kb, run->cgroups[c].memory_after_kb);

		if (d == MR_UNKNOWN)
			return MR_UNKNOWN;
		add_known(&sum, d);
	}
	return sum;
}

static void summarize(const struct mr_run *run, struct summary *s)
{
	bool pss = run->cfg.measure == MR_MEASURE_SMAPS;
	struct rows rows = { .run = run };
	const struct mr_target *t;
	int64_t freed = MR_UNKNOWN, own = MR_UNKNOWN;

	*s = (struct summary){ .basis = pss ? B_PSS : B_RSS };
	s->count[S_RSS_BEFORE] = s->count[S_RSS_AFTER] = MR_UNKNOWN;
	while ((t = next_row(&rows))) {
		int64_t f = pss ? diff(t->before.pss_kb, t->after.pss_kb) :
				  diff(t->before.rss_kb, t->after.rss_kb);

		s->count[S_TARGETS]++;
		s->count[S_RELEASED] += t->state == MR_RELEASED;
		s->count[S_EXITED] += t->state == MR_EXITED;
		s->count[S_FAILED] += t->state == MR_FAILED;
		s->count[S_INTERRUPTED] += t->state == MR_INTERRUPTED;
		s->count[S_PREDICTED] += t->state == MR_PREDICTED;
		add_known(&s->count[S_RSS_BEFORE], t->before.rss_kb);
		add_known(&s->count[S_RSS_AFTER], t->after.rss_kb);
		add_known(&freed, f);
		if (f != MR_UNKNOWN && t->state == MR_RELEASED)
			s->count[S_RELEASED_KB] += f;
		if (t->state == MR_RELEASED && t->before.anon_kb != MR_UNKNOWN &&
		    (own == MR_UNKNOWN || t->before.anon_kb > own))
			own = t->before.anon_kb;
		if (f != MR_UNKNOWN && t->state == MR_EXITED)
			s->count[S_EXITED_KB] += f;
	}
	s->count[S_LEFT_OUT] = (int64_t)run->not_dying;
	for (size_t i = 0; i < run->ntargets; i++)
		s->count[S_LEFT_OUT] += run->targets[i].state == MR_LEFT_OUT;
	if (freed == MR_UNKNOWN)
		s->count[S_RELEASED_KB] = s->count[S_EXITED_KB] = MR_UNKNOWN;
	s->count[S_FREED] = run->sent ? freed : MR_UNKNOWN;
	s->count[S_CGROUP_FREED] = run->sent ? cgroup_freed(run) : MR_UNKNOWN;
	if (s->count[S_CGROUP_FREED] != MR_UNKNOWN &&
	    (own == MR_UNKNOWN || s->count[S_CGROUP_FREED] >= own / 2)) {
		s->count[S_FREED] = s->count[S_CGROUP_FREED];
		s->basis = B_CGROUP;
	}
	s->count[S_MEM_AVAILABLE_DELTA] =
		diff(run->mem_available_after_kb, run->mem_available_before_kb);
	s->count[S_ELAPSED_US] = run->elapsed_us;
	s->count[S_KILL_US] = run->kill_us;
	s->count[S_NICE_APPLIED] = run->cfg.sched.set_nice ? run->nice_applied : MR_UNKNOWN;
	s->count[S_AFFINITY_APPLIED] = run->cfg.sched.set_affinity ? run->affinity_applied : MR_UNKNOWN;
	s->count[S_DRY_RUN] = run->cfg.dry_run;
	s->count[S_GRACE_MS] = run->cfg.grace ? run->cfg.grace_ms : MR_UNKNOWN;
	s->count[S_BATCHES] = run->batches;
}

/* ---- text ---------------------------------------------------------------- */

/* 1536 KiB -> "1.5M"; whole KiB below 1 MiB. */
static void human_kib(char *buf, size_t len, int64_t kib)
{
	static const char units[] = "KMGTP";
	double v = (double)(kib < 0 ? -kib : kib);
	const char *sign = kib < 0 ? "-" : "";
	int u = 0;

	if (kib == 0 || kib == MR_UNKNOWN) {
		snprintf(buf, len, kib ? "-" : "0");
		return;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%s%.0fK", sign, v);
	else
		snprintf(buf, len, "%s%.1f%c", sign, v, units[u]);
}

static void human_usec(char *buf, size_t len, int64_t us)
{
	if (us < 1000)
		snprintf(buf, len, "%" PRId64 "us", us);
	else if (us < 1000000)
		snprintf(buf, len, "%.1fms", (double)us / 1e3);
	else
		snprintf(buf, len, "%.2fs", (double)us / 1e6);
}

/* Text for one cell; names escaped. */
static char *cell(const struct field *f, struct val v)
{
	char buf[64];

	if (f->type == V_STR || v.str)
		return strdup(v.str ? mr_safe(v.str) : "-");
	if (v.num == MR_UNKNOWN)
		snprintf(buf, sizeof(buf), "-");
	else if (f->type == V_KIB)
		human_kib(buf, sizeof(buf), v.num);
	else if (f->type == V_USEC)
		human_usec(buf, sizeof(buf), v.num);
	else
		snprintf(buf, sizeof(buf), "%" PRId64, v.num);
	return strdup(buf);
}

/* A table: a header, then rows of cells, each column as wide as its widest
 * cell. The last column is not padded. */
struct table {
	const struct field *fields;
	size_t nfields, nrows, cap;
	char **cells; /* nrows x nfields, NULL for JSON-only fields */
};

static void table_init(struct table *tb, const struct field *fields, size_t n, size_t rows)
{
	*tb = (struct table){ .fields = fields, .nfields = n, .cap = rows + 1 };
	tb->cells = calloc(tb->cap * n, sizeof(*tb->cells));
	if (!tb->cells)
		err(MR_EXIT_FATAL, "report");
	for (size_t i = 0; i < n; i++)
		if (fields[i].header)
			tb->cells[i] = strdup(fields[i].header);
	tb->nrows = 1;
}

static void table_add(struct table *tb, const struct mr_run *run, getter_fn get, const void *row)
{
	char buf[4096];

	for (size_t i = 0; i < tb->nfields; i++)
		if (tb->fields[i].header)
			tb->cells[tb->nrows * tb->nfields + i] =
				cell(&tb->fields[i], get(run, row, (int)i, true, buf, sizeof(buf)));
	tb->nrows++;
}

static void table_print(FILE *out, struct table *tb)
{
	size_t last = 0, *width = calloc(tb->nfields, sizeof(*width));

	if (!width)
		err(MR_EXIT_FATAL, "report");
	for (size_t i = 0; i < tb->nrows * tb->nfields; i++) {
		size_t c = i % tb->nfields;

		if (tb->cells[i] && strlen(tb->cells[i]) > width[c])
			width[c] = strlen(tb->cells[i]);
		if (tb->fields[c].header)
			last = c;
	}
	for (size_t r = 0; r < tb->nrows; r++) {
		const char *sep = "";

		for (size_t c = 0; c < tb->nfields; c++) {
			const char *s = tb->cells[r * tb->nfields + c];

			if (!tb->fields[c].header)
				continue;
			s = s ? s : "";
			if (c == last && tb->fields[c].left)
				fprintf(out, "%s%s", sep, s);
			else
				fprintf(out, "%s%*s", sep,
					tb->fields[c].left ? -(int)width[c] : (int)width[c], s);
			sep = " ";
		}
		fputc('\n', out);
	}
	for (size_t i = 0; i < tb->nrows * tb->nfields; i++)
		free(tb->cells[i]);
	free(tb->cells);
	free(width);
}

void mr_report_text(FILE *out, const struct mr_run *run)
{
	struct rows rows = { .run = run };
	const struct mr_target *t;
	struct table tb;
	struct summary s;
	char buf[64];

	summarize(run, &s);
	table_init(&tb, target_fields, MR_NELEMS(target_fields), (size_t)s.count[S_TARGETS] + 1);
	while ((t = next_row(&rows)))
		table_add(&tb, run, target_value, t);
	if (s.count[S_TARGETS] > 1)
		table_add(&tb, run, sum_value, &s);
	table_print(out, &tb);
	if (run->ncgroups) {
		fputc('\n', out);
		table_init(&tb, cgroup_fields, MR_NELEMS(cgroup_fields), run->ncgroups);
		for (size_t i = 0; i < run->ncgroups; i++)
			table_add(&tb, run, cgroup_value, &run->cgroups[i]);
		table_print(out, &tb);
	}
	if (s.count[S_FREED] != MR_UNKNOWN && (s.count[S_TARGETS] > 1 || s.basis != B_RSS)) {
		human_kib(buf, sizeof(buf), s.count[S_FREED]);
		fprintf(out, "Freed: %s %s\n", buf, basis_texts[s.basis]);
		if (s.basis != B_CGROUP && s.count[S_CGROUP_FREED] != MR_UNKNOWN) {
			human_kib(buf, sizeof(buf), s.count[S_CGROUP_FREED]);
			fprintf(out, "The cgroups' memory counters fell by only %s: a page stays "
				"charged to the cgroup it was first touched in, and not all of their "
				"members' pages were\n", buf);
		}
	}
	if (run->cfg.dry_run && run->cfg.grace)
		fprintf(out, "Dry run, nothing sent: the run would send %s, give the targets up to "
			"%.3g s to exit, then send KILL to the rest and release them\n",
			mr_signal_name(run->cfg.first_signal), (double)run->cfg.grace_ms / 1000);
	else if (run->cfg.dry_run && run->cfg.kill)
		fprintf(out, "Dry run, nothing sent: the run would send KILL to the targets and "
			"release them\n");
	else if (run->cfg.dry_run)
		fprintf(out, "Dry run, nothing released: the run would release the targets that "
			"are dying\n");
	/* Only when something was killed or came back. */
	if (s.count[S_MEM_AVAILABLE_DELTA] != MR_UNKNOWN &&
	    (s.count[S_RELEASED] || s.count[S_EXITED] || run->kill_us != MR_UNKNOWN)) {
		human_kib(buf, sizeof(buf), s.count[S_MEM_AVAILABLE_DELTA]);
		fprintf(out, "MemAvailable change: %s%s\n",
			s.count[S_MEM_AVAILABLE_DELTA] > 0 ? "+" : "", buf);
	}
}

/* ---- JSON ---------------------------------------------------------------- */

/* One object; with type, an NDJSON line's: "type" and "time" (when) lead. */
static void json_object(FILE *out, const struct mr_run *run, const struct field *fields,
			size_t n, getter_fn get, const void *row, const char *type, const char *when)
{
	char buf[4096];

	fputc('{', out);
	if (type) {
		fprintf(out, "\"type\":\"%s\",\"time\":", type);
		mr_json_string(out, when);
		fputc(',', out);
	}
	for (size_t i = 0; i < n; i++) {
		struct val v = get(run, row, (int)i, false, buf, sizeof(buf));

		fprintf(out, "%s\"%s\":", i ? "," : "", fields[i].key);
		if (fields[i].type == V_STR && v.str)
			mr_json_string(out, v.str);
		else if (fields[i].type == V_STR || v.num == MR_UNKNOWN)
			fputs("null", out);
		else if (fields[i].type == V_BOOL)
			fputs(v.num ? "true" : "false", out);
		else
			fprintf(out, "%" PRId64, v.num);
	}
	fputc('}', out);
}

void mr_report_json(FILE *out, const struct mr_run *run)
{
	struct rows rows = { .run = run };
	const struct mr_target *t;
	struct summary s;
	bool first = true;

	summarize(run, &s);
	fputs("{\"targets\":[", out);
	while ((t = next_row(&rows))) {
		fputs(first ? "\n" : ",\n", out);
		json_object(out, run, target_fields, MR_NELEMS(target_fields), target_value, t, NULL,
			    NULL);
		first = false;
	}
	fputs("],\n\"cgroups\":[", out);
	for (size_t i = 0; i < run->ncgroups; i++) {
		fputs(i ? ",\n" : "\n", out);
		json_object(out, run, cgroup_fields, MR_NELEMS(cgroup_fields), cgroup_value,
			    &run->cgroups[i], NULL, NULL);
	}
	fputs("],\n\"summary\":", out);
	json_object(out, run, summary_fields, MR_NELEMS(summary_fields), summary_value, &s, NULL,
		    NULL);
	fputs("}\n", out);
}

/* ---- --follow: a line for each target, one for each sweep, the totals ---- */

/* The columns of a release's line, as wide as their largest usual value:
 * lines go out one by one, and cannot be measured together. */
static const struct {
	enum target_field id;
	int width;
} follow_columns[] = {
	{ T_PID, 7 }, { T_COMM, 15 }, { T_RSS_BEFORE, 10 }, { T_FREED, 8 }, { T_RELEASE_US, 7 },
	{ T_STATUS, 0 },
};

static void follow_line(FILE *out, const char *when, const char *const *cells)
{
	fprintf(out, "%-20s", when);
	for (size_t i = 0; i < MR_NELEMS(follow_columns); i++) {
		const struct field *f = &target_fields[follow_columns[i].id];
		int w = follow_columns[i].width;

		if (!w)
			fprintf(out, " %s", cells[i]);
		else
			fprintf(out, " %*s", f->left ? -w : w, cells[i]);
	}
	fputc('\n', out);
}

const char *const mr_trigger_names[MR_T_COUNT] = {
	[MR_T_START] = "start", [MR_T_SIGNALS] = "signals", [MR_T_SETTLE] = "settle",
	[MR_T_LOST] = "lost",
	[MR_T_PRESSURE] = "pressure", [MR_T_TIMER] = "timer",
};
const char *const mr_source_names[MR_SRC_COUNT] = {
	[MR_SRC_SIGNALS] = "signals", [MR_SRC_PRESSURE] = "pressure", [MR_SRC_TIMER] = "timer",
};
/* The sources as a sentence says them. */
static const char *const source_texts[MR_SRC_COUNT] = {
	[MR_SRC_SIGNALS] = "signals", [MR_SRC_PRESSURE] = "pressure",
	[MR_SRC_TIMER] = "the timer",
};

/* The first record: what wakes the sweeps, and why each other source does
 * not. NDJSON: {"type":"start", ..., "sources":[...], "declined":{...}}. */
void mr_report_follow_start(FILE *out, const struct mr_follow_start *st, const char *when)
{
	const struct mr_options *o = st->o;
	char spec[64];
	bool first = true;

	if (!o->json) {
		fprintf(out, "%-20s following: waking on", when);
		for (int i = 0; i < MR_SRC_COUNT; i++)
			if (st->used[i]) {
				fprintf(out, "%s %s", first ? "" : " and", source_texts[i]);
				first = false;
			}
		for (int i = 0; i < MR_SRC_COUNT; i++)
			if (!st->used[i])
				fprintf(out, "; not on %s: %s", source_texts[i], mr_safe(st->declined[i]));
		fputc('\n', out);
		return;
	}
	fprintf(out, "{\"type\":\"start\",\"time\":");
	mr_json_string(out, when);
	fprintf(out, ",\"version\":\"%s\",\"pid\":%d,\"sources\":[", MR_VERSION, (int)getpid());
	for (int i = 0; i < MR_SRC_COUNT; i++)
		if (st->used[i]) {
			fprintf(out, "%s\"%s\"", first ? "" : ",", mr_source_names[i]);
			first = false;
		}
	fputs("],\"declined\":{", out);
	first = true;
	for (int i = 0; i < MR_SRC_COUNT; i++)
		if (!st->used[i]) {
			fprintf(out, "%s\"%s\":", first ? "" : ",", mr_source_names[i]);
			mr_json_string(out, st->declined[i]);
			first = false;
		}
	fprintf(out, "},\"settle_ms\":%u,\"pressure\":", o->settle_ms);
	if (st->used[MR_SRC_PRESSURE])
		mr_json_string(out, mr_pressure_text(&o->pressure, spec, sizeof(spec)));
	else
		fputs("null", out);
	if (o->interval_ms)
		fprintf(out, ",\"interval_ms\":%u", o->interval_ms);
	else
		fputs(",\"interval_ms\":null", out);
	fprintf(out, ",\"dry_run\":%s}\n", o->cfg.dry_run ? "true" : "false");
}

void mr_report_follow_header(FILE *out)
{
	const char *cells[MR_NELEMS(follow_columns)];

	for (size_t i = 0; i < MR_NELEMS(follow_columns); i++)
		cells[i] = target_fields[follow_columns[i].id].header;
	follow_line(out, "WHEN", cells);
}

/* A target a sweep released (or failed, or in a dry run would release): a
 * line of the table, or with json an NDJSON object of type "release", the
 * same as a target of the one-shot document. */
void mr_report_follow_target(FILE *out, const struct mr_run *run, const struct mr_target *t,
			     const char *when, bool json)
{
	char *cells[MR_NELEMS(follow_columns)], buf[4096];

	if (json) {
		json_object(out, run, target_fields, MR_NELEMS(target_fields), target_value, t,
			    "release", when);
		fputc('\n', out);
		return;
	}
	for (size_t i = 0; i < MR_NELEMS(follow_columns); i++)
		cells[i] = cell(&target_fields[follow_columns[i].id],
				target_value(run, t, (int)follow_columns[i].id, true, buf, sizeof(buf)));
	follow_line(out, when, (const char *const *)cells);
	for (size_t i = 0; i < MR_NELEMS(follow_columns); i++)
		free(cells[i]);
}

enum sweep_field {
	W_SWEEP, W_TRIGGER, W_NOT_DYING, W_TARGETS, W_RELEASED, W_FAILED, W_KNOWN, W_FREED,
	W_ELAPSED,
};
static const struct field sweep_fields[] = {
	[W_SWEEP] = { "sweep", NULL, false, V_INT },
	[W_TRIGGER] = { "trigger", NULL, false, V_STR },
	[W_NOT_DYING] = { "not_dying", NULL, false, V_INT },
	[W_TARGETS] = { "targets", NULL, false, V_INT },
	[W_RELEASED] = { "released", NULL, false, V_INT },
	[W_FAILED] = { "failed", NULL, false, V_INT },
	[W_KNOWN] = { "known", NULL, false, V_INT },
	[W_FREED] = { "freed_kb", NULL, false, V_KIB },
	[W_ELAPSED] = { "elapsed_us", NULL, false, V_USEC },
};

static struct val sweep_value(const struct mr_run *run, const void *row, int id, bool text,
			      char *buf, size_t len)
{
	const struct mr_sweep *w = row;

	(void)run, (void)text, (void)buf, (void)len;
	switch ((enum sweep_field)id) {
	case W_SWEEP: return num((int64_t)w->number);
	case W_TRIGGER: return str(mr_trigger_names[w->trigger]);
	case W_NOT_DYING: return num((int64_t)w->not_dying);
	case W_TARGETS: return num((int64_t)w->targets);
	case W_RELEASED: return num((int64_t)w->released);
	case W_FAILED: return num((int64_t)w->failed);
	case W_KNOWN: return num((int64_t)w->known);
	case W_FREED: return num(w->freed_kb);
	case W_ELAPSED: return num(w->elapsed_us);
	}
	return num(MR_UNKNOWN);
}

/* A sweep's counts: an NDJSON object of type "sweep". */
void mr_report_sweep(FILE *out, const struct mr_sweep *w, const char *when)
{
	json_object(out, NULL, sweep_fields, MR_NELEMS(sweep_fields), sweep_value, w, "sweep", when);
	fputc('\n', out);
}

/* A warning or an error, as a record of the stream: with --follow --json,
 * every line on standard output is one JSON object, warnings and errors
 * included, so that a journal of them reads as NDJSON. */
void mr_report_message(FILE *out, const char *type, const char *message, const char *when)
{
	fprintf(out, "{\"type\":\"%s\",\"time\":", type);
	mr_json_string(out, when);
	fputs(",\"message\":", out);
	mr_json_string(out, message);
	fputs("}\n", out);
}

enum totals_field {
	F_SWEEPS, F_ON_START, F_ON_SIGNALS, F_ON_SETTLE, F_ON_LOST, F_ON_PRESSURE, F_ON_TIMER,
	F_RELEASED,
	F_FAILED, F_FREED, F_EVENTS, F_LOST, F_DROPPED,
};
static const struct field totals_fields[] = {
	[F_SWEEPS] = { "sweeps", NULL, false, V_INT },
	[F_ON_START] = { "on_start", NULL, false, V_INT },
	[F_ON_SIGNALS] = { "on_signals", NULL, false, V_INT },
	[F_ON_SETTLE] = { "on_settle", NULL, false, V_INT },
	[F_ON_LOST] = { "on_lost", NULL, false, V_INT },
	[F_ON_PRESSURE] = { "on_pressure", NULL, false, V_INT },
	[F_ON_TIMER] = { "on_timer", NULL, false, V_INT },
	[F_RELEASED] = { "released", NULL, false, V_INT },
	[F_FAILED] = { "failed", NULL, false, V_INT },
	[F_FREED] = { "freed_kb", NULL, false, V_KIB },
	[F_EVENTS] = { "signal_events", NULL, false, V_INT },
	[F_LOST] = { "signal_events_lost", NULL, false, V_INT },
	[F_DROPPED] = { "records_dropped", NULL, false, V_INT },
};

static struct val totals_value(const struct mr_run *run, const void *row, int id, bool text,
			       char *buf, size_t len)
{
	const struct mr_follow_totals *f = row;

	(void)run, (void)text, (void)buf, (void)len;
	switch ((enum totals_field)id) {
	case F_SWEEPS: return num((int64_t)f->sweeps);
	case F_ON_START: return num((int64_t)f->by_trigger[MR_T_START]);
	case F_ON_SIGNALS: return num((int64_t)f->by_trigger[MR_T_SIGNALS]);
	case F_ON_SETTLE: return num((int64_t)f->by_trigger[MR_T_SETTLE]);
	case F_ON_LOST: return num((int64_t)f->by_trigger[MR_T_LOST]);
	case F_ON_PRESSURE: return num((int64_t)f->by_trigger[MR_T_PRESSURE]);
	case F_ON_TIMER: return num((int64_t)f->by_trigger[MR_T_TIMER]);
	case F_RELEASED: return num((int64_t)f->released);
	case F_FAILED: return num((int64_t)f->failed);
	case F_FREED: return num(f->freed_kb);
	case F_EVENTS: return num((int64_t)f->events);
	case F_LOST: return num((int64_t)f->lost);
	case F_DROPPED: return num((int64_t)f->dropped);
	}
	return num(MR_UNKNOWN);
}

/* The totals since the start: an NDJSON object of type "summary", or a
 * line. */
void mr_report_follow_end(FILE *out, const struct mr_follow_totals *f, const char *when,
			  bool json)
{
	char freed[32];

	if (json) {
		json_object(out, NULL, totals_fields, MR_NELEMS(totals_fields), totals_value, f,
			    "summary", when);
		fputc('\n', out);
		return;
	}
	human_kib(freed, sizeof(freed), f->freed_kb);
	fprintf(out, "%-20s %lu sweep%s (%lu on signals, %lu on pressure, %lu on the timer): %zu "
		"released, %zu failed, %s freed\n", when, f->sweeps, f->sweeps == 1 ? "" : "s",
		f->by_trigger[MR_T_SIGNALS] + f->by_trigger[MR_T_SETTLE] + f->by_trigger[MR_T_LOST],
		f->by_trigger[MR_T_PRESSURE],
		f->by_trigger[MR_T_TIMER], f->released, f->failed, freed);
}
