/* parse.c: strict parsers for numbers, pids and CPU lists.
 * A value is accepted only when the whole string is a number in range,
 * in the spirit of OpenBSD's strtonum(3). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mrelease.h"

int mr_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	/* strtol skips leading blanks and takes a sign; we take only a sign. */
	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Seconds as "N" or "N.F" with up to three decimals, 0 to max_s, into
 * milliseconds. -EDOM: more than three decimals. */
int mr_parse_seconds(const char *s, unsigned int max_s, unsigned int *ms)
{
	const char *dot = s ? strchr(s, '.') : NULL;
	char whole[16];
	long v, frac = 0;
	size_t len;
	int r;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	if (!dot) {
		if ((r = mr_parse_long(s, 0, max_s, &v)))
			return r;
		*ms = (unsigned int)v * 1000;
		return 0;
	}
	len = (size_t)(dot - s);
	if (len >= sizeof(whole) || !dot[1])
		return -EINVAL;
	if (strlen(dot + 1) > 3 && strspn(dot + 1, "0123456789") == strlen(dot + 1))
		return -EDOM;
	if (strlen(dot + 1) > 3)
		return -EINVAL;
	memcpy(whole, s, len);
	whole[len] = '\0';
	for (const char *p = dot + 1; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		frac = frac * 10 + (*p - '0');
	}
	for (size_t i = strlen(dot + 1); i < 3; i++)
		frac *= 10;
	if ((r = mr_parse_long(whole, 0, max_s, &v)))
		return r;
	if (v == max_s && frac)
		return -ERANGE;
	*ms = (unsigned int)(v * 1000 + frac);
	return 0;
}

int mr_parse_pid(const char *s, pid_t *pid)
{
	long v;
	int r;

	/* A leading '+' or '-' is not part of a pid. */
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	r = mr_parse_long(s, 1, MR_PID_MAX, &v);
	if (r == 0)
		*pid = (pid_t)v;
	return r;
}

/* "PID" or "PID:INODE", as util-linux kill(1) takes them. */
int mr_parse_pidspec(const char *s, struct mr_pidspec *spec)
{
	char pid[16], *end;
	const char *colon = strchr(s, ':');
	unsigned long long ino;
	size_t len;
	int r;

	spec->ino = 0;
	spec->stdin = false;
	if (!colon)
		return mr_parse_pid(s, &spec->pid);
	len = (size_t)(colon - s);
	if (len >= sizeof(pid))
		return -ERANGE;
	memcpy(pid, s, len);
	pid[len] = '\0';
	if ((r = mr_parse_pid(pid, &spec->pid)))
		return r;
	if (!isdigit((unsigned char)colon[1]))
		return -EINVAL;
	errno = 0;
	ino = strtoull(colon + 1, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || ino == 0)
		return -ERANGE;
	spec->ino = ino;
	return 0;
}

/* The standard signals, 1 to 31, by number or by name as kill -l writes it
 * ("TERM"), in any case, with or without "SIG". */
