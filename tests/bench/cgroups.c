/* cgroups.c: the cgroups mr-bench makes -- a v2 cgroup for --cgroup and
 * cgroup.kill, a v1 freezer to hold victims, a v1 memory cgroup to meter
 * them -- and the meter itself.  Each is named mr-bench.<pid>.<slot> and
 * removed on every exit path (kids.c's clean-up calls cg_remove_all). */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"

#define MAX_CGROUPS 8

static struct cgdir cgdirs[MAX_CGROUPS];

/* Make mr-bench.<pid>.<slot> under mount and remember it for clean-up. */
struct cgdir *cg_create(const char *mount, enum cg_kind kind)
{
	for (int i = 0; i < MAX_CGROUPS; i++) {
		struct cgdir *cg = &cgdirs[i];

		if (cg->used)
			continue;
		snprintf(cg->path, sizeof(cg->path), "%s/mr-bench.%d.%d", mount, getpid(), i);
		if (mkdir(cg->path, 0755))
			err(EXIT_FATAL, "mkdir %s", cg->path);
		cg->used = true;
		cg->kind = kind;
		cg->dirfd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg->dirfd < 0)
			err(EXIT_FATAL, "%s", cg->path);
		return cg;
	}
	errx(EXIT_FATAL, "more than %d cgroups", MAX_CGROUPS);
}

/* A v1-frozen task stays frozen even when killed, so thaw before reaping.
 * (A fatal signal passes through a v2 freeze; mrelease no longer freezes,
 * but an older build might have left cgroup.freeze set on its way out.) */
void cg_thaw(struct cgdir *cg)
{
	if (!cg || !cg->used)
		return;
	if (cg->kind == CG_FREEZER)
		mr_write_file(cg->path, "freezer.state", "THAWED", NULL);
	else if (cg->kind == CG_V2)
		mr_write_file(cg->path, "cgroup.freeze", "0", NULL);
}

/* FREEZING until every task has stopped, then FROZEN. */
int cg_freeze(struct cgdir *cg, int64_t deadline)
{
	char state[64];
	int e = mr_write_file(cg->path, "freezer.state", "FROZEN", NULL);

	if (e)
		return e;
	while (mr_now_us() < deadline) {
		if (mr_read_fileat(cg->dirfd, "freezer.state", state, sizeof(state)) > 0 &&
		    !strncmp(state, "FROZEN", 6))
			return 0;
		sleep_us(US_PER_MS);
	}
	return -ETIMEDOUT;
}

/* rmdir succeeds once the last member has been reaped; give stragglers a
 * moment, then complain rather than hang. */
void cg_remove(struct cgdir *cg)
{
	if (!cg || !cg->used)
		return;
	cg_thaw(cg);
	close(cg->dirfd);
	cg->dirfd = -1;
	for (int i = 0; i < 200; i++) {
		if (!rmdir(cg->path) || errno == ENOENT) {
			cg->used = false;
			return;
		}
		if (errno != EBUSY)
			break;
		usleep(10000);
	}
	warn("cannot remove cgroup %s", cg->path);
	cg->used = false;
}

void cg_thaw_all(void)
{
	for (int i = 0; i < MAX_CGROUPS; i++)
		cg_thaw(&cgdirs[i]);
}

void cg_remove_all(void)
{
	for (int i = 0; i < MAX_CGROUPS; i++)
		cg_remove(&cgdirs[i]);
}

/* ---- when is the memory back? ----
 *
 * /proc/PID/status cannot tell: exit_mm() clears task->mm, and with it the
 * VmRSS line, before mmput() frees the pages, so the line goes within a
 * millisecond of a SIGKILL while freeing 1 GiB takes as long as munmap().
 * And a starved victim can clear task->mm while mrelease is reaping it;
 * then the memory is free long before the victim exits.  So the victims
 * of each scenario join a cgroup-v1 memory cgroup, whose anonymous RSS
 * (memory.stat total_rss: mapped anonymous pages, this cgroup and below)
 * does not depend on task->mm; the memory is back when it is under 1 % of
 * what the victims touched.  Without a v1 memory controller the timed
 * scenarios are not run at all rather than timed by a wrong clock. */

