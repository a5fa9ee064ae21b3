/* report.c: the diagnostics on stderr, and the report on stdout as a text
 * table or as JSON, both driven by one field table per kind of row. JSON
 * carries raw integers (KiB, microseconds) and null for what was not
 * measured; the table humanizes them and sizes each column to its widest
 * cell, as lsns and lsblk do. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
	T_PID, T_COMM, T_RSS_BEFORE, T_RSS_AFTER, T_FREED, T_RELEASE_US, T_STATUS,
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
	C_PATH, C_MEMBERS, C_RELEASED, C_FAILED, C_MEMORY_BEFORE, C_MEMORY_AFTER, C_KILL,
};
static const struct field cgroup_fields[] = {
	[C_PATH] = { "path", "CGROUP", true, V_STR },
	[C_MEMBERS] = { "members", "MEMBERS", false, V_INT },
	[C_RELEASED] = { "released", "RELEASED", false, V_INT },
	[C_FAILED] = { "failed", "FAILED", false, V_INT },
	[C_MEMORY_BEFORE] = { "memory_before_kb", "MEM BEFORE", false, V_KIB },
	[C_MEMORY_AFTER] = { "memory_after_kb", "MEM AFTER", false, V_KIB },
	[C_KILL] = { "kill", "KILL", true, V_STR },
};

enum summary_field {
	S_TARGETS, S_RELEASED, S_EXITED, S_FAILED, S_INTERRUPTED, S_RSS_BEFORE, S_RSS_AFTER,
	S_FREED, S_RELEASED_KB, S_EXITED_KB, S_MEM_AVAILABLE_DELTA, S_ELAPSED_US, S_KILL_US,
	S_NFIELDS
};
static const struct field summary_fields[] = {
	[S_TARGETS] = { "targets", NULL, false, V_INT },
	[S_RELEASED] = { "released", NULL, false, V_INT },
	[S_EXITED] = { "exited", NULL, false, V_INT },
	[S_FAILED] = { "failed", NULL, false, V_INT },
	[S_INTERRUPTED] = { "interrupted", NULL, false, V_INT },
	[S_RSS_BEFORE] = { "rss_before_kb", NULL, false, V_KIB },
	[S_RSS_AFTER] = { "rss_after_kb", NULL, false, V_KIB },
	[S_FREED] = { "freed_kb", NULL, false, V_KIB },
	[S_RELEASED_KB] = { "released_kb", NULL, false, V_KIB },
	[S_EXITED_KB] = { "exited_kb", NULL, false, V_KIB },
	[S_MEM_AVAILABLE_DELTA] = { "mem_available_delta_kb", NULL, false, V_KIB },
	[S_ELAPSED_US] = { "elapsed_us", NULL, false, V_USEC },
	[S_KILL_US] = { "kill_us", NULL, false, V_USEC },
};

struct summary {
	int64_t count[S_NFIELDS];
};

static const char *const status_names[] = {
	[MR_PENDING] = "pending", [MR_RELEASED] = "released", [MR_EXITED] = "exited",
	[MR_FAILED] = "failed", [MR_SKIPPED] = "skipped", [MR_INTERRUPTED] = "interrupted",
};

static const char *const kill_names[] = {
	[MR_CGKILL_NONE] = NULL, [MR_CGKILL_FILE] = "cgroup.kill", [MR_CGKILL_PIDFD] = "pidfd",
};

/* Done, for the exit status: released (and, when --wait asked for it,
 * gone), gone by itself, or measured in a dry run. */
bool mr_target_done(const struct mr_target *t)
{
	return (t->status == MR_RELEASED && t->exited != 0) || t->status == MR_EXITED ||
	       t->status == MR_SKIPPED;
}

