/* bench.c: the mrelease benchmark driver (issue 5).  It starts fresh
 * victims, ends them three ways -- plain SIGKILL (or cgroup.kill) and wait,
 * mrelease --kill, and the in-process limit (munmap of the same memory) --
 * and times how long each takes to give the memory back.  It prints a table
 * and can write JSON.  Run it as root through tests/bench/run. */
#define _GNU_SOURCE
#include <argp.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "mrelease.h"
#include "sys.h"

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define TIMED_OUT INT64_MAX     /* a sample that hit --timeout */
#define MAX_RUNS 100
#define CG_VICTIMS 64           /* victims in the cgroup scenarios */
#define RELEASE_CPU 0           /* starved: where mrelease and mr-bench run */
#define VICTIM_CPU 1            /* starved: where the victim and the busy loop fight */
#define SMALL_VICTIM (16UL << 20) /* the victim for the --dry-run overhead */
#define MAX_KIDS 256
#define MAX_CGROUPS 4
#define MAX_TARGETS 24
#define STR(x) #x
#define XSTR(x) STR(x)

/* Exit statuses of mr-bench itself; missed targets are results, not errors. */
enum { EXIT_DONE = 0, EXIT_USAGE = 2, EXIT_FATAL = 3, EXIT_INTERRUPTED = 130 };

/* The timed scenarios come first, in the order they run and print;
 * SC_OVERHEAD, which has a table of its own, is last. */
enum scenario_id {
	SC_IDLE, SC_STARVED, SC_STUCK, SC_CGROUP, SC_CGSTUCK, SC_OVERHEAD, NSCENARIOS
};
static const char *const scenario_names[NSCENARIOS] = {
	"idle", "starved", "stuck", "cgroup", "cgroup-stuck", "overhead",
};

/* The rows of one scenario, in the order they print.  A single-victim
 * scenario uses KILL, MRELEASE, MRELEASE_STATUS and LIMIT; the cgroup
 * scenarios use CGKILL, JOBS1, JOBS2 and LIMIT. */
enum row_id {
	ROW_KILL, ROW_CGKILL, ROW_MRELEASE, ROW_MRELEASE_STATUS, ROW_JOBS1, ROW_JOBS2, ROW_LIMIT,
	NROWS
};
static const char *const row_ids[NROWS] = {
	"kill", "cgroup_kill", "mrelease", "mrelease_status", "jobs1", "jobs2", "limit",
};

struct bench_opts {
	const char *mrelease;
	const char *json;
	long size_mib;
	long runs, kill_runs, overhead_runs, timeout_s;
	bool quick, size_set, runs_set, kill_runs_set, overhead_set, timeout_set;
	unsigned only;          /* bit per scenario_id; 0 = all */
};

/* mrelease's own account of one extra run made with --json. */
struct self_report {
	bool have;
	int64_t wall_ns;
	long long elapsed_us, release_us; /* -1 when null or absent */
	int targets;
	char error[200];
};

/* One scenario x method: what was run and what it took. */
struct series {
	const char *label;
	char command[160];
	bool available;
	char why[200];
	int planned, failed;
	int64_t samples[MAX_RUNS];      /* ns, or TIMED_OUT */
	int n;
	char error[200];                /* the first failure */
	struct self_report self;
};

struct scenario {
	const char *name;
	bool ran, available;
	char why[200];
	char setup[2 * PATH_MAX + 400];   /* cgroup-stuck names two cgroups */
	struct series row[NROWS];
};

struct overhead {
	bool ran;
	struct series dry_small;
	struct series measure[3];
};

static const char *const measure_modes[3] = { "smaps", "status", "none" };

struct bench {
	struct bench_opts opt;
	size_t bytes;                   /* S */
	int64_t timeout_ns;
	char version[128];
	char v1_freezer[PATH_MAX], v1_memory[PATH_MAX], v2_root[PATH_MAX];
	char load_start[64], load_end[64]; /* 1, 5 and 15 min load averages */
	int64_t started;
	struct scenario sc[SC_OVERHEAD];
	struct overhead oh;
};

struct stats {
	int n;
	int64_t min, med, max;
};

/* ---- process-wide state the clean-up needs, even after err() ---- */

/* Every child mr-bench started, so that any exit path can kill and reap
 * them; slots are stable so pointers to them stay valid. */
struct kid {
	pid_t pid;
	int pidfd;
	bool hog;
};
static struct kid kids[MAX_KIDS];

/* Every cgroup mr-bench made; all are removed on every exit path. */
enum cg_kind { CG_V2, CG_FREEZER, CG_MEMORY };
struct cgdir {
	char path[PATH_MAX];
	bool used;
	enum cg_kind kind;
};
static struct cgdir cgdirs[MAX_CGROUPS];

static pid_t driver_pid;
static volatile sig_atomic_t interrupted;

/* ---- time ---- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void check_interrupt(void)
{
	if (interrupted)
		errx(EXIT_INTERRUPTED, "interrupted; cleaning up");
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Wait until fd polls for events or the deadline passes: true when ready.
 * The handlers are installed without SA_RESTART, so a ^C wakes the poll;
 * the clean-up path passes interruptible = false to finish its work. */
static bool poll_until(int fd, short events, int64_t deadline, bool interruptible)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left;
		struct timespec ts;
		int r;

		if (interruptible)
			check_interrupt();
		left = deadline - now_ns();
		if (left < 0)
			left = 0;
		ts.tv_sec = left / NS_PER_S;
		ts.tv_nsec = left % NS_PER_S;
		r = ppoll(&p, 1, &ts, NULL);
		if (r > 0)
			return true;
		if (r == 0)
			return false;
		if (errno != EINTR)
			err(EXIT_FATAL, "poll");
		if (interruptible)
			check_interrupt();
	}
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S };

	check_interrupt();
	while (nanosleep(&ts, &ts) && errno == EINTR)
		check_interrupt();
}

/* Setting up S of fresh memory runs at a few hundred MiB/s on a slow VM;
 * allow 10 MiB/s plus half a minute before calling a victim stuck. */
static int64_t setup_budget(size_t bytes)
{
	return 30 * NS_PER_S + (int64_t)(bytes / (10UL << 20)) * NS_PER_S;
}

/* ---- small file readers ---- */

/* VmRSS in KiB, or -1 when there is no VmRSS line.  A missing line does
 * not mean the memory is back: exit_mm() clears task->mm first and only
 * then frees the address space in mmput(), which for 1 GiB takes as long
 * as munmap() -- the line vanishes within a millisecond of the SIGKILL,
 * tens of milliseconds before the pages are free. */