/* Whether this machine has what a timed scenario needs: always the v1
 * memory controller for the meter, and a v1 freezer or cgroup2 where
 * asked; false with sc->why set if not. */
bool cg_available(const struct bench *b, struct scenario *sc, bool freezer, bool v2)
{
	if (!b->v1_memory[0])
		snprintf(sc->why, sizeof(sc->why),
			 "no cgroup-v1 memory controller in /proc/self/mountinfo: nothing tells "
			 "when the memory is back (VmRSS goes before the pages are free)");
	else if (freezer && !b->v1_freezer[0])
		snprintf(sc->why, sizeof(sc->why),
			 "no cgroup-v1 freezer in /proc/self/mountinfo (the v2 freezer lets "
			 "SIGKILL through)");
	else if (v2 && !b->v2_root[0])
		snprintf(sc->why, sizeof(sc->why), "no cgroup2 mount in /proc/self/mountinfo");
	else
		return true;
	return false;
}

void meter_open(const struct bench *b, struct meter *m)
{
	m->cg = cg_create(b->v1_memory, CG_MEMORY);
}

void meter_close(struct meter *m)
{
	cg_remove(m->cg);
	m->cg = NULL;
}

/* total_rss in bytes.  Reading memory.stat flushes the per-CPU counters
 * once enough updates are pending, which a release of even 1 MiB is. */
static int64_t meter_rss(const struct meter *m)
{
	char buf[8192];
	const char *p;
	ssize_t n = mr_read_fileat(m->cg->dirfd, "memory.stat", buf, sizeof(buf));

	if (n < 0) {
		errno = (int)-n;
		err(EXIT_FATAL, "%s/memory.stat", m->cg->path);
	}
	p = strstr(buf, "\ntotal_rss ");
	if (!p)
		errx(EXIT_FATAL, "%s/memory.stat: no total_rss line", m->cg->path);
	return strtoll(p + strlen("\ntotal_rss "), NULL, 10);
}

/* The time the memory was back (under 1 % of bytes), or TIMED_OUT. */
int64_t wait_memory_back(const struct meter *m, size_t bytes, int64_t deadline)
{
	int64_t threshold = (int64_t)(bytes / 100);

	for (;;) {
		if (meter_rss(m) < threshold)
			return mr_now_us();
		if (mr_now_us() >= deadline)
			return TIMED_OUT;
		sleep_us(200);
	}
}

/* ---- oom: a limit, and the memory cgroup's own OOM kills ---- */

/* A limit of bytes on the meter's cgroup, so that a victim that goes over
 * it meets the cgroup's OOM killer; swappiness 0, so that a host with swap
 * does not page the victim out rather than kill it. */
void meter_limit(const struct meter *m, size_t bytes)
{
	char v[32];
	int e;

	snprintf(v, sizeof(v), "%zu", bytes);
	if ((e = mr_write_file(m->cg->path, "memory.limit_in_bytes", v, NULL)))
		errx(EXIT_FATAL, "%s/memory.limit_in_bytes: %s", m->cg->path, strerror(-e));
	mr_write_file(m->cg->path, "memory.swappiness", "0", NULL);
}

/* memory.oom_control's oom_kill: how many processes the cgroup's OOM
 * killer has killed (Linux 4.13). */
int64_t meter_oom_kills(const struct meter *m)
{
	char buf[512];
	const char *p;
	ssize_t n = mr_read_fileat(m->cg->dirfd, "memory.oom_control", buf, sizeof(buf));

	if (n < 0) {
		errno = (int)-n;
		err(EXIT_FATAL, "%s/memory.oom_control", m->cg->path);
	}
	if (!(p = strstr(buf, "\noom_kill ")))
		errx(EXIT_FATAL, "%s/memory.oom_control: no oom_kill line (Linux 4.13)",
		     m->cg->path);
	return strtoll(p + strlen("\noom_kill "), NULL, 10);
}

/* The time the cgroup's OOM killer was seen to kill once more than
 * before (polled as the meter is, every 0.2 ms), or TIMED_OUT. */
int64_t wait_oom_kill(const struct meter *m, int64_t before, int64_t deadline)
{
	for (;;) {
		if (meter_oom_kills(m) > before)
			return mr_now_us();
		if (mr_now_us() >= deadline)
			return TIMED_OUT;
		sleep_us(200);
	}
}