int mr_parse_signal(const char *s, int *sig)
{
	long v;

	if (s && mr_parse_long(s, 1, 31, &v) == 0) {
		*sig = (int)v;
		return 0;
	}
	if (!s || !*s || isdigit((unsigned char)*s))
		return -EINVAL;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int i = 1; i <= 31; i++) {
		if (strcasecmp(s, sigabbrev_np(i)) == 0) {
			*sig = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* "TERM" for SIGTERM; NULL for 0. */
const char *mr_signal_name(int sig)
{
	return sig ? sigabbrev_np(sig) : NULL;
}

static int parse_cpu(const char **p, long *cpu)
{
	char *end;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	*cpu = strtol(*p, &end, 10);
	if (errno == ERANGE || *cpu >= CPU_SETSIZE)
		return -ERANGE;
	*p = end;
	return 0;
}

/* The kernel's cpulist format: "0,2-3,8-15". Every CPU must fit in a
 * cpu_set_t; whether it exists is for the caller to check. */
int mr_parse_cpulist(const char *s, cpu_set_t *set)
{
	const char *p = s;
	long lo, hi;
	int r;

	CPU_ZERO(set);
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		if ((r = parse_cpu(&p, &lo)))
			return r;
		hi = lo;
		if (*p == '-') {
			p++;
			if ((r = parse_cpu(&p, &hi)))
				return r;
			if (hi < lo)
				return -EINVAL;
		}
		for (long c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (*p == '\0')
			return 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}

int mr_cpus_online(cpu_set_t *set)
{
	char buf[4096];
	size_t n;
	FILE *f;
	int r;

	f = fopen("/sys/devices/system/cpu/online", "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	r = ferror(f) ? -EIO : 0;
	fclose(f);
	if (r)
		return r;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return mr_parse_cpulist(buf, set);
}

/* At most as many entries as there can be pids: a stream of duplicates
 * cannot make the list grow without end. */
int mr_pidlist_add(struct mr_pidlist *l, struct mr_pidspec spec)
{
	if (l->len >= MR_PID_MAX)
		return -ENOSPC;
	if (l->len == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct mr_pidspec *v = reallocarray(l->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->len++] = spec;
	return 0;
}

/* Read whitespace-separated pids (or PID:INODE) from in, marked as read
 * from standard input or not. A word longer than any of them is refused
 * without reading it whole, so the input cannot grow our memory
 * beyond the pid list itself. On -EINVAL or -ERANGE the offending word is
 * left in bad, as it was read; on -EILSEQ (a NUL) what came before the NUL;
 * on -E2BIG (a word too long) its start. -ENOSPC: more than MR_PID_MAX
 * pids. */
int mr_pidlist_read(struct mr_pidlist *l, FILE *in, bool from_stdin, char *bad, size_t badlen)
{
	char word[32]; /* "4194304:" and a 64-bit inode */
	struct mr_pidspec spec;
	size_t len = 0;
	int c, r;

	for (;;) {
		c = getc(in);
		/* A NUL would end the word early and let what follows it pass. */
		if (c == '\0') {
			word[len] = '\0';
			snprintf(bad, badlen, "%s", word);
			return -EILSEQ;
		}
		if (c != EOF && !isspace(c)) {
			if (len == sizeof(word) - 1) {
				word[len] = '\0';
				snprintf(bad, badlen, "%s", word);
				return -E2BIG;
			}
			word[len++] = (char)c;
			continue;
		}
		if (len) {
			word[len] = '\0';
			len = 0;
			if ((r = mr_parse_pidspec(word, &spec))) {
				snprintf(bad, badlen, "%s", word);
				return r;
			}
			spec.stdin = from_stdin;
			if ((r = mr_pidlist_add(l, spec)))
				return r;
		}
		if (c == EOF)
			return ferror(in) ? -EIO : 0;
	}
}

static int by_pid_ino(const void *x, const void *y)
{
	const struct mr_pidspec *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	if (a->ino != b->ino)
		return (a->ino > b->ino) - (a->ino < b->ino);
	/* The command line before standard input: it names a pid on purpose. */
	return (int)a->stdin - (int)b->stdin;
}

/* Sort l by pid, and find a pid named twice with two different guards
 * (PID and PID:INODE, or two inodes): which one was meant cannot be told.
 * 0; -EINVAL with the two in *a and *b. */
int mr_pidlist_check(struct mr_pidlist *l, struct mr_pidspec *a, struct mr_pidspec *b)
{
	if (l->len)
		qsort(l->v, l->len, sizeof(*l->v), by_pid_ino);
	for (size_t i = 1; i < l->len; i++) {
		if (l->v[i].pid == l->v[i - 1].pid && l->v[i].ino != l->v[i - 1].ino) {
			*a = l->v[i - 1];
			*b = l->v[i];
			return -EINVAL;
		}
	}
	return 0;
}

void mr_pidlist_free(struct mr_pidlist *l)
{
	free(l->v);
	*l = (struct mr_pidlist){ 0 };
}
