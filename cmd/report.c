/* report.c: the text table and the JSON document, both driven by one field
 * table per kind of row. JSON carries raw integers (KiB, microseconds) and
 * null for what was not measured; the table humanizes them. */
#define _GNU_SOURCE
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum vtype { V_INT, V_KIB, V_USEC, V_STR };

struct field {
	const char *key;    /* JSON key */
	const char *header; /* table header, or NULL: JSON only */
	int width;          /* negative: left-aligned */
	enum vtype type;
};

/* A value: a string, or a number; MR_UNKNOWN and NULL strings are null. */
struct val {
	int64_t num;
	const char *str;
};

typedef struct val (*getter_fn)(const struct mr_run *run, const void *row, int id,
				 char *buf, size_t len);

enum target_field {
	T_PID, T_COMM, T_RSS_BEFORE, T_RSS_AFTER, T_FREED, T_RELEASE_US, T_STATUS,
	T_ERROR, T_PSS_BEFORE, T_ANON_BEFORE, T_SWAP_BEFORE, T_CGROUP, T_PIDFD_INODE,
};
static const struct field target_fields[] = {
	[T_PID] = { "pid", "PID", 7, V_INT },
	[T_COMM] = { "comm", "COMM", -15, V_STR },
	[T_RSS_BEFORE] = { "rss_before_kb", "RSS BEFORE", 10, V_KIB },
	[T_RSS_AFTER] = { "rss_after_kb", "RSS AFTER", 9, V_KIB },
	[T_FREED] = { "freed_kb", "FREED", 8, V_KIB },
	[T_RELEASE_US] = { "release_us", "TIME", 8, V_USEC },
	[T_STATUS] = { "status", "STATUS", -8, V_STR },
	[T_ERROR] = { "error", NULL, 0, V_STR },
	[T_PSS_BEFORE] = { "pss_before_kb", NULL, 0, V_KIB },
	[T_ANON_BEFORE] = { "anon_before_kb", NULL, 0, V_KIB },
	[T_SWAP_BEFORE] = { "swap_before_kb", NULL, 0, V_KIB },
	[T_CGROUP] = { "cgroup", NULL, 0, V_STR },
	[T_PIDFD_INODE] = { "pidfd_inode", NULL, 0, V_INT },
};

enum cgroup_field {
	C_PATH, C_MEMBERS, C_RELEASED, C_FAILED, C_MEMORY_BEFORE, C_MEMORY_AFTER,
};
static const struct field cgroup_fields[] = {
	[C_PATH] = { "path", "CGROUP", -30, V_STR },
	[C_MEMBERS] = { "members", "MEMBERS", 7, V_INT },
	[C_RELEASED] = { "released", "RELEASED", 8, V_INT },
	[C_FAILED] = { "failed", "FAILED", 6, V_INT },
	[C_MEMORY_BEFORE] = { "memory_before_kb", "MEM BEFORE", 10, V_KIB },
	[C_MEMORY_AFTER] = { "memory_after_kb", "MEM AFTER", 9, V_KIB },
};

enum summary_field {
	S_TARGETS, S_RELEASED, S_EXITED, S_FAILED, S_RSS_BEFORE, S_RSS_AFTER, S_FREED,
	S_MEM_AVAILABLE_DELTA, S_ELAPSED_US,
};
static const struct field summary_fields[] = {
	[S_TARGETS] = { "targets", NULL, 0, V_INT },
	[S_RELEASED] = { "released", NULL, 0, V_INT },
	[S_EXITED] = { "exited", NULL, 0, V_INT },
	[S_FAILED] = { "failed", NULL, 0, V_INT },
	[S_RSS_BEFORE] = { "rss_before_kb", NULL, 0, V_KIB },
	[S_RSS_AFTER] = { "rss_after_kb", NULL, 0, V_KIB },
	[S_FREED] = { "freed_kb", NULL, 0, V_KIB },
	[S_MEM_AVAILABLE_DELTA] = { "mem_available_delta_kb", NULL, 0, V_KIB },
	[S_ELAPSED_US] = { "elapsed_us", NULL, 0, V_USEC },
};

struct summary {
	int64_t count[S_ELAPSED_US + 1];
};

static const char *const status_names[] = {
	[MR_PENDING] = "pending", [MR_RELEASED] = "released", [MR_EXITED] = "exited",
	[MR_FAILED] = "failed", [MR_SKIPPED] = "skipped",
};

const char *mr_status_name(enum mr_status s)
{
	return status_names[s];
}