static const char *target_strerror(const struct mr_run *run, const struct mr_target *t,
				   char *buf, size_t len)
{
	switch (t->error) {
	case MR_E_NONE: return t->status == MR_INTERRUPTED ? "interrupted" : NULL;
	case MR_E_ERRNO: return strerror(t->errnum);
	case MR_E_OPEN:
		snprintf(buf, len, "cannot open a pidfd: %s", strerror(t->errnum));
		return buf;
	case MR_E_KILL:
		snprintf(buf, len, "cannot kill it: %s", strerror(t->errnum));
		return buf;
	case MR_E_TERM:
		snprintf(buf, len, "cannot send it SIGTERM: %s", strerror(t->errnum));
		return buf;
	case MR_E_NO_PROCESS: return "no such process";
	case MR_E_INIT: return "refusing to release the init process";
	case MR_E_SELF: return "refusing to release mrelease itself";
	case MR_E_ANCESTOR:
		snprintf(buf, len, "refusing to release %s, an ancestor of mrelease (--force "
			 "overrides)", t->comm[0] ? t->comm : "it");
		return buf;
	case MR_E_KTHREAD: return "kernel thread; it has no memory of its own to release";
	case MR_E_THREAD:
		snprintf(buf, len, "a thread of process %d, not a process", (int)t->tgid);
		return buf;
	case MR_E_NOT_EXITING: return "not exiting; use --kill";
	case MR_E_SHARED_MM:
		return "killed, but not released: its address space is shared with a live "
		       "process (vfork or CLONE_VM)";
	case MR_E_NOSYS: return "no process_mrelease here, and it did not exit within the wait";
	case MR_E_INODE:
		snprintf(buf, len, "not the process with pidfs inode %llu; the pid was reused",
			 (unsigned long long)t->want_ino);
		return buf;
	case MR_E_NO_PIDFD:
		return "no pidfd_open here (Linux before 5.3, or a seccomp filter); "
		       "mrelease acts only through pidfds";
	case MR_E_NO_PIDFS: return "pidfds have no inode of their own before Linux 6.9; "
				   "cannot check PID:INODE";
	case MR_E_STUCK:
		if (t->errnum == MR_JOB_OPEN)
			snprintf(buf, len, "opening it did not return in %u s; left behind",
				 run->bound_ms / 1000);
		else
			snprintf(buf, len, "%s did not return in %u s (a task holding its memory "
				 "map's lock stuck in the kernel?); left behind",
				 t->killed ? "killed, but its release" : "its release", run->bound_ms / 1000);
		return buf;
	case MR_E_MEMBERSHIP:
		snprintf(buf, len, "cannot tell whether it is still in its cgroup: %s; not killed "
			 "through its pidfd", strerror(t->errnum));
		return buf;
	}
	return "unknown error";
}

/* Why the figures are null: the file and the error, with a hint for the
 * one error that is easy to misread. */