static long vm_rss_kb(pid_t pid)
{
	char path[64], buf[4096];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (mr_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nVmRSS:");
	return p ? strtol(p + 7, NULL, 10) : -1;
}

static long meminfo_kb(const char *key)
{
	char buf[8192];
	const char *p;

	if (mr_read_file("/proc/meminfo", buf, sizeof(buf)) < 0 || !(p = strstr(buf, key)))
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

/* ---- cgroups made by mr-bench ---- */

/* Make mr-bench.<pid>.<slot> under mount and remember it for clean-up. */
static struct cgdir *cg_create(const char *mount, enum cg_kind kind)
{
	for (int i = 0; i < MAX_CGROUPS; i++) {
		struct cgdir *cg = &cgdirs[i];

		if (cg->used)
			continue;
		snprintf(cg->path, sizeof(cg->path), "%s/mr-bench.%d.%d", mount, driver_pid, i);
		if (mkdir(cg->path, 0755))
			return NULL;
		cg->used = true;
		cg->kind = kind;
		return cg;
	}
	errno = ENOSPC;
	return NULL;
}

/* A v1-frozen task stays frozen even when killed, so thaw before reaping.
 * A v2 cgroup is frozen only by mrelease --kill --cgroup, which thaws it
 * again on its way out; if mrelease was stopped by --timeout first, the
 * next victims would freeze as they join, so thaw it here too.  (A fatal
 * signal passes through a v2 freeze, so reaping works either way.) */
static void cg_thaw(struct cgdir *cg)
{
	if (!cg->used)
		return;
	if (cg->kind == CG_FREEZER)
		mr_write_file(cg->path, "freezer.state", "THAWED");
	else if (cg->kind == CG_V2)
		mr_write_file(cg->path, "cgroup.freeze", "0");
}

/* rmdir succeeds once the last member has been reaped; give stragglers a
 * moment, then complain rather than hang. */
static void cg_remove(struct cgdir *cg)
{
	if (!cg->used)
		return;
	cg_thaw(cg);
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

static int cg_freeze(struct cgdir *cg, int64_t deadline)
{
	char path[PATH_MAX + 32], state[64];
	int e = mr_write_file(cg->path, "freezer.state", "FROZEN");

	if (e)
		return e;
	/* FREEZING until every task has stopped. */
	snprintf(path, sizeof(path), "%s/freezer.state", cg->path);
	while (now_ns() < deadline) {
		if (mr_read_file(path, state, sizeof(state)) > 0 && !strncmp(state, "FROZEN", 6))
			return 0;
		sleep_ns(NS_PER_MS);
	}
	return -ETIMEDOUT;
}

/* ---- when is the memory back? ---- */

/* /proc/PID/status cannot tell: exit_mm() clears task->mm, and with it the
 * VmRSS line, before mmput() frees the pages, so the line goes within a
 * millisecond of a SIGKILL while freeing 1 GiB takes as long as munmap().
 * And a starved victim can clear task->mm while mrelease is reaping it;
 * then the memory is free long before the victim exits.  So the victims
 * of each scenario join a cgroup-v1 memory cgroup, whose anonymous RSS
 * (memory.stat "rss", mapped anonymous pages) does not depend on task->mm;
 * the memory is back when it is under 1% of S. */
struct meter {
	struct cgdir *cg;       /* NULL: no memory controller, fall back to VmRSS */
	int procs_fd, stat_fd;
	long long threshold;    /* bytes */
};

static void meter_open(const struct bench *b, struct meter *m)
{
	char path[PATH_MAX + 32];

	*m = (struct meter){ .procs_fd = -1, .stat_fd = -1, .threshold = (long long)b->bytes / 100 };
	if (!b->v1_memory[0])
		return;
	m->cg = cg_create(b->v1_memory, CG_MEMORY);
	if (!m->cg)
		err(EXIT_FATAL, "mkdir in %s", b->v1_memory);
	snprintf(path, sizeof(path), "%s/cgroup.procs", m->cg->path);
	m->procs_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (m->procs_fd < 0)
		err(EXIT_FATAL, "%s", path);
	snprintf(path, sizeof(path), "%s/memory.stat", m->cg->path);
	m->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->stat_fd < 0)
		err(EXIT_FATAL, "%s", path);
}

static void meter_close(struct meter *m)
{
	if (m->procs_fd >= 0)
		close(m->procs_fd);
	if (m->stat_fd >= 0)
		close(m->stat_fd);
	if (m->cg)
		cg_remove(m->cg);
	m->cg = NULL;
	m->procs_fd = m->stat_fd = -1;
}

/* The memory cgroup's anonymous RSS in bytes.  Reading memory.stat
 * flushes the per-CPU statistics first, so it lags by a few pages at
 * most. */
static long long meter_rss(const struct meter *m)
{
	char buf[8192];
	const char *p;
	ssize_t n = pread(m->stat_fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		err(EXIT_FATAL, "%s/memory.stat", m->cg->path);
	buf[n] = '\0';
	p = !strncmp(buf, "rss ", 4) ? buf : strstr(buf, "\nrss ");
	if (!p)
		errx(EXIT_FATAL, "%s/memory.stat: no rss line", m->cg->path);
	return strtoll(p + (*p == '\n' ? 5 : 4), NULL, 10);
}

/* ---- children ---- */

static struct kid *kid_track(pid_t pid, bool hog)
{
	for (int i = 0; i < MAX_KIDS; i++) {
		struct kid *k = &kids[i];

		if (k->pid)
			continue;
		k->pid = pid;
		k->hog = hog;
		k->pidfd = mr_sys_pidfd_open(pid);
		if (k->pidfd < 0)
			err(EXIT_FATAL, "pidfd_open %d", pid);
		return k;
	}
	errx(EXIT_FATAL, "more than %d children", MAX_KIDS);
}

/* SIGKILL through the pidfd, wait (bounded), reap.  Frozen victims must be
 * thawed first.  Returns the wait status. */
static int kid_reap(struct kid *k)
{
	int status = 0;

	if (!k || !k->pid)
		return 0;
	if (k->pidfd >= 0) {
		mr_sys_pidfd_send_signal(k->pidfd, SIGKILL);
		if (!poll_until(k->pidfd, POLLIN, now_ns() + 20 * NS_PER_S, false)) {
			warnx("pid %d: still alive 20 s after SIGKILL; leaving it", k->pid);
			waitpid(k->pid, &status, WNOHANG);
			goto out;
		}
	} else {
		/* kid_track failed to get a pidfd: the pid is our unreaped child,
		 * so it cannot have been recycled. */
		kill(k->pid, SIGKILL);
	}
	while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
		;
out:
	if (k->pidfd >= 0)
		close(k->pidfd);
	k->pid = 0;
	k->pidfd = -1;
	return status;
}

/* Runs on every exit of the driver, err() and ^C included: thaw the
 * freezers, stop the busy loops (so starved victims can die), kill and
 * reap every child, remove every cgroup. */
static void cleanup(void)
{
	if (getpid() != driver_pid)
		return;
	for (int i = 0; i < MAX_CGROUPS; i++)
		cg_thaw(&cgdirs[i]);
	for (int i = 0; i < MAX_KIDS; i++)
		if (kids[i].pid && kids[i].hog)
			kid_reap(&kids[i]);
	for (int i = 0; i < MAX_KIDS; i++)
		kid_reap(&kids[i]);
	for (int i = 0; i < MAX_CGROUPS; i++)
		cg_remove(&cgdirs[i]);
}

enum kid_kind { KID_VICTIM, KID_HOG, KID_LIMIT };

struct spawn_spec {
	enum kid_kind kind;
	size_t bytes;           /* private anonymous memory to touch, in all */
	int chunks;             /* split over this many mappings */
	int cpu;                /* pin here once touched; -1 leaves it free */
	bool sched_idle;        /* switch to SCHED_IDLE once touched */
	int njoin;              /* join these cgroup.procs first: a v2 */
	int join[3];            /* cgroup, a v1 freezer, a v1 memory cgroup */
};

static void spec_join(struct spawn_spec *s, int procs_fd)
{
	if (procs_fd >= 0)
		s->join[s->njoin++] = procs_fd;
}

static _Noreturn void kid_fail(const char *what)
{
	dprintf(STDERR_FILENO, "mr-bench: child %d: %s: %s\n", getpid(), what, strerror(errno));
	_exit(1);
}

static void kid_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		kid_fail("sched_setaffinity");
}

static void *kid_touch(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* MAP_POPULATE faults the range in bulk, about three times faster
	 * than a fault per page on this VM; the writes then put data in every
	 * page, so each is a private anonymous page of our own. */
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		kid_fail("mmap");
	for (size_t off = 0; off < len; off += page)
		p[off] = (char)(off / page) | 1;
	return p;
}

static _Noreturn void kid_main(const struct spawn_spec *s, int report_fd, pid_t parent)
{
	void *map[CG_VICTIMS];
	size_t chunk = s->bytes / (size_t)s->chunks;

	/* Die with the driver, whatever happens to it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	for (int i = 0; i < s->njoin; i++)
		if (write(s->join[i], "0", 1) != 1)
			kid_fail("join cgroup");
	if (s->kind == KID_HOG) {
		if (setpriority(PRIO_PROCESS, 0, -20))
			kid_fail("nice -20");
		kid_pin(s->cpu);
		if (write(report_fd, "r", 1) != 1)
			kid_fail("report");
		for (volatile unsigned long spin = 0;; spin++)
			;
	}
	for (int i = 0; i < s->chunks; i++)
		map[i] = kid_touch(chunk);
	if (s->kind == KID_LIMIT) {
		int64_t t0 = now_ns(), dt;

		for (int i = 0; i < s->chunks; i++)
			if (munmap(map[i], chunk))
				kid_fail("munmap");
		dt = now_ns() - t0;
		if (write(report_fd, &dt, sizeof(dt)) != sizeof(dt))
			kid_fail("report");
		_exit(0);
	}
	if (s->sched_idle && sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){ 0 }))
		kid_fail("SCHED_IDLE");
	if (s->cpu >= 0)
		kid_pin(s->cpu);
	if (write(report_fd, "r", 1) != 1)
		kid_fail("report");
	close(report_fd);
	for (;;)
		pause();
}

/* Fork a child; its report (readiness, or the munmap time) comes back on
 * *report_fd. */
static struct kid *kid_spawn(const struct spawn_spec *s, int *report_fd)
{
	pid_t parent = getpid(), pid;
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		err(EXIT_FATAL, "pipe");
	pid = fork();
	if (pid < 0)
		err(EXIT_FATAL, "fork");
	if (pid == 0) {
		close(p[0]);
		kid_main(s, p[1], parent);
	}
	close(p[1]);
	*report_fd = p[0];
	return kid_track(pid, s->kind == KID_HOG);
}

/* Read len bytes of a child's report before the deadline: 0, -ETIMEDOUT,
 * or -EPIPE when it died first. */
static int read_report(int fd, void *buf, size_t len, int64_t deadline)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n;

		if (!poll_until(fd, POLLIN, deadline, true))
			return -ETIMEDOUT;
		n = read(fd, (char *)buf + got, len - got);
		if (n == 0)
			return -EPIPE;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	return 0;
}

static void await_ready(struct kid *k, int fd, const char *what, int64_t deadline)
{
	char c;
	int e = read_report(fd, &c, 1, deadline);

	close(fd);
	if (e == -EPIPE)
		errx(EXIT_FATAL, "%s %d: died before it was ready", what, k->pid);
	if (e)
		errx(EXIT_FATAL, "%s %d: not ready: %s", what, k->pid, strerror(-e));
}

static struct kid *start_victim(const struct spawn_spec *s)
{
	int fd;
	struct kid *k = kid_spawn(s, &fd);

	await_ready(k, fd, "victim", now_ns() + setup_budget(s->bytes));
	return k;
}

/* The nice -20 busy loop that starves a SCHED_IDLE victim on VICTIM_CPU. */
static struct kid *start_hog(void)
{
	struct spawn_spec s = { .kind = KID_HOG, .chunks = 1, .cpu = VICTIM_CPU };
	int fd;
	struct kid *k = kid_spawn(&s, &fd);

	await_ready(k, fd, "busy loop", now_ns() + 10 * NS_PER_S);
	/* Let it settle on the CPU before the victim is woken by SIGKILL. */
	sleep_ns(100 * NS_PER_MS);
	return k;
}

/* Without a memory cgroup: the victim exited (its pidfd polls readable)
 * or its VmRSS line reads 0 or is gone -- which reads early whenever the
 * victim's own exit frees the memory; the report says so. */
static bool memory_back_vmrss(const struct kid *k)
{
	struct pollfd p = { .fd = k->pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 || vm_rss_kb(k->pid) <= 0;
}

/* The time all victims' memory was back, or TIMED_OUT. */
static int64_t wait_memory_back(const struct meter *m, struct kid **v, int nv, int64_t deadline)
{
	int done = 0;

	for (;;) {
		if (m->cg) {
			if (meter_rss(m) < m->threshold)
				return now_ns();
		} else {
			while (done < nv && memory_back_vmrss(v[done]))
				done++;
			if (done == nv)
				return now_ns();
		}
		if (now_ns() >= deadline)
			return TIMED_OUT;
		sleep_ns(200 * NS_PER_US);
	}
}

/* ---- running mrelease ---- */

struct tool_result {
	int status;             /* exit status; 128 + signal; -1 timed out */
	int64_t start_ns, end_ns;
	char err[200];          /* first line of its stderr */
	char *out;              /* its stdout, when captured */
};

static int memfd_or_die(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		err(EXIT_FATAL, "memfd_create");
	return fd;
}

static char *slurp_fd(int fd)
{
	off_t len = lseek(fd, 0, SEEK_END);
	char *buf = malloc(len > 0 ? (size_t)len + 1 : 1);

	if (!buf)
		err(EXIT_FATAL, "malloc");
	if (len <= 0 || pread(fd, buf, (size_t)len, 0) != len)
		len = 0;
	buf[len] = '\0';
	return buf;
}

/* fork+exec mrelease with args (NULL-terminated, without argv[0]), its
 * stdout to /dev/null or a memfd, its stderr to a memfd; wait until it
 * exits or the deadline passes (then kill it). */
static void run_tool(const struct bench *b, const char *const *args, bool capture,
		     int64_t timeout_ns, struct tool_result *r)
{
	const char *argv[24] = { b->opt.mrelease };
	int out, errfd, wstatus, n = 1;
	struct kid *k;
	pid_t pid;
	char *text;

	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	out = capture ? memfd_or_die("mr-bench-out") : open("/dev/null", O_WRONLY | O_CLOEXEC);
	errfd = memfd_or_die("mr-bench-err");
	if (out < 0)
		err(EXIT_FATAL, "/dev/null");
	memset(r, 0, sizeof(*r));
	r->start_ns = now_ns();
	pid = fork();
	if (pid < 0)
		err(EXIT_FATAL, "fork");
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	k = kid_track(pid, false);
	if (poll_until(k->pidfd, POLLIN, r->start_ns + timeout_ns, true)) {
		r->end_ns = now_ns();
		while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
			;
		close(k->pidfd);
		k->pid = 0;
		r->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	} else {
		r->end_ns = TIMED_OUT;
		r->status = -1;
		kid_reap(k);
	}
	text = slurp_fd(errfd);
	text[strcspn(text, "\n")] = '\0';
	snprintf(r->err, sizeof(r->err), "%s", text);
	free(text);
	r->out = capture ? slurp_fd(out) : NULL;
	close(out);
	close(errfd);
}

/* An integer member of obj; -1 for null or absent, as mrelease writes
 * null for what it did not measure. */
static long long json_int_member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* mrelease's --json document: the slowest target's release_us, the
 * number of targets and the summary's elapsed_us. */
static void parse_self_report(struct self_report *sr, const char *out)
{
	json_error_t jerr;
	json_t *doc = json_loads(out, 0, &jerr), *targets, *t;
	size_t i;

	sr->release_us = -1;
	sr->elapsed_us = -1;
	sr->targets = 0;
	if (!doc) {
		snprintf(sr->error, sizeof(sr->error), "its JSON, line %d: %s", jerr.line, jerr.text);
		return;
	}
	targets = json_object_get(doc, "targets");
	json_array_foreach(targets, i, t) {
		long long v = json_int_member(t, "release_us");

		sr->targets++;
		if (v > sr->release_us)
			sr->release_us = v;
	}
	sr->elapsed_us = json_int_member(json_object_get(doc, "summary"), "elapsed_us");
	json_decref(doc);
}

/* ---- recording ---- */

static void series_init(struct series *s, const char *label, int planned, const char *cmdfmt, ...)
{
	va_list ap;

	s->label = label;
	s->planned = planned;
	s->available = true;
	va_start(ap, cmdfmt);
	vsnprintf(s->command, sizeof(s->command), cmdfmt, ap);
	va_end(ap);
}

static void fmt_ms(char *buf, size_t len, int64_t ns, const struct bench *b)
{
	if (ns == TIMED_OUT)
		snprintf(buf, len, "> %ld s", b->opt.timeout_s);
	else if (ns < 10 * NS_PER_MS)
		snprintf(buf, len, "%.2f ms", (double)ns / NS_PER_MS);
	else
		snprintf(buf, len, "%.1f ms", (double)ns / NS_PER_MS);
}

static void record(const struct bench *b, const char *scenario, int run, struct series *s,
		   int64_t ns)
{
	char t[32];

	s->samples[s->n++] = ns;
	fmt_ms(t, sizeof(t), ns, b);
	fprintf(stderr, "mr-bench: %-12s run %d/%d  %-32s %s\n", scenario, run + 1, s->planned,
		s->label, t);
}

static void record_failure(const char *scenario, struct series *s, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->failed++;
	if (!s->error[0])
		snprintf(s->error, sizeof(s->error), "%s", msg);
	warnx("%s: %s: %s", scenario, s->label, msg);
}

/* ---- the three methods ---- */

/* (a) SIGKILL through the pidfd, then wait for the exit.  Only the pidfd is
 * watched: reading /proc/PID/status pins the mm for a moment, and if the
 * victim's own mmput() landed then, mr-bench would do its teardown. */
static int64_t time_sigkill(const struct bench *b, struct kid *v)
{
	int64_t t0 = now_ns();

	if (mr_sys_pidfd_send_signal(v->pidfd, SIGKILL))
		err(EXIT_FATAL, "pidfd_send_signal %d", v->pid);
	if (!poll_until(v->pidfd, POLLIN, t0 + b->timeout_ns, true))
		return TIMED_OUT;
	return now_ns() - t0;
}

/* (b) mrelease as a separate process; memory is back when it has exited
 * and the victims' memory is gone (checked right after, then polled). */
static void time_mrelease(const struct bench *b, const char *scenario, int run, struct series *s,
			  const char *const *args, const struct meter *m, struct kid **v, int nv,
			  bool self_report)
{
	struct tool_result r;
	int64_t end;

	run_tool(b, args, self_report, b->timeout_ns, &r);
	if (r.status == 0)
		end = wait_memory_back(m, v, nv, r.start_ns + b->timeout_ns);
	else
		end = TIMED_OUT;
	if (self_report) {
		s->self.have = true;
		s->self.wall_ns = end == TIMED_OUT ? TIMED_OUT : end - r.start_ns;
		if (r.status > 0)
			snprintf(s->self.error, sizeof(s->self.error), "exit %d: %.180s",
				 r.status, r.err[0] ? r.err : "(no message)");
		else if (r.out)
			parse_self_report(&s->self, r.out);
	} else if (r.status > 0) {
		record_failure(scenario, s, "exit %d: %s", r.status, r.err[0] ? r.err : "(no message)");
	} else {
		record(b, scenario, run, s, end == TIMED_OUT ? TIMED_OUT : end - r.start_ns);
	}
	free(r.out);
}

/* (c) the in-process limit: a child touches the same memory and times its
 * own munmap() of it. */
static void time_limit(const struct bench *b, const char *scenario, int run, struct series *s,
		       int chunks)
{
	struct spawn_spec spec = {
		.kind = KID_LIMIT, .bytes = b->bytes, .chunks = chunks, .cpu = -1,
	};
	int64_t dt;
	int fd, e;
	struct kid *k = kid_spawn(&spec, &fd);

	e = read_report(fd, &dt, sizeof(dt), now_ns() + setup_budget(b->bytes) + b->timeout_ns);
	close(fd);
	kid_reap(k);
	if (e)
		record_failure(scenario, s, "munmap child: %s", strerror(-e));
	else
		record(b, scenario, run, s, dt);
}

/* ---- single-victim scenarios: idle, starved, stuck ---- */

struct single_setup {
	bool starve;            /* SCHED_IDLE victim and nice -20 loop on VICTIM_CPU */
	struct cgdir *freezer;  /* v1 freezer to freeze the victim in, or NULL */
	int procs_fd;           /* its cgroup.procs */
	struct meter meter;     /* the memory cgroup the victim joins */
};

static struct kid *prepare_victim(const struct bench *b, const struct single_setup *su,
				  struct kid **hog)
{
	struct spawn_spec s = {
		.kind = KID_VICTIM, .bytes = b->bytes, .chunks = 1,
		.cpu = su->starve ? VICTIM_CPU : -1, .sched_idle = su->starve,
	};
	struct kid *v;
	int e;

	spec_join(&s, su->freezer ? su->procs_fd : -1);
	spec_join(&s, su->meter.procs_fd);
	v = start_victim(&s);

	if (su->freezer && (e = cg_freeze(su->freezer, now_ns() + 10 * NS_PER_S)))
		errx(EXIT_FATAL, "freeze %s: %s", su->freezer->path, strerror(-e));
	*hog = su->starve ? start_hog() : NULL;
	return v;
}

static void finish_victim(const struct single_setup *su, struct kid *v, struct kid *hog)
{
	if (su->freezer)
		cg_thaw(su->freezer);
	kid_reap(hog);
	kid_reap(v);
}

/* mrelease --kill OUTPUT [--measure=MODE] [--affinity RELEASE_CPU] PID;
 * measure NULL keeps mrelease's default (smaps). */
static const char *const *kill_args(const char **args, const char *output, const char *measure,
				    bool starve, const char *pid)
{
	static char cpu[8];
	int n = 0;

	snprintf(cpu, sizeof(cpu), "%d", RELEASE_CPU);
	args[n++] = "--kill";
	args[n++] = output;
	if (measure)
		args[n++] = measure;
	if (starve) {
		args[n++] = "--affinity";
		args[n++] = cpu;
	}
	args[n++] = pid;
	args[n] = NULL;
	return args;
}

/* One timed mrelease --kill run on a fresh victim. */
static void single_mrelease(struct bench *b, struct scenario *sc, const struct single_setup *su,
			    int run, struct series *s, const char *output, const char *measure,
			    bool self_report)
{
	const char *args[8];
	char pid[16];
	struct kid *v, *hog;

	v = prepare_victim(b, su, &hog);
	snprintf(pid, sizeof(pid), "%d", v->pid);
	time_mrelease(b, sc->name, run, s, kill_args(args, output, measure, su->starve, pid),
		      &su->meter, &v, 1, self_report);
	finish_victim(su, v, hog);
}

static void run_single(struct bench *b, struct scenario *sc, struct single_setup *su)
{
	struct series *kill = &sc->row[ROW_KILL], *mrel = &sc->row[ROW_MRELEASE];
	struct series *status = &sc->row[ROW_MRELEASE_STATUS];
	int kill_runs = (su->starve || su->freezer) ? b->opt.kill_runs : b->opt.runs;
	const char *affinity = su->starve ? " --affinity " XSTR(RELEASE_CPU) : "";
	struct kid *v, *hog;

	series_init(kill, "SIGKILL + wait", kill_runs, "pidfd_send_signal(SIGKILL), poll the pidfd");
	series_init(mrel, "mrelease --kill", b->opt.runs, "mrelease --kill --quiet%s PID", affinity);
	/* The default --measure=smaps reads smaps_rollup before the kill,
	 * about 10 ms per GiB; status mode reads /proc/PID/status instead. */
	series_init(status, "mrelease --kill --measure=status", b->opt.runs,
		    "mrelease --kill --quiet --measure=status%s PID", affinity);
	series_init(&sc->row[ROW_LIMIT], "munmap (limit)", b->opt.runs,
		    "munmap() of the same memory in one process%s",
		    su->starve ? ", on CPU 0 beside the busy loop" : "");
	meter_open(b, &su->meter);
	for (int run = 0; run < b->opt.runs; run++) {
		if (run < kill_runs) {
			v = prepare_victim(b, su, &hog);
			record(b, sc->name, run, kill, time_sigkill(b, v));
			finish_victim(su, v, hog);
		}

		single_mrelease(b, sc, su, run, mrel, "--quiet", NULL, false);
		single_mrelease(b, sc, su, run, status, "--quiet", "--measure=status", false);

		hog = su->starve ? start_hog() : NULL;
		time_limit(b, sc->name, run, &sc->row[ROW_LIMIT], 1);
		kid_reap(hog);
	}
	/* One more run with --json for the time mrelease reports itself. */
	single_mrelease(b, sc, su, 0, mrel, "--json", NULL, true);
	meter_close(&su->meter);
}

static void scenario_idle(struct bench *b, struct scenario *sc)
{
	struct single_setup su = { .procs_fd = -1 };

	snprintf(sc->setup, sizeof(sc->setup),
		 "one victim of %zu MiB, not pinned, nothing else running", b->bytes >> 20);
	sc->available = true;
	run_single(b, sc, &su);
}

static bool cpu_usable(const cpu_set_t *set, int cpu)
{
	return CPU_ISSET(cpu, set);
}

static void scenario_starved(struct bench *b, struct scenario *sc)
{
	struct single_setup su = { .starve = true, .procs_fd = -1 };
	cpu_set_t saved, release;

	if (sched_getaffinity(0, sizeof(saved), &saved))
		err(EXIT_FATAL, "sched_getaffinity");
	if (!cpu_usable(&saved, RELEASE_CPU) || !cpu_usable(&saved, VICTIM_CPU)) {
		snprintf(sc->why, sizeof(sc->why), "needs CPUs %d and %d", RELEASE_CPU, VICTIM_CPU);
		return;
	}
	snprintf(sc->setup, sizeof(sc->setup),
		 "victim of %zu MiB at SCHED_IDLE pinned to CPU %d, a nice -20 busy loop "
		 "pinned to CPU %d; mr-bench and mrelease --affinity %d on CPU %d",
		 b->bytes >> 20, VICTIM_CPU, VICTIM_CPU, RELEASE_CPU, RELEASE_CPU);
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

static void scenario_stuck(struct bench *b, struct scenario *sc)
{
	struct single_setup su = { .procs_fd = -1 };
	char procs[PATH_MAX + 16];

	if (!b->v1_freezer[0]) {
		snprintf(sc->why, sizeof(sc->why),
			 "no cgroup-v1 freezer in /proc/self/mountinfo (the v2 freezer lets SIGKILL through)");
		return;
	}
	su.freezer = cg_create(b->v1_freezer, CG_FREEZER);
	if (!su.freezer)
		err(EXIT_FATAL, "mkdir in %s", b->v1_freezer);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", su.freezer->path);
	su.procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (su.procs_fd < 0)
		err(EXIT_FATAL, "%s", procs);
	snprintf(sc->setup, sizeof(sc->setup),
		 "victim of %zu MiB frozen by the cgroup-v1 freezer (%s, freezer.state FROZEN; "
		 "the task shows state D) as a stand-in for uninterruptible sleep",
		 b->bytes >> 20, su.freezer->path);
	sc->available = true;
	run_single(b, sc, &su);
	close(su.procs_fd);
	cg_remove(su.freezer);
}

/* ---- the cgroup scenarios: cgroup and cgroup-stuck ---- */

struct cg_env {
	struct cgdir *cg;               /* the v2 cgroup that mrelease --cgroup is given */
	struct cgdir *freezer;          /* cgroup-stuck: the v1 freezer; else NULL */
	int procs_fd, freezer_procs_fd;
	struct meter meter;             /* the memory cgroup the victims join */
	struct kid *v[CG_VICTIMS];
};

/* Start all victims at once (they touch in parallel), then wait for each;
 * in cgroup-stuck, then freeze them all in the v1 freezer. */
static void cg_start_victims(const struct bench *b, struct cg_env *env)
{
	struct spawn_spec s = {
		.kind = KID_VICTIM, .bytes = b->bytes / CG_VICTIMS, .chunks = 1, .cpu = -1,
	};
	int fd[CG_VICTIMS], e;
	int64_t deadline = now_ns() + setup_budget(b->bytes);

	spec_join(&s, env->procs_fd);
	spec_join(&s, env->freezer_procs_fd);
	spec_join(&s, env->meter.procs_fd);
	cg_thaw(env->cg);
	for (int i = 0; i < CG_VICTIMS; i++)
		env->v[i] = kid_spawn(&s, &fd[i]);
	for (int i = 0; i < CG_VICTIMS; i++)
		await_ready(env->v[i], fd[i], "victim", deadline);
	if (env->freezer && (e = cg_freeze(env->freezer, now_ns() + 10 * NS_PER_S)))
		errx(EXIT_FATAL, "freeze %s: %s", env->freezer->path, strerror(-e));
}

static void cg_reap_victims(struct cg_env *env)
{
	if (env->freezer)
		cg_thaw(env->freezer);
	for (int i = 0; i < CG_VICTIMS; i++)
		kid_reap(env->v[i]);
}

/* cgroup.kill, then wait for "populated 0" in cgroup.events, which the
 * kernel sets once every member has passed cgroup_exit(), after exit_mm(). */
static int64_t time_cgroup_kill(const struct bench *b, const struct cgdir *cg)
{
	char path[PATH_MAX + 32], buf[256];
	int64_t t0, deadline, next;
	int fd, e;

	snprintf(path, sizeof(path), "%s/cgroup.events", cg->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		err(EXIT_FATAL, "%s", path);
	t0 = now_ns();
	deadline = t0 + b->timeout_ns;
	if ((e = mr_write_file(cg->path, "cgroup.kill", "1")))
		errx(EXIT_FATAL, "%s/cgroup.kill: %s", cg->path, strerror(-e));
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		if (n < 0)
			err(EXIT_FATAL, "%s", path);
		buf[n] = '\0';
		if (strstr(buf, "populated 0"))
			break;
		if (now_ns() >= deadline) {
			close(fd);
			return TIMED_OUT;
		}
		/* kernfs flags a change with POLLPRI; cap the wait anyway. */
		next = now_ns() + NS_PER_MS;
		poll_until(fd, POLLPRI, next < deadline ? next : deadline, true);
	}
	close(fd);
	return now_ns() - t0;
}

/* Does this mrelease take --cgroup?  Ask it about a cgroup with one small
 * member in a dry run; an older build says "unrecognized option". */
static bool probe_cgroup_option(const struct bench *b, struct cg_env *env, char *why, size_t len)
{
	struct spawn_spec s = { .kind = KID_VICTIM, .bytes = 1UL << 20, .chunks = 1, .cpu = -1,
				.njoin = 1, .join = { env->procs_fd } };
	const char *args[] = { "--dry-run", "--quiet", "--cgroup", env->cg->path, NULL };
	struct tool_result r;
	struct kid *v = start_victim(&s);

	run_tool(b, args, false, b->timeout_ns, &r);
	kid_reap(v);
	if (r.status == 0)
		return true;
	snprintf(why, len, "mrelease --cgroup: %s%.160s", r.status < 0 ? "timed out" : "",
		 r.err[0] ? r.err : "failed");
	return false;
}

/* Make the cgroups of one scenario and open their cgroup.procs; false,
 * with sc->why set, when this machine cannot run it. */
static bool cg_env_open(const struct bench *b, struct scenario *sc, struct cg_env *env,
			bool stuck)
{
	char procs[PATH_MAX + 16], kill_file[PATH_MAX + 16];

	if (!b->v2_root[0]) {
		snprintf(sc->why, sizeof(sc->why), "no cgroup2 mount in /proc/self/mountinfo");
		return false;
	}
	if (stuck && !b->v1_freezer[0]) {
		snprintf(sc->why, sizeof(sc->why),
			 "no cgroup-v1 freezer in /proc/self/mountinfo (the v2 freezer lets SIGKILL through)");
		return false;
	}
	env->cg = cg_create(b->v2_root, CG_V2);
	if (!env->cg)
		err(EXIT_FATAL, "mkdir in %s", b->v2_root);
	snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", env->cg->path);
	if (access(kill_file, W_OK)) {
		snprintf(sc->why, sizeof(sc->why), "no cgroup.kill (Linux >= 5.14)");
		cg_remove(env->cg);
		return false;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", env->cg->path);
	env->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (env->procs_fd < 0)
		err(EXIT_FATAL, "%s", procs);
	meter_open(b, &env->meter);
	if (!stuck)
		return true;
	env->freezer = cg_create(b->v1_freezer, CG_FREEZER);
	if (!env->freezer)
		err(EXIT_FATAL, "mkdir in %s", b->v1_freezer);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", env->freezer->path);
	env->freezer_procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (env->freezer_procs_fd < 0)
		err(EXIT_FATAL, "%s", procs);
	return true;
}

static void cg_env_close(struct cg_env *env)
{
	if (env->procs_fd >= 0)
		close(env->procs_fd);
	if (env->freezer_procs_fd >= 0)
		close(env->freezer_procs_fd);
	meter_close(&env->meter);
	if (env->freezer)
		cg_remove(env->freezer);
	if (env->cg)
		cg_remove(env->cg);
}

/* cgroup: 64 victims in a v2 cgroup, free to run their exit path.
 * cgroup-stuck: the same, but also frozen in a v1 freezer, so that only a
 * reaper can take their memory; cgroup.kill then waits out --timeout, and
 * runs --kill-runs times. */
static void run_cgroup(struct bench *b, struct scenario *sc, bool stuck)
{
	struct series *jobs[2] = { &sc->row[ROW_JOBS1], &sc->row[ROW_JOBS2] };
	struct series *cgkill = &sc->row[ROW_CGKILL], *limit = &sc->row[ROW_LIMIT];
	struct cg_env env = { .procs_fd = -1, .freezer_procs_fd = -1,
			      .meter = { .procs_fd = -1, .stat_fd = -1 } };
	int kill_runs = stuck ? b->opt.kill_runs : b->opt.runs;
	char why[200];
	bool have_option;

	if (!cg_env_open(b, sc, &env, stuck)) {
		cg_env_close(&env);
		return;
	}
	if (stuck)
		snprintf(sc->setup, sizeof(sc->setup),
			 "%d victims of %zu KiB each in %s (cgroup v2), also frozen in %s "
			 "(cgroup-v1 freezer, freezer.state FROZEN) so that they cannot run "
			 "their exit path",
			 CG_VICTIMS, (b->bytes / CG_VICTIMS) >> 10, env.cg->path,
			 env.freezer->path);
	else
		snprintf(sc->setup, sizeof(sc->setup), "%d victims of %zu KiB each in %s (cgroup v2)",
			 CG_VICTIMS, (b->bytes / CG_VICTIMS) >> 10, env.cg->path);
	sc->available = true;

	series_init(cgkill, "cgroup.kill + wait", kill_runs,
		    "write 1 to cgroup.kill, wait for \"populated 0\" in cgroup.events");
	for (int j = 0; j < 2; j++)
		series_init(jobs[j], j ? "mrelease --jobs 2" : "mrelease --jobs 1", b->opt.runs,
			    "mrelease --kill --quiet --cgroup PATH --jobs %d", j + 1);
	series_init(limit, "munmap (limit)", b->opt.runs,
		    "munmap() of %d mappings of %zu KiB in one process", CG_VICTIMS,
		    (b->bytes / CG_VICTIMS) >> 10);
	have_option = probe_cgroup_option(b, &env, why, sizeof(why));
	for (int j = 0; j < 2 && !have_option; j++) {
		jobs[j]->available = false;
		snprintf(jobs[j]->why, sizeof(jobs[j]->why), "%s", why);
	}
	if (!have_option)
		warnx("%s: mrelease rows not available: %s", sc->name, why);

	for (int run = 0; run < b->opt.runs; run++) {
		if (run < kill_runs) {
			cg_start_victims(b, &env);
			record(b, sc->name, run, cgkill, time_cgroup_kill(b, env.cg));
			cg_reap_victims(&env);
		}

		for (int j = 0; j < 2 && have_option; j++) {
			char n[4];
			const char *args[] = { "--kill", "--quiet", "--cgroup", env.cg->path,
					       "--jobs", n, NULL };

			snprintf(n, sizeof(n), "%d", j + 1);
			cg_start_victims(b, &env);
			time_mrelease(b, sc->name, run, jobs[j], args, &env.meter, env.v, CG_VICTIMS,
				      false);
			cg_reap_victims(&env);
		}
		time_limit(b, sc->name, run, limit, CG_VICTIMS);
	}
	for (int j = 0; j < 2 && have_option; j++) {
		char n[4];
		const char *args[] = { "--kill", "--json", "--cgroup", env.cg->path, "--jobs", n, NULL };

		snprintf(n, sizeof(n), "%d", j + 1);
		cg_start_victims(b, &env);
		time_mrelease(b, sc->name, 0, jobs[j], args, &env.meter, env.v, CG_VICTIMS, true);
		cg_reap_victims(&env);
	}
	cg_env_close(&env);
}

static void scenario_cgroup(struct bench *b, struct scenario *sc)
{
	run_cgroup(b, sc, false);
}

static void scenario_cgroup_stuck(struct bench *b, struct scenario *sc)
{
	run_cgroup(b, sc, true);
}

/* ---- mrelease's own overhead ---- */

static void time_dry_run(const struct bench *b, struct series *s, const char *const *args, int run)
{
	struct tool_result r;

	run_tool(b, args, false, b->timeout_ns, &r);
	if (r.status == 0)
		record(b, "overhead", run, s, r.end_ns - r.start_ns);
	else if (r.status < 0)
		record(b, "overhead", run, s, TIMED_OUT);
	else
		record_failure("overhead", s, "exit %d: %s", r.status, r.err);
}

static void scenario_overhead(struct bench *b)
{
	struct spawn_spec s = { .kind = KID_VICTIM, .bytes = SMALL_VICTIM, .chunks = 1, .cpu = -1 };
	struct overhead *oh = &b->oh;
	char pid[16], mode[3][24];
	struct kid *v;
	int runs = (int)b->opt.overhead_runs;

	oh->ran = true;
	series_init(&oh->dry_small, "--dry-run, 16 MiB", runs, "mrelease --dry-run PID (16 MiB victim)");
	v = start_victim(&s);
	snprintf(pid, sizeof(pid), "%d", v->pid);
	for (int run = 0; run < runs; run++) {
		const char *args[] = { "--dry-run", pid, NULL };

		time_dry_run(b, &oh->dry_small, args, run);
	}
	kid_reap(v);

	s.bytes = b->bytes;
	v = start_victim(&s);
	snprintf(pid, sizeof(pid), "%d", v->pid);
	for (int m = 0; m < 3; m++) {
		snprintf(mode[m], sizeof(mode[m]), "--measure=%s", measure_modes[m]);
		series_init(&oh->measure[m], measure_modes[m], runs,
			    "mrelease --dry-run --measure=%s PID (%zu MiB victim)", measure_modes[m],
			    b->bytes >> 20);
	}
	/* Interleaved, so that drift hits every mode alike. */
	for (int run = 0; run < runs; run++)
		for (int m = 0; m < 3; m++) {
			const char *args[] = { "--dry-run", mode[m], pid, NULL };

			time_dry_run(b, &oh->measure[m], args, run);
		}
	kid_reap(v);
}

/* ---- statistics, targets ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* min, median (the middle run; the lower middle for an even count), max;
 * a timed-out run sorts last as TIMED_OUT. */
static bool series_stats(const struct series *s, struct stats *st)
{
	int64_t v[MAX_RUNS];

	st->n = s->n;
	if (!s->available || s->n == 0)
		return false;
	memcpy(v, s->samples, sizeof(v[0]) * (size_t)s->n);
	qsort(v, (size_t)s->n, sizeof(v[0]), cmp_i64);
	st->min = v[0];
	st->med = v[(s->n - 1) / 2];
	st->max = v[s->n - 1];
	return true;
}

struct ratio {
	bool valid, lower_bound; /* lower_bound: the numerator timed out */
	double v;
};

static struct ratio ratio_of(const struct bench *b, const struct series *num, const struct series *den)
{
	struct stats a, d;
	struct ratio r = { 0 };

	if (!series_stats(num, &a) || !series_stats(den, &d) || d.med == TIMED_OUT || d.med <= 0)
		return r;
	r.valid = true;
	r.lower_bound = a.med == TIMED_OUT;
	r.v = (double)(r.lower_bound ? b->timeout_ns : a.med) / (double)d.med;
	return r;
}

static void fmt_ratio(char *buf, size_t len, struct ratio r)
{
	if (!r.valid)
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, r.v >= 100 ? "%s%.0f" : "%s%.2f", r.lower_bound ? "> " : "", r.v);
}

struct target {
	char what[80], value[32], goal[16];
	const char *verdict;    /* PASS, MISS, n/a */
	struct ratio r;
	char info[64];          /* shown beside the verdict; judges nothing */
	struct ratio info_r;
};

/* goal_max: the ratio must stay at or under limit; otherwise reach it. */
static void judge(const struct bench *b, struct target *t, const char *what, const char *goal,
		  const struct series *num, const struct series *den, double limit, bool goal_max)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->what, sizeof(t->what), "%s", what);
	snprintf(t->goal, sizeof(t->goal), "%s", goal);
	t->r = ratio_of(b, num, den);
	fmt_ratio(t->value, sizeof(t->value), t->r);
	if (!t->r.valid)
		t->verdict = "n/a";
	else if (goal_max)
		t->verdict = !t->r.lower_bound && t->r.v <= limit ? "PASS" : "MISS";
	else
		t->verdict = t->r.v >= limit ? "PASS" : (t->r.lower_bound ? "n/a" : "MISS");
}

/* The targets are judged on mrelease --kill as users run it, with the
 * default --measure=smaps; the status-mode ratio is printed beside it. */
static int collect_targets(const struct bench *b, struct target *t)
{
	static const enum scenario_id cgroups[] = { SC_CGROUP, SC_CGSTUCK };
	int n = 0;
	char what[80], v[32];

	for (int i = SC_IDLE; i <= SC_STUCK; i++) {
		const struct scenario *sc = &b->sc[i];
		struct target *x = &t[n];

		if (!sc->ran)
			continue;
		snprintf(what, sizeof(what), "%s: mrelease / munmap limit", sc->name);
		judge(b, &t[n++], what, "<= 1.3", &sc->row[ROW_MRELEASE], &sc->row[ROW_LIMIT], 1.3, true);
		x->info_r = ratio_of(b, &sc->row[ROW_MRELEASE_STATUS], &sc->row[ROW_LIMIT]);
		fmt_ratio(v, sizeof(v), x->info_r);
		snprintf(x->info, sizeof(x->info), "(--measure=status: %s)", v);
	}
	if (b->sc[SC_CGROUP].ran) {
		const struct scenario *cg = &b->sc[SC_CGROUP];

		judge(b, &t[n++], "cgroup: mrelease --jobs 1 / munmap limit", "<= 1.3",
		      &cg->row[ROW_JOBS1], &cg->row[ROW_LIMIT], 1.3, true);
		judge(b, &t[n++], "cgroup: mrelease --jobs 2 / munmap limit", "<= 1.3",
		      &cg->row[ROW_JOBS2], &cg->row[ROW_LIMIT], 1.3, true);
	}
	for (int i = SC_STARVED; i <= SC_STUCK; i++) {
		const struct scenario *sc = &b->sc[i];

		if (!sc->ran)
			continue;
		snprintf(what, sizeof(what), "%s: SIGKILL+wait / mrelease", sc->name);
		judge(b, &t[n++], what, ">= 100", &sc->row[ROW_KILL], &sc->row[ROW_MRELEASE], 100, false);
	}
	for (size_t c = 0; c < sizeof(cgroups) / sizeof(cgroups[0]); c++) {
		const struct scenario *cg = &b->sc[cgroups[c]];

		if (!cg->ran)
			continue;
		snprintf(what, sizeof(what), "%s: --jobs 1 / --jobs 2", cg->name);
		judge(b, &t[n++], what, ">= 1.6", &cg->row[ROW_JOBS1], &cg->row[ROW_JOBS2], 1.6, false);
		snprintf(what, sizeof(what), "%s: cgroup.kill+wait / --jobs 2", cg->name);
		judge(b, &t[n++], what, "> 1", &cg->row[ROW_CGKILL], &cg->row[ROW_JOBS2], 1.0, false);
		/* "faster than" is strict. */
		if (t[n - 1].r.valid && !t[n - 1].r.lower_bound && t[n - 1].r.v == 1.0)
			t[n - 1].verdict = "MISS";
	}
	return n;
}

/* ---- the text report ---- */

#define ROW_FMT "%-12s %-32s"

static void print_row(const struct bench *b, FILE *f, const char *scenario, const struct series *s)
{
	char mn[32], md[32], mx[32], runs[16];
	struct stats st;

	if (!s->label)
		return;
	if (!s->available) {
		fprintf(f, ROW_FMT "  not available: %s\n", scenario, s->label, s->why);
		return;
	}
	snprintf(runs, sizeof(runs), "%d/%d", s->n, s->planned);
	if (!series_stats(s, &st)) {
		fprintf(f, ROW_FMT " %6s  %s\n", scenario, s->label, runs,
			s->error[0] ? s->error : "no result");
		return;
	}
	fmt_ms(mn, sizeof(mn), st.min, b);
	fmt_ms(md, sizeof(md), st.med, b);
	fmt_ms(mx, sizeof(mx), st.max, b);
	fprintf(f, ROW_FMT " %6s  %11s %11s %11s\n", scenario, s->label, runs, mn, md, mx);
}

/* The 1, 5 and 15 minute load averages, for the header. */
static void read_load(char *buf, size_t len)
{
	char raw[128];
	double l1, l5, l15;

	if (mr_read_file("/proc/loadavg", raw, sizeof(raw)) > 0 &&
	    sscanf(raw, "%lf %lf %lf", &l1, &l5, &l15) == 3)
		snprintf(buf, len, "%.2f %.2f %.2f", l1, l5, l15);
	else
		snprintf(buf, len, "?");
}

static void print_header(const struct bench *b, FILE *f)
{
	struct utsname u;
	char thp[128] = "?";
	const char *sel;
	long total = meminfo_kb("MemTotal:");

	uname(&u);
	if (mr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp)) > 0) {
		char *l = strchr(thp, '['), *r = l ? strchr(l, ']') : NULL;

		if (l && r) {
			*r = '\0';
			memmove(thp, l + 1, strlen(l + 1) + 1);
		}
	}
	sel = b->opt.quick ? " (--quick smoke run: numbers are not meaningful)" : "";
	fprintf(f, "mrelease benchmark%s\n", sel);
	fprintf(f, "  mrelease   %s (%s)\n", b->opt.mrelease, b->version);
	fprintf(f, "  machine    %ld CPUs, Linux %s, MemTotal %.1f GiB, THP %s\n",
		sysconf(_SC_NPROCESSORS_ONLN), u.release, total / 1048576.0, thp);
	fprintf(f, "  load       load average (1, 5, 15 min) %s at start, %s at end\n",
		b->load_start, b->load_end);
	fprintf(f, "  settings   S = %ld MiB, runs = %ld, kill runs in starved/stuck/cgroup-stuck = %ld, "
		   "timeout = %ld s\n",
		b->opt.size_mib, b->opt.runs, b->opt.kill_runs, b->opt.timeout_s);
	fprintf(f, "  victims    forked by mr-bench: mmap (MAP_POPULATE) and write every page of private\n"
		   "             anonymous memory, report ready on a pipe, pause; fresh ones for every run\n");
	fprintf(f, "  timed      from just before the SIGKILL or cgroup.kill (or the fork+exec of mrelease)\n"
		   "             until the memory is back.  SIGKILL + wait: the victim's pidfd polls\n"
		   "             readable (it exited); cgroup.kill + wait: cgroup.events says \"populated 0\"\n");
	if (b->v1_memory[0])
		fprintf(f, "             mrelease: it has exited and the anonymous RSS (memory.stat rss) of a\n"
			   "             cgroup-v1 memory cgroup that the victims joined (%s/mr-bench.*)\n"
			   "             is under 1%% of S; /proc/PID/status is not used, since exit_mm() drops\n"
			   "             the VmRSS line before the victim's exit has freed the memory\n",
			b->v1_memory);
	else
		fprintf(f, "             mrelease: it has exited and every victim's VmRSS reads 0 or is gone;\n"
			   "             no cgroup-v1 memory controller here, and exit_mm() drops the VmRSS\n"
			   "             line before the memory is freed, so these rows may read too low\n");
	if (b->opt.runs < 5)
		fprintf(f, "  note       fewer than 5 runs: min/median/max are not a real table\n");
}

