/* metrics.c: --metrics FILE, the counters of --follow in Prometheus's text
 * format, as node_exporter's textfile collector reads it. The file is
 * written whole to a temporary file beside it, whose name does not end in
 * .prom (the collector reads only those), and renamed over it: a reader
 * sees the old file or the new one, never half of one (no fsync: the file
 * is current state, not a record to survive a crash). Mode 0644, whatever
 * the umask: the collector runs as another user.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* One metric: its name, type and help, as the format has them. */
static void metric(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counters(FILE *f, const struct mr_follow_totals *t, const struct mr_follow_start *st)
{
	metric(f, "mrelease_released_total", "counter",
	       "Processes whose memory mrelease released.");
	fprintf(f, "mrelease_released_total %zu\n", t->released);
	metric(f, "mrelease_failed_total", "counter",
	       "Dying processes mrelease could not release.");
	fprintf(f, "mrelease_failed_total %zu\n", t->failed);
	metric(f, "mrelease_freed_bytes_total", "counter",
	       "Memory the releases freed: resident set before, less after.");
	fprintf(f, "mrelease_freed_bytes_total %lld\n", (long long)t->freed_kb * 1024);
	metric(f, "mrelease_sweeps_total", "counter",
	       "Sweeps, by what woke them (signals: the processes seen killed; lost: SIGKILLs "
	       "the kernel dropped, so every process was looked at).");
	for (int i = 0; i < MR_T_COUNT; i++)
		fprintf(f, "mrelease_sweeps_total{trigger=\"%s\"} %lu\n", mr_trigger_names[i],
			t->by_trigger[i]);
	metric(f, "mrelease_signal_events_total", "counter", "SIGKILLs seen on the host.");
	fprintf(f, "mrelease_signal_events_total %llu\n", (unsigned long long)t->events);
	metric(f, "mrelease_signal_events_lost_total", "counter",
	       "SIGKILLs the kernel could not report: its ring buffer was full.");
	fprintf(f, "mrelease_signal_events_lost_total %llu\n", (unsigned long long)t->lost);
	metric(f, "mrelease_source_up", "gauge",
	       "Whether a source wakes the sweeps (1) or was declined (0).");
	for (int i = 0; i < MR_SRC_COUNT; i++)
		fprintf(f, "mrelease_source_up{source=\"%s\"} %d\n", mr_source_names[i],
			st->used[i]);
}

/* 0, or -errno with FILE as it was. */
int mr_metrics_write(const char *path, const struct mr_follow_totals *t,
		     const struct mr_follow_start *st)
{
	char *tmp = NULL;
	FILE *f = NULL;
	int fd = -1, r = 0;

	if (asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return -ENOMEM;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0 ||
	    fchmod(fd, 0644) || !(f = fdopen(fd, "w"))) {
		r = -errno;
		goto out;
	}
	fd = -1;
	counters(f, t, st);
	if (fflush(f) == EOF || ferror(f))
		r = -(errno ? errno : EIO);
	if (fclose(f) == EOF && !r)
		r = -errno;
	f = NULL;
	if (!r && rename(tmp, path))
		r = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (r)
		unlink(tmp);
	free(tmp);
	return r;
}