static const char *measure_strerror(const struct mr_target *t, char *buf, size_t len)
{
	if (!t->proc_file)
		return NULL;
	snprintf(buf, len, "/proc/%d/%s: %s%s", (int)t->pid, t->proc_file,
		 t->proc_errnum == MR_GAVE_UP ? "given up, reading it made no progress" :
						strerror(t->proc_errnum),
		 t->proc_errnum == ENOENT ? " (hidden by hidepid?)" : "");
	return buf;
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

static struct val target_value(const struct mr_run *run, const void *row, int id, bool text,
			       char *buf, size_t len)
{
	const struct mr_target *t = row;

	switch ((enum target_field)id) {
	case T_PID: return num(t->pid);
	case T_COMM: return str(t->comm[0] ? t->comm : NULL);
	case T_STATUS:
		if (text && t->status == MR_RELEASED && t->exited == 0)
			return str("released, running");
		return str(status_names[t->status]);
	case T_ERROR: return str(target_strerror(run, t, buf, len));
	case T_RSS_BEFORE: return num(t->before.rss_kb);
	case T_RSS_AFTER: return num(t->after.rss_kb);
	case T_PSS_BEFORE: return num(t->before.pss_kb);
	case T_ANON_BEFORE: return num(t->before.anon_kb);
	case T_SWAP_BEFORE: return num(t->before.swap_kb);
	case T_FREED: return num(diff(t->before.rss_kb, t->after.rss_kb));
	case T_RELEASE_US: return num(t->release_us);
	case T_CGROUP: return str(t->cgroup >= 0 ? run->cgroups[t->cgroup].path : NULL);
	case T_PIDFD_INODE: return num(t->ino ? (int64_t)t->ino : MR_UNKNOWN);
	case T_EXITED: return num(t->exited < 0 ? MR_UNKNOWN : t->exited);
	case T_MEASURE_ERROR: return str(measure_strerror(t, buf, len));
	}
	return num(MR_UNKNOWN);
}

static struct val cgroup_value(const struct mr_run *run, const void *row, int id, bool text,
			       char *buf, size_t len)
{
	const struct mr_cgroup *c = row;

	(void)run, (void)text, (void)buf, (void)len;
	switch ((enum cgroup_field)id) {
	case C_PATH: return str(c->path);
	case C_MEMBERS: return num((int64_t)c->members);
	case C_RELEASED: return num((int64_t)c->released);
	case C_FAILED: return num((int64_t)c->failed);
	case C_MEMORY_BEFORE: return num(c->memory_before_kb);
	case C_MEMORY_AFTER: return num(c->memory_after_kb);
	case C_KILL: return str(kill_names[c->kill]);
	}
	return num(MR_UNKNOWN);
}

static struct val summary_value(const struct mr_run *run, const void *row, int id, bool text,
				char *buf, size_t len)
{
	(void)run, (void)text, (void)buf, (void)len;
	return num(((const struct summary *)row)->count[id]);
}

static void human_kib(char *buf, size_t len, int64_t kib);

/* The total line of the table, in the targets' columns; under STATUS, who
 * freed what: process_mrelease, or the processes' own exit. */
static struct val total_value(const struct mr_run *run, const void *row, int id, bool text,
			      char *buf, size_t len)
{
	const struct summary *s = row;
	char r[32], e[32];

	(void)run, (void)text;
	switch ((enum target_field)id) {
	case T_PID: return str("total");
	case T_COMM:
		snprintf(buf, len, "%" PRId64 " target%s", s->count[S_TARGETS],
			 s->count[S_TARGETS] == 1 ? "" : "s");
		return str(buf);
	case T_RSS_BEFORE: return num(s->count[S_RSS_BEFORE]);
	case T_RSS_AFTER: return num(s->count[S_RSS_AFTER]);
	case T_FREED: return num(s->count[S_FREED]);
	case T_RELEASE_US: return num(s->count[S_ELAPSED_US]);
	case T_STATUS:
		if (s->count[S_FREED] == MR_UNKNOWN)
			return str("");
		human_kib(r, sizeof(r), s->count[S_RELEASED_KB]);
		human_kib(e, sizeof(e), s->count[S_EXITED_KB]);
		snprintf(buf, len, "released %s, exited %s", r, e);
		return str(buf);
	default: return str("");
	}
}

/* Sums over the targets whose figures are known; null if none is. */
static void add_known(int64_t *sum, int64_t v)
{
	if (v == MR_UNKNOWN)
		return;
	*sum = *sum == MR_UNKNOWN ? v : *sum + v;
}

static void summarize(const struct mr_run *run, struct summary *s)
{
	*s = (struct summary){ 0 };
	s->count[S_RSS_BEFORE] = s->count[S_RSS_AFTER] = s->count[S_FREED] = MR_UNKNOWN;
	s->count[S_TARGETS] = (int64_t)run->ntargets;
	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];
		int64_t freed = diff(t->before.rss_kb, t->after.rss_kb);

		s->count[S_RELEASED] += t->status == MR_RELEASED;
		s->count[S_EXITED] += t->status == MR_EXITED;
		s->count[S_FAILED] += t->status == MR_FAILED;
		s->count[S_INTERRUPTED] += t->status == MR_INTERRUPTED;
		add_known(&s->count[S_RSS_BEFORE], t->before.rss_kb);
		add_known(&s->count[S_RSS_AFTER], t->after.rss_kb);
		add_known(&s->count[S_FREED], freed);
		if (freed != MR_UNKNOWN && t->status == MR_RELEASED)
			s->count[S_RELEASED_KB] += freed;
		if (freed != MR_UNKNOWN && t->status == MR_EXITED)
			s->count[S_EXITED_KB] += freed;
	}
	if (s->count[S_FREED] == MR_UNKNOWN)
		s->count[S_RELEASED_KB] = s->count[S_EXITED_KB] = MR_UNKNOWN;
	s->count[S_MEM_AVAILABLE_DELTA] =
		diff(run->mem_available_after_kb, run->mem_available_before_kb);
	s->count[S_ELAPSED_US] = run->elapsed_us;
	s->count[S_KILL_US] = run->kill_us;
}

/* ---- text ---------------------------------------------------------------- */