static bool scenario_shown(const struct scenario *sc)
{
	return sc->ran && sc->available;
}

/* Each mrelease row against the limit, and the kill of its scenario
 * (SIGKILL or cgroup.kill, and wait) against it. */
static void print_ratios(const struct bench *b, FILE *f)
{
	static const enum row_id mrows[] = { ROW_MRELEASE, ROW_MRELEASE_STATUS, ROW_JOBS1, ROW_JOBS2 };

	fprintf(f, "\nRatios of medians                              this/limit  kill/this\n");
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++) {
		const struct scenario *sc = &b->sc[i];
		const struct series *kill = sc->row[ROW_KILL].label ? &sc->row[ROW_KILL]
								   : &sc->row[ROW_CGKILL];

		if (!scenario_shown(sc))
			continue;
		for (size_t r = 0; r < sizeof(mrows) / sizeof(mrows[0]); r++) {
			const struct series *s = &sc->row[mrows[r]];
			char a[32], k[32];

			if (!s->label)
				continue;
			fmt_ratio(a, sizeof(a), ratio_of(b, s, &sc->row[ROW_LIMIT]));
			fmt_ratio(k, sizeof(k), ratio_of(b, kill, s));
			fprintf(f, "  " ROW_FMT " %10s %10s\n", sc->name, s->label, a, k);
		}
	}
	fprintf(f, "  (kill = SIGKILL + wait; in cgroup and cgroup-stuck, cgroup.kill + wait)\n");
}