const char *mr_target_strerror(const struct mr_target *t, char *buf, size_t len)
{
	switch (t->error) {
	case MR_E_NONE: return NULL;
	case MR_E_ERRNO: return strerror(t->errnum);
	case MR_E_NO_PROCESS: return "no such process";
	case MR_E_INIT: return "refusing to release the init process";
	case MR_E_SELF: return "refusing to release mrelease itself";
	case MR_E_KTHREAD: return "kernel thread; it has no memory of its own to release";
	case MR_E_THREAD:
		snprintf(buf, len, "a thread of process %d, not a process", (int)t->tgid);
		return buf;
	case MR_E_NOT_EXITING: return "not exiting; use --kill";
	case MR_E_SHARED_MM:
		return "killed, but not released: its address space is shared with a live "
		       "process (vfork or CLONE_VM)";
	case MR_E_UNREADABLE:
		snprintf(buf, len, "cannot read its memory figures: %s", strerror(t->errnum));
		return buf;
	case MR_E_TIMEOUT: return "still running after the wait";
	case MR_E_NOSYS: return "no process_mrelease here, and it did not exit within the wait";
	case MR_E_INODE:
		snprintf(buf, len, "not the process with pidfs inode %llu; the pid was reused",
			 (unsigned long long)t->want_ino);
		return buf;
	case MR_E_PROC: return "alive, but not to be read in /proc (mounted with hidepid?)";
	case MR_E_NO_PIDFD:
		return "no pidfd_open here (Linux before 5.3, or a seccomp filter); "
		       "mrelease acts only through pidfds";
	case MR_E_NO_PIDFS: return "pidfds have no inode of their own before Linux 6.9; "
				   "cannot check PID:INODE";
	}
	return "unknown error";
}

static int64_t diff(int64_t a, int64_t b)
{
	return a == MR_UNKNOWN || b == MR_UNKNOWN ? MR_UNKNOWN : a - b;
}

static struct val target_value(const struct mr_run *run, const void *row, int id, char *buf,
			       size_t len)
{
	const struct mr_target *t = row;

	switch ((enum target_field)id) {
	case T_PID: return (struct val){ .num = t->pid };
	case T_COMM: return (struct val){ .str = t->comm[0] ? t->comm : NULL };
	case T_STATUS: return (struct val){ .str = mr_status_name(t->status) };
	case T_ERROR: return (struct val){ .str = mr_target_strerror(t, buf, len) };
	case T_RSS_BEFORE: return (struct val){ .num = t->before.rss_kb };
	case T_RSS_AFTER: return (struct val){ .num = t->after.rss_kb };
	case T_PSS_BEFORE: return (struct val){ .num = t->before.pss_kb };
	case T_ANON_BEFORE: return (struct val){ .num = t->before.anon_kb };
	case T_SWAP_BEFORE: return (struct val){ .num = t->before.swap_kb };
	case T_FREED: return (struct val){ .num = diff(t->before.rss_kb, t->after.rss_kb) };
	case T_RELEASE_US: return (struct val){ .num = t->release_us };
	case T_CGROUP:
		return (struct val){ .str = t->cgroup >= 0 ? run->cgroups[t->cgroup].path : NULL };
	case T_PIDFD_INODE: return (struct val){ .num = t->ino ? (int64_t)t->ino : MR_UNKNOWN };
	}
	return (struct val){ .num = MR_UNKNOWN };
}

static struct val cgroup_value(const struct mr_run *run, const void *row, int id, char *buf,
			       size_t len)
{
	const struct mr_cgroup *c = row;

	(void)run, (void)buf, (void)len;
	switch ((enum cgroup_field)id) {
	case C_PATH: return (struct val){ .str = c->path };
	case C_MEMBERS: return (struct val){ .num = (int64_t)c->members };
	case C_RELEASED: return (struct val){ .num = (int64_t)c->released };
	case C_FAILED: return (struct val){ .num = (int64_t)c->failed };
	case C_MEMORY_BEFORE: return (struct val){ .num = c->memory_before_kb };
	case C_MEMORY_AFTER: return (struct val){ .num = c->memory_after_kb };
	}
	return (struct val){ .num = MR_UNKNOWN };
}

static struct val summary_value(const struct mr_run *run, const void *row, int id, char *buf,
				size_t len)
{
	(void)run, (void)buf, (void)len;
	return (struct val){ .num = ((const struct summary *)row)->count[id] };
}