/* 1536 KiB -> "1.5M"; whole KiB below 1 MiB. */
static void human_kib(char *buf, size_t len, int64_t kib)
{
	static const char units[] = "KMGTP";
	double v = (double)(kib < 0 ? -kib : kib);
	const char *sign = kib < 0 ? "-" : "";
	int u = 0;

	if (kib == 0) {
		snprintf(buf, len, "0");
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

/* Control characters in a name (C0, DEL, and C1 as UTF-8 writes them)
 * are shown as '?', so that a process or cgroup name cannot drive the
 * terminal. */
static char *sanitize(char *s)
{
	for (unsigned char *p = (unsigned char *)s; p && *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
		else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			p[0] = p[1] = '?';
	}
	return s;
}

/* A name for a diagnostic, made safe in buf. */
static const char *safe(const char *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s);
	return sanitize(buf);
}

/* Text for one cell. */
static char *cell(const struct field *f, struct val v)
{
	char buf[64];

	if (f->type == V_STR || v.str)
		return v.str ? sanitize(strdup(v.str)) : strdup("-");
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
	size_t nfields, ncols, nrows;
	char **cells; /* nrows x nfields, NULL for JSON-only fields */
};

static void table_init(struct table *tb, const struct field *fields, size_t n, size_t rows)
{
	*tb = (struct table){ .fields = fields, .nfields = n };
	tb->cells = calloc((rows + 1) * n, sizeof(*tb->cells));
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
	struct table tb;
	struct summary s;
	char buf[64];

	summarize(run, &s);
	table_init(&tb, target_fields, MR_NELEMS(target_fields), run->ntargets + 1);
	for (size_t i = 0; i < run->ntargets; i++)
		table_add(&tb, run, target_value, &run->targets[i]);
	table_add(&tb, run, total_value, &s);
	table_print(out, &tb);
	if (run->ncgroups) {
		fputc('\n', out);
		table_init(&tb, cgroup_fields, MR_NELEMS(cgroup_fields), run->ncgroups);
		for (size_t i = 0; i < run->ncgroups; i++)
			table_add(&tb, run, cgroup_value, &run->cgroups[i]);
		table_print(out, &tb);
	}
	if (s.count[S_MEM_AVAILABLE_DELTA] != MR_UNKNOWN) {
		human_kib(buf, sizeof(buf), s.count[S_MEM_AVAILABLE_DELTA]);
		fprintf(out, "MemAvailable change: %s%s\n",
			s.count[S_MEM_AVAILABLE_DELTA] > 0 ? "+" : "", buf);
	}
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_object(FILE *out, const struct mr_run *run, const struct field *fields,
			size_t n, getter_fn get, const void *row)
{
	char buf[4096];

	fputc('{', out);
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
	struct summary s;

	summarize(run, &s);
	fputs("{\"targets\":[", out);
	for (size_t i = 0; i < run->ntargets; i++) {
		fputs(i ? ",\n" : "\n", out);
		json_object(out, run, target_fields, MR_NELEMS(target_fields), target_value,
			    &run->targets[i]);
	}
	fputs("],\n\"cgroups\":[", out);
	for (size_t i = 0; i < run->ncgroups; i++) {
		fputs(i ? ",\n" : "\n", out);
		json_object(out, run, cgroup_fields, MR_NELEMS(cgroup_fields), cgroup_value,
			    &run->cgroups[i]);
	}
	fputs("],\n\"summary\":", out);
	json_object(out, run, summary_fields, MR_NELEMS(summary_fields), summary_value, &s);
	fputs("}\n", out);
}

/* ---- diagnostics ------------------------------------------------------- */

static const char *cgroup_path(const struct mr_run *run, int c, char *buf, size_t len)
{
	return safe(c >= 0 && (size_t)c < run->ncgroups ? run->cgroups[c].path : "?", buf, len);
}

static const char *const pidfd_why[] = {
	[MR_WHY_PROTECTED] = "it holds mrelease, pid 1 or an ancestor of mrelease",
	[MR_WHY_V1] = "cgroup v1 has no cgroup.kill",
	[MR_WHY_NO_RECURSIVE] = "cgroup.kill takes the descendants too (--no-recursive)",
	[MR_WHY_GRACE] = "--grace sends SIGTERM first",
};

/* One note, or nothing when it is for --verbose only and that is off. */
static void note(const struct mr_run *run, const struct mr_note *n, bool verbose)
{
	char cgbuf[4200], comm[MR_COMM_LEN];
	const char *cg = cgroup_path(run, n->cgroup, cgbuf, sizeof(cgbuf));

	switch (n->kind) {
	case MR_N_NOSYS:
		warnx("process_mrelease is not available (Linux before 5.15, or a seccomp "
		      "filter); waited for the targets to exit instead");
		return;
	case MR_N_INTERRUPTED:
		if (n->why)
			warnx("interrupted while waiting; reporting what was done");
		else
			warnx("interrupted with %zu target%s unfinished; reporting what was done",
			      n->n, n->n == 1 ? "" : "s");
		return;
	case MR_N_GRACE_CUT:
		warnx("the grace was cut short by a signal; killing now");
		return;
	case MR_N_FIGURES_STALLED:
		warnx("gave up the figures of %zu target%s: reading them made no progress "
		      "(a process stuck while holding its mmap_lock?)", n->n, n->n == 1 ? "" : "s");
		return;
	default:
		break;
	}
	if (!verbose)
		return;
	switch (n->kind) {
	case MR_N_THREADS:
		if (n->n)
			warnx("releasing %zu target%s on %zu thread%s", run->ntargets,
			      run->ntargets == 1 ? "" : "s", n->n, n->n == 1 ? "" : "s");
		else
			warnx("releasing %zu target%s on the main thread", run->ntargets,
			      run->ntargets == 1 ? "" : "s");
		break;
	case MR_N_THREADS_SHORT:
		warnx("only %zu worker thread%s could be started: %s", n->n, n->n == 1 ? "" : "s",
		      strerror(n->errnum));
		break;
	case MR_N_LEFT_OUT:
		if (n->why == MR_E_SELF)
			warnx("cgroup %s: leaving out pid %d, mrelease itself", cg, (int)n->pid);
		else if (n->why == MR_E_INIT)
			warnx("cgroup %s: leaving out pid 1", cg);
		else if (n->why == MR_E_KTHREAD)
			warnx("cgroup %s: leaving out pid %d, a kernel thread", cg, (int)n->pid);
		else
			warnx("cgroup %s: leaving out pid %d (%s), an ancestor of mrelease", cg,
			      (int)n->pid, safe(n->comm, comm, sizeof(comm)));
		break;
	case MR_N_CGKILL: warnx("cgroup %s: killed with cgroup.kill", cg); break;
	case MR_N_CGKILL_PIDFD:
		warnx("cgroup %s: killing each process through its pidfd: %s", cg,
		      pidfd_why[n->why]);
		break;
	case MR_N_CGKILL_FAILED:
		warnx("cgroup %s: cgroup.kill: %s; killing each process through its pidfd", cg,
		      strerror(n->errnum));
		break;
	case MR_N_LATE_FORK:
		if (n->why)
			warnx("cgroup %s: pid %d, forked by a member after the kill began, is "
			      "killed too", cg, (int)n->pid);
		else
			warnx("cgroup %s: pid %d was forked before the kill; killing it too", cg,
			      (int)n->pid);
		break;
	case MR_N_REUSED:
		warnx("cgroup %s: pid %d went to a newer process since the listing; left alone",
		      cg, (int)n->pid);
		break;
	case MR_N_OUTSIDE:
		warnx("cgroup %s: cgroup.kill also killed %zu member%s outside this pid "
		      "namespace, not reported here", cg, n->n, n->n == 1 ? "" : "s");
		break;
	case MR_N_STUCK:
		warnx("%zu target%s did not return from %s in %u s; left behind", n->n,
		      n->n == 1 ? "" : "s", n->why == MR_JOB_OPEN ? "opening" : "their release",
		      run->bound_ms / 1000);
		break;
	case MR_N_LATE_ARRIVAL:
		warnx("cgroup %s: pid %d started after the kill began; left alone", cg,
		      (int)n->pid);
		break;
	case MR_N_MOVED_IN:
		warnx("cgroup %s: pid %d moved in after the listing; left alone", cg, (int)n->pid);
		break;
	case MR_N_NO_RESCAN:
		warnx("cgroup %s: no pidfs watermarks (Linux before 6.9, or no thread for them): "
		      "of the processes forked before the kill, only children of killed members "
		      "are found", cg);
		break;
	case MR_N_RESCAN_FAILED:
		warnx("cgroup %s: cannot list it again for late forks: %s", cg,
		      strerror(n->errnum));
		break;
	case MR_N_BATCHES:
		warnx("short of file descriptors: working in %zu batches", n->n);
		break;
	case MR_N_STALLED:
		warnx("no target got anywhere for a while: started another worker thread");
		break;
	case MR_N_RETRIES: warnx("process_mrelease was retried %zu times", n->n); break;
	default: break;
	}
}

/* stderr: the notes, then one line for each target that failed, or whose
 * figures could not be read, then whether anything was selected at all. */
void mr_report_diagnostics(const struct mr_run *run, bool verbose)
{
	char buf[512], msg[512];

	for (size_t i = 0; i < run->nnotes; i++)
		note(run, &run->notes[i], verbose);
	for (size_t i = 0; i < run->ntargets; i++) {
		const struct mr_target *t = &run->targets[i];

		if (t->status == MR_FAILED)
			warnx("pid %d: %s", (int)t->pid,
			      safe(target_strerror(run, t, buf, sizeof(buf)), msg, sizeof(msg)));
		else if (t->status == MR_RELEASED && t->exited == 0 && !run->interrupted)
			warnx("pid %d: released, but still running after the wait (stuck in the "
			      "kernel?)", (int)t->pid);
		else if (t->proc_file && t->status != MR_INTERRUPTED)
			warnx("pid %d: no memory figures: %s", (int)t->pid,
			      measure_strerror(t, buf, sizeof(buf)));
	}
	if (!run->ntargets)
		warnx("no process selected");
}