static void print_self_reports(const struct bench *b, FILE *f)
{
	fprintf(f, "\nmrelease's own report (one extra run each with --json instead of --quiet)\n");
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++)
		for (int r = 0; r < NROWS; r++) {
			const struct series *s = &b->sc[i].row[r];
			char w[32];

			if (!b->sc[i].ran || !s->self.have)
				continue;
			fmt_ms(w, sizeof(w), s->self.wall_ns, b);
			if (s->self.error[0])
				fprintf(f, "  %-12s %-18s %s\n", b->sc[i].name, s->label, s->self.error);
			else
				fprintf(f, "  %-12s %-18s wall %s; reports elapsed_us %lld, slowest "
					   "release_us %lld (targets: %d)\n",
					b->sc[i].name, s->label, w, s->self.elapsed_us,
					s->self.release_us, s->self.targets);
		}
}

static void print_overhead(const struct bench *b, FILE *f)
{
	struct stats none;
	bool have_none = series_stats(&b->oh.measure[2], &none);

	fprintf(f, "\nmrelease overhead (wall time of fork+exec+exit, %ld runs)\n",
		b->opt.overhead_runs);
	print_row(b, f, "overhead", &b->oh.dry_small);
	for (int m = 0; m < 3; m++) {
		struct stats st;
		char label[48], d[32];

		print_row(b, f, "measure", &b->oh.measure[m]);
		if (m < 2 && have_none && series_stats(&b->oh.measure[m], &st) &&
		    st.med != TIMED_OUT && none.med != TIMED_OUT) {
			snprintf(label, sizeof(label), "--measure=%s", measure_modes[m]);
			fmt_ms(d, sizeof(d), st.med - none.med > 0 ? st.med - none.med : 0, b);
			fprintf(f, "%-12s %-32s costs %s over --measure=none (medians, %zu MiB victim)\n",
				"", label, d, b->bytes >> 20);
		}
	}
}