/* The total line of the table, in the targets' columns. */
static struct val total_value(const struct mr_run *run, const void *row, int id, char *buf,
			      size_t len)
{
	const struct summary *s = row;

	(void)run;
	switch ((enum target_field)id) {
	case T_PID: return (struct val){ .str = "total" };
	case T_COMM:
		snprintf(buf, len, "%" PRId64 " target%s", s->count[S_TARGETS],
			 s->count[S_TARGETS] == 1 ? "" : "s");
		return (struct val){ .str = buf };
	case T_RSS_BEFORE: return (struct val){ .num = s->count[S_RSS_BEFORE] };
	case T_RSS_AFTER: return (struct val){ .num = s->count[S_RSS_AFTER] };
	case T_FREED: return (struct val){ .num = s->count[S_FREED] };
	case T_RELEASE_US: return (struct val){ .num = s->count[S_ELAPSED_US] };
	default: return (struct val){ .str = "" };
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

		s->count[S_RELEASED] += t->status == MR_RELEASED;
		s->count[S_EXITED] += t->status == MR_EXITED;
		s->count[S_FAILED] += t->status == MR_FAILED;
		add_known(&s->count[S_RSS_BEFORE], t->before.rss_kb);
		add_known(&s->count[S_RSS_AFTER], t->after.rss_kb);
		add_known(&s->count[S_FREED], diff(t->before.rss_kb, t->after.rss_kb));
	}
	s->count[S_MEM_AVAILABLE_DELTA] =
		diff(run->mem_available_after_kb, run->mem_available_before_kb);
	s->count[S_ELAPSED_US] = run->elapsed_us;
}

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

/* Text for one cell; control characters in names are shown as '?', so a
 * process name cannot drive the terminal. */
static const char *cell(const struct field *f, struct val v, char *buf, size_t len)
{
	if (f->type == V_STR || v.str) {
		if (!v.str)
			return "-";
		snprintf(buf, len, "%s", v.str);
		for (char *p = buf; *p; p++)
			if (iscntrl((unsigned char)*p))
				*p = '?';
		return buf;
	}
	if (v.num == MR_UNKNOWN)
		return "-";
	if (f->type == V_KIB)
		human_kib(buf, len, v.num);
	else if (f->type == V_USEC)
		human_usec(buf, len, v.num);
	else
		snprintf(buf, len, "%" PRId64, v.num);
	return buf;
}

static void text_row(FILE *out, const struct mr_run *run, const struct field *fields, size_t n,
		     getter_fn get, const void *row)
{
	char vbuf[4096], cbuf[4096];
	const char *sep = "";

	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		const char *s;

		if (!f->header)
			continue;
		if (row)
			s = cell(f, get(run, row, (int)i, vbuf, sizeof(vbuf)), cbuf, sizeof(cbuf));
		else
			s = f->header;
		/* The last column is not padded, nor followed by blanks. */
		if (i + 1 < n && fields[i + 1].header)
			fprintf(out, "%s%*s", sep, f->width, s);
		else if (*s)
			fprintf(out, "%s%s", sep, s);
		sep = " ";
	}
	fputc('\n', out);
}

void mr_report_text(FILE *out, const struct mr_run *run)
{
	struct summary s;
	char buf[64];

	summarize(run, &s);
	text_row(out, run, target_fields, MR_NELEMS(target_fields), target_value, NULL);
	for (size_t i = 0; i < run->ntargets; i++)
		text_row(out, run, target_fields, MR_NELEMS(target_fields), target_value,
			 &run->targets[i]);
	text_row(out, run, target_fields, MR_NELEMS(target_fields), total_value, &s);
	if (run->ncgroups) {
		fputc('\n', out);
		text_row(out, run, cgroup_fields, MR_NELEMS(cgroup_fields), cgroup_value, NULL);
		for (size_t i = 0; i < run->ncgroups; i++)
			text_row(out, run, cgroup_fields, MR_NELEMS(cgroup_fields), cgroup_value,
				 &run->cgroups[i]);
	}
	if (s.count[S_MEM_AVAILABLE_DELTA] != MR_UNKNOWN) {
		human_kib(buf, sizeof(buf), s.count[S_MEM_AVAILABLE_DELTA]);
		fprintf(out, "MemAvailable change: %s%s\n",
			s.count[S_MEM_AVAILABLE_DELTA] > 0 ? "+" : "", buf);
	}
}

/* Length of the valid UTF-8 sequence at p, or 0: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p)
{
	size_t len;
	unsigned int cp;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* Valid UTF-8 passes as it is. A process or cgroup name need not be UTF-8:
 * each byte of an invalid sequence becomes \u00XX, as is each control
 * character, so the document stays valid. */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t len = *p < 0x80 ? 1 : utf8_len(p);

		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f || len == 0)
			fprintf(out, "\\u%04x", *p);
		else
			fwrite(p, 1, len, out);
		p += len ? len : 1;
	}
	fputc('"', out);
}

static void json_object(FILE *out, const struct mr_run *run, const struct field *fields,
			size_t n, getter_fn get, const void *row)
{
	char buf[4096];

	fputc('{', out);
	for (size_t i = 0; i < n; i++) {
		struct val v = get(run, row, (int)i, buf, sizeof(buf));

		fprintf(out, "%s\"%s\":", i ? "," : "", fields[i].key);
		if (fields[i].type == V_STR)
			v.str ? json_string(out, v.str) : (void)fputs("null", out);
		else if (v.num == MR_UNKNOWN)
			fputs("null", out);
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