static void print_report(const struct bench *b, FILE *f)
{
	struct target t[MAX_TARGETS];
	int nt = collect_targets(b, t);
	int64_t took = now_ns() - b->started;

	print_header(b, f);
	fprintf(f, "\n" ROW_FMT " %6s  %11s %11s %11s\n", "SCENARIO", "METHOD", "RUNS", "MIN",
		"MEDIAN", "MAX");
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++) {
		const struct scenario *sc = &b->sc[i];

		if (!sc->ran)
			continue;
		if (!sc->available) {
			fprintf(f, "%-12s not available: %s\n", sc->name, sc->why);
			continue;
		}
		for (int r = 0; r < NROWS; r++)
			print_row(b, f, sc->name, &sc->row[r]);
	}

	fprintf(f, "\nSetup\n");
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++)
		if (scenario_shown(&b->sc[i]))
			fprintf(f, "  %-12s %s\n", b->sc[i].name, b->sc[i].setup);
	fprintf(f, "\nCommands\n");
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++)
		for (int r = 0; r < NROWS; r++) {
			const struct series *s = &b->sc[i].row[r];

			if (scenario_shown(&b->sc[i]) && s->label)
				fprintf(f, "  " ROW_FMT " %s\n", b->sc[i].name, s->label, s->command);
		}

	print_ratios(b, f);

	fprintf(f, "\nTargets (medians; mrelease --kill rows with the default --measure=smaps)\n");
	fprintf(f, "  %-42s %9s  %8s    %s\n", "", "value", "goal", "result");
	for (int i = 0; i < nt; i++)
		fprintf(f, "  %-42s %9s  %8s    %s%s%s\n", t[i].what, t[i].value, t[i].goal,
			t[i].verdict, t[i].info[0] ? "  " : "", t[i].info);

	print_self_reports(b, f);
	if (b->oh.ran)
		print_overhead(b, f);

	fprintf(f, "\nNotes\n");
	fprintf(f, "  median is the middle run (the lower middle for an even count); \"> %ld s\" is a run\n"
		   "  stopped by --timeout, whose victims were then cleaned up (thawed, busy loop killed)\n",
		b->opt.timeout_s);
	if (b->opt.kill_runs != b->opt.runs)
		fprintf(f, "  SIGKILL + wait (starved, stuck) and cgroup.kill + wait (cgroup-stuck) ran %ld\n"
			   "  times (--kill-runs): there they are expected to time out\n",
			b->opt.kill_runs);
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++)
		for (int r = 0; r < NROWS; r++) {
			const struct series *s = &b->sc[i].row[r];

			if (b->sc[i].ran && s->failed)
				fprintf(f, "  %s %s: %d failed runs, first: %s\n", b->sc[i].name,
					s->label, s->failed, s->error);
		}
	fprintf(f, "  the benchmark took %.0f s\n", (double)took / NS_PER_S);
}

/* ---- JSON ---- */

static void json_us(FILE *f, int64_t ns)
{
	if (ns == TIMED_OUT)
		fputs("null", f);
	else
		fprintf(f, "%lld", (long long)(ns / NS_PER_US));
}

static void json_series(FILE *f, const char *id, const struct series *s)
{
	struct stats st;
	int timeouts = 0;

	fprintf(f, "{\"id\":\"%s\",\"label\":", id);
	mr_json_string(f, s->label);
	fputs(",\"command\":", f);
	mr_json_string(f, s->command);
	fprintf(f, ",\"available\":%s", s->available ? "true" : "false");
	if (!s->available) {
		fputs(",\"why\":", f);
		mr_json_string(f, s->why);
	}
	fprintf(f, ",\"planned\":%d,\"failed\":%d,\"samples_us\":[", s->planned, s->failed);
	for (int i = 0; i < s->n; i++) {
		fputs(i ? "," : "", f);
		json_us(f, s->samples[i]);
		timeouts += s->samples[i] == TIMED_OUT;
	}
	fprintf(f, "],\"timeouts\":%d", timeouts);
	if (series_stats(s, &st)) {
		fputs(",\"min_us\":", f);
		json_us(f, st.min);
		fputs(",\"median_us\":", f);
		json_us(f, st.med);
		fputs(",\"max_us\":", f);
		json_us(f, st.max);
	}
	if (s->error[0]) {
		fputs(",\"error\":", f);
		mr_json_string(f, s->error);
	}
	if (s->self.have) {
		fputs(",\"self_report\":{\"wall_us\":", f);
		json_us(f, s->self.wall_ns);
		fprintf(f, ",\"elapsed_us\":%lld,\"max_release_us\":%lld,\"targets\":%d}",
			s->self.elapsed_us, s->self.release_us, s->self.targets);
	}
	fputc('}', f);
}

static void write_json(const struct bench *b, const char *path)
{
	struct target t[MAX_TARGETS];
	int nt = collect_targets(b, t);
	FILE *f = fopen(path, "w");
	bool first = true;

	if (!f)
		err(EXIT_FATAL, "%s", path);
	fputs("{\"config\":{\"mrelease\":", f);
	mr_json_string(f, b->opt.mrelease);
	fputs(",\"version\":", f);
	mr_json_string(f, b->version);
	fprintf(f, ",\"size_mib\":%ld,\"runs\":%ld,\"kill_runs\":%ld,\"timeout_s\":%ld,"
		   "\"overhead_runs\":%ld,\"quick\":%s,\"cpus\":%ld,\"load_start\":",
		b->opt.size_mib, b->opt.runs, b->opt.kill_runs, b->opt.timeout_s,
		b->opt.overhead_runs, b->opt.quick ? "true" : "false",
		sysconf(_SC_NPROCESSORS_ONLN));
	mr_json_string(f, b->load_start);
	fputs(",\"load_end\":", f);
	mr_json_string(f, b->load_end);
	fprintf(f, ",\"memory_back\":\"%s\"},\"scenarios\":[", b->v1_memory[0] ? "memcg_v1_rss" : "vmrss");
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++) {
		const struct scenario *sc = &b->sc[i];
		bool first_row = true;

		if (!sc->ran)
			continue;
		fprintf(f, "%s{\"name\":\"%s\",\"available\":%s,", first ? "" : ",", sc->name,
			sc->available ? "true" : "false");
		first = false;
		fputs(sc->available ? "\"setup\":" : "\"why\":", f);
		mr_json_string(f, sc->available ? sc->setup : sc->why);
		fputs(",\"methods\":[", f);
		for (int r = 0; r < NROWS; r++) {
			if (!sc->row[r].label)
				continue;
			fputs(first_row ? "" : ",", f);
			first_row = false;
			json_series(f, row_ids[r], &sc->row[r]);
		}
		fputs("]}", f);
	}
	fputs("],\"targets\":[", f);
	for (int i = 0; i < nt; i++) {
		fprintf(f, "%s{\"what\":", i ? "," : "");
		mr_json_string(f, t[i].what);
		fputs(",\"goal\":", f);
		mr_json_string(f, t[i].goal);
		if (t[i].r.valid)
			fprintf(f, ",\"value\":%.3f,\"lower_bound\":%s", t[i].r.v,
				t[i].r.lower_bound ? "true" : "false");
		else
			fputs(",\"value\":null", f);
		fprintf(f, ",\"result\":\"%s\"", t[i].verdict);
		/* The --measure=status ratio, for information only. */
		if (t[i].info[0]) {
			fputs(",\"status_mode_value\":", f);
			if (t[i].info_r.valid)
				fprintf(f, "%.3f", t[i].info_r.v);
			else
				fputs("null", f);
		}
		fputc('}', f);
	}
	fputs("]", f);
	if (b->oh.ran) {
		fputs(",\"overhead\":{\"dry_run_small\":", f);
		json_series(f, "dry_run_small", &b->oh.dry_small);
		for (int m = 0; m < 3; m++) {
			fprintf(f, ",\"measure_%s\":", measure_modes[m]);
			json_series(f, measure_modes[m], &b->oh.measure[m]);
		}
		fputc('}', f);
	}
	fputs("}\n", f);
	if (fclose(f))
		err(EXIT_FATAL, "%s", path);
}

/* ---- options ---- */

static const char doc[] =
	"mr-bench -- time how fast mrelease gives memory back, against plain SIGKILL and the "
	"munmap() limit\v"
	"Scenarios: idle, starved (SCHED_IDLE victim under a nice -20 busy loop on CPU 1), "
	"stuck (cgroup-v1 freezer), cgroup (64 victims, --jobs 1 and 2 against cgroup.kill), "
	"cgroup-stuck (the same 64, also held in a cgroup-v1 freezer), "
	"overhead (--dry-run and --measure costs).  Needs root.  Exit status: 0 done (targets "
	"may still be missed), 2 usage error, 3 fatal error, 130 interrupted.  Usually run as "
	"'sudo tests/bench/run --build-dir build'.";

enum { OPT_KILL_RUNS = 256, OPT_OVERHEAD_RUNS, OPT_ONLY, OPT_QUICK };

static const struct argp_option options[] = {
	{ "size", 's', "MIB", 0, "memory per scenario in MiB (default 1024)", 0 },
	{ "runs", 'r', "N", 0, "runs per scenario and method (default 5)", 0 },
	{ "kill-runs", OPT_KILL_RUNS, "N", 0,
	  "runs of SIGKILL+wait in starved and stuck, and of cgroup.kill+wait in cgroup-stuck, "
	  "which wait out the timeout (default: --runs)", 0 },
	{ "timeout", 't', "SECONDS", 0, "stop waiting for memory after this long (default 30)", 0 },
	{ "overhead-runs", OPT_OVERHEAD_RUNS, "N", 0, "runs of each overhead measurement (default 20)", 0 },
	{ "only", OPT_ONLY, "LIST", 0,
	  "run only these of idle,starved,stuck,cgroup,cgroup-stuck,overhead", 0 },
	{ "json", 'j', "FILE", 0, "also write the results as JSON to FILE", 0 },
	{ "quick", OPT_QUICK, NULL, 0, "smoke run: 64 MiB, 1 run, 5 s timeout, 3 overhead runs", 0 },
	{ 0 }
};

static long parse_num(const char *arg, long min, long max, struct argp_state *state)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		argp_error(state, "'%s': not a number in %ld..%ld", arg, min, max);
	return v;
}

static unsigned parse_only(char *arg, struct argp_state *state)
{
	unsigned mask = 0;

	for (char *save, *w = strtok_r(arg, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < NSCENARIOS && strcmp(w, scenario_names[i]); i++)
			;
		if (i == NSCENARIOS)
			argp_error(state, "'%s': not a scenario", w);
		mask |= 1u << i;
	}
	return mask;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct bench_opts *o = state->input;

	switch (key) {
	case 's': o->size_mib = parse_num(arg, 64, 1L << 20, state); o->size_set = true; break;
	case 'r': o->runs = parse_num(arg, 1, MAX_RUNS, state); o->runs_set = true; break;
	case OPT_KILL_RUNS:
		o->kill_runs = parse_num(arg, 0, MAX_RUNS, state);
		o->kill_runs_set = true;
		break;
	case 't': o->timeout_s = parse_num(arg, 1, 3600, state); o->timeout_set = true; break;
	case OPT_OVERHEAD_RUNS:
		o->overhead_runs = parse_num(arg, 1, MAX_RUNS, state);
		o->overhead_set = true;
		break;
	case OPT_ONLY: o->only = parse_only(arg, state); break;
	case 'j': o->json = arg; break;
	case OPT_QUICK: o->quick = true; break;
	case ARGP_KEY_ARG:
		if (o->mrelease)
			argp_error(state, "one MRELEASE binary only");
		o->mrelease = arg;
		break;
	case ARGP_KEY_END:
		if (!o->mrelease)
			argp_error(state, "give the path of the mrelease binary");
		/* --quick sets the defaults; explicit options still win. */
		if (o->quick) {
			if (!o->size_set)
				o->size_mib = 64;
			if (!o->runs_set)
				o->runs = 1;
			if (!o->timeout_set)
				o->timeout_s = 5;
			if (!o->overhead_set)
				o->overhead_runs = 3;
		}
		if (!o->kill_runs_set || o->kill_runs > o->runs)
			o->kill_runs = o->runs;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ---- set-up ---- */

static void install_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	/* No SA_RESTART: a ^C must wake whatever poll() is waiting. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	driver_pid = getpid();
	for (int i = 0; i < MAX_KIDS; i++)
		kids[i].pidfd = -1;
	if (atexit(cleanup))
		errx(EXIT_FATAL, "atexit");
}

/* The cgroup2 mount and the v1 freezer and memory hierarchies, as
 * /proc/self/mountinfo has them: never hard-coded, since a hybrid system
 * mounts cgroup2 beside the v1 controllers. */
static void find_mounts(struct bench *b)
{
	static const struct {
		const char *controller; /* NULL: cgroup2 */
		size_t off;
	} want[] = {
		{ "freezer", offsetof(struct bench, v1_freezer) },
		{ "memory", offsetof(struct bench, v1_memory) },
		{ NULL, offsetof(struct bench, v2_root) },
	};
	struct mr_cgmounts ms;
	int r = mr_cgmounts_read(&ms, "/proc/self/mountinfo");

	if (r) {
		errno = -r;
		err(EXIT_FATAL, "/proc/self/mountinfo");
	}
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct mr_cgmount *m = want[i].controller
						     ? mr_cgmounts_v1(&ms, want[i].controller)
						     : mr_cgmounts_v2(&ms);

		if (m)
			snprintf((char *)b + want[i].off, PATH_MAX, "%s", m->path);
	}
	mr_cgmounts_free(&ms);
}

static void prepare(struct bench *b)
{
	const char *args[] = { "--version", NULL };
	struct tool_result r;

	if (geteuid() != 0)
		errx(EXIT_FATAL, "needs root (cgroups, nice -20): sudo tests/bench/run");
	b->bytes = (size_t)b->opt.size_mib << 20;
	b->timeout_ns = b->opt.timeout_s * NS_PER_S;
	b->started = now_ns();
	read_load(b->load_start, sizeof(b->load_start));
	run_tool(b, args, true, 10 * NS_PER_S, &r);
	if (r.status != 0)
		errx(EXIT_FATAL, "%s --version: %s", b->opt.mrelease,
		     r.err[0] ? r.err : "failed");
	r.out[strcspn(r.out, "\n")] = '\0';
	snprintf(b->version, sizeof(b->version), "%s", r.out);
	free(r.out);
	find_mounts(b);
	for (int i = SC_IDLE; i < SC_OVERHEAD; i++)
		b->sc[i].name = scenario_names[i];
}

static bool wanted(const struct bench *b, enum scenario_id id)
{
	return !b->opt.only || (b->opt.only & (1u << id));
}

static void run_scenarios(struct bench *b)
{
	static void (*const run[])(struct bench *, struct scenario *) = {
		[SC_IDLE] = scenario_idle,
		[SC_STARVED] = scenario_starved,
		[SC_STUCK] = scenario_stuck,
		[SC_CGROUP] = scenario_cgroup,
		[SC_CGSTUCK] = scenario_cgroup_stuck,
	};

	for (int i = SC_IDLE; i < SC_OVERHEAD; i++) {
		if (!wanted(b, i))
			continue;
		b->sc[i].ran = true;
		run[i](b, &b->sc[i]);
		if (!b->sc[i].available)
			warnx("%s: not available: %s", b->sc[i].name, b->sc[i].why);
	}
	if (wanted(b, SC_OVERHEAD))
		scenario_overhead(b);
}

int main(int argc, char **argv)
{
	static struct bench b = {
		.opt = { .size_mib = 1024, .runs = 5, .timeout_s = 30, .overhead_runs = 20 },
	};
	static const struct argp argp = { options, parse_opt, "MRELEASE", doc, NULL, NULL, NULL };

	argp_err_exit_status = EXIT_USAGE;
	argp_parse(&argp, argc, argv, 0, NULL, &b.opt);
	install_handlers();
	prepare(&b);
	run_scenarios(&b);
	cleanup();
	read_load(b.load_end, sizeof(b.load_end));
	print_report(&b, stdout);
	if (b.opt.json)
		write_json(&b, b.opt.json);
	return EXIT_DONE;
}
