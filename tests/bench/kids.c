/* kids.c: the children mr-bench starts -- victims, the busy loop, the
 * munmap child, the template that clones victims, the OOM victim and the
 * holder that keeps it stuck -- and the clean-up that ends and reaps every
 * one of them (a service, mrelease --follow, with SIGTERM, the rest with
 * SIGKILL) and removes every cgroup, on every exit: a normal end, err(),
 * ^C.  Children are only ever signalled through
 * pidfds opened while they are unreaped children of mr-bench (a template's
 * copies are too: see template_main), so a signal can never reach a
 * recycled pid. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"
#include "sys.h"

/* batches holds 2000 victims at once, with a few helpers beside them. */
#define MAX_KIDS 2100

/* Slots are stable, so pointers to them stay valid until reaped. */
static struct kid kids[MAX_KIDS];
static pid_t driver_pid;
static volatile sig_atomic_t interrupted;

void check_interrupt(void)
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
bool poll_until(int fd, short events, int64_t deadline, bool interruptible)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left;
		struct timespec ts;
		int r;

		if (interruptible)
			check_interrupt();
		left = deadline - mr_now_us();
		if (left < 0)
			left = 0;
		ts.tv_sec = left / US_PER_S;
		ts.tv_nsec = (left % US_PER_S) * 1000;
		r = ppoll(&p, 1, &ts, NULL);
		if (r > 0)
			return true;
		if (r == 0)
			return false;
		if (errno != EINTR)
			err(EXIT_FATAL, "poll");
	}
}

void sleep_us(int64_t us)
{
	struct timespec ts = { .tv_sec = us / US_PER_S, .tv_nsec = (us % US_PER_S) * 1000 };

	check_interrupt();
	while (nanosleep(&ts, &ts) && errno == EINTR)
		check_interrupt();
}

/* Fresh memory is touched at a few hundred MiB/s on this kind of VM;
 * allow 10 MiB/s plus half a minute before calling a victim stuck. */
int64_t setup_budget(size_t bytes)
{
	return 30 * US_PER_S + (int64_t)(bytes / (10 * MIB)) * US_PER_S;
}

void spec_join(struct spawn_spec *s, const char *cgroup)
{
	if (cgroup)
		s->join[s->njoin++] = cgroup;
}

struct kid *kid_track(pid_t pid, bool first)
{
	for (int i = 0; i < MAX_KIDS; i++) {
		struct kid *k = &kids[i];

		if (k->pid)
			continue;
		*k = (struct kid){ .pid = pid, .first = first, .stop_signal = SIGKILL, .ask = -1,
				   .answer = -1 };
		k->pidfd = mr_sys_pidfd_open(pid);
		if (k->pidfd < 0)
			err(EXIT_FATAL, "pidfd_open %d", pid);
		return k;
	}
	errx(EXIT_FATAL, "more than %d children", MAX_KIDS);
}

/* The caller has reaped it. */
void kid_untrack(struct kid *k)
{
	close(k->pidfd);
	if (k->ask >= 0)
		close(k->ask);
	if (k->answer >= 0)
		close(k->answer);
	*k = (struct kid){ .pidfd = -1, .stop_signal = SIGKILL, .ask = -1, .answer = -1 };
}

static pid_t template_read(struct kid *t, int64_t deadline, bool interruptible);

/* A copy asked of a dead template may still come (it clones, then dies):
 * a child of ours all the same, to be reaped. */
static void template_collect(struct kid *t)
{
	pid_t pid;

	if (!t->pending)
		return;
	t->pending = false;
	pid = template_read(t, mr_now_us() + 5 * US_PER_S, false);
	if (pid > 0)
		kid_reap(kid_track(pid, false));
}

/* Its stop signal through the pidfd (SIGKILL, or for a service SIGTERM,
 * then SIGKILL if it is still there after 5 s), wait (bounded), reap.
 * Frozen victims must be thawed first.  Returns the wait status. */
int kid_reap(struct kid *k)
{
	int status = 0;

	if (!k || !k->pid)
		return 0;
	mr_sys_pidfd_send_signal(k->pidfd, k->stop_signal);
	if (k->stop_signal != SIGKILL &&
	    !poll_until(k->pidfd, POLLIN, mr_now_us() + 5 * US_PER_S, false)) {
		warnx("pid %d: still running 5 s after SIG%s; killing it", k->pid,
		      sigabbrev_np(k->stop_signal));
		mr_sys_pidfd_send_signal(k->pidfd, SIGKILL);
	}
	if (!poll_until(k->pidfd, POLLIN, mr_now_us() + 20 * US_PER_S, false)) {
		warnx("pid %d: still alive 20 s after SIGKILL; leaving it", k->pid);
		waitpid(k->pid, &status, WNOHANG);
	} else {
		while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	template_collect(k);
	kid_untrack(k);
	return status;
}

/* Runs on every exit of the driver, err() and ^C included: thaw the
 * freezers, stop the busy loops and the holders (so starved and stalled
 * victims can die), end and reap every child (SIGTERM for a service),
 * remove every cgroup, unmount tracefs if mr-bench mounted it. */
void cleanup(void)
{
	if (getpid() != driver_pid)
		return;
	cg_thaw_all();
	for (int i = 0; i < MAX_KIDS; i++)
		if (kids[i].pid && kids[i].first)
			kid_reap(&kids[i]);
	for (int i = 0; i < MAX_KIDS; i++)
		kid_reap(&kids[i]);
	cg_remove_all();
	tracefs_done();
}

/* Enough descriptors for a pidfd per child and the pipes beside them. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	rlim_t want = 4 * MAX_KIDS;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		err(EXIT_FATAL, "getrlimit");
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = want;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
			rl.rlim_max = want;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			err(EXIT_FATAL, "setrlimit RLIMIT_NOFILE %lu", (unsigned long)want);
	}
}

void kids_init(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	/* No SA_RESTART: a ^C must wake whatever poll() is waiting. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	driver_pid = getpid();
	for (int i = 0; i < MAX_KIDS; i++)
		kids[i] = (struct kid){ .pidfd = -1, .stop_signal = SIGKILL, .ask = -1,
					.answer = -1 };
	raise_fd_limit();
	if (atexit(cleanup))
		errx(EXIT_FATAL, "atexit");
}

/* ---- in the child ---- */

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

/* Die with the driver, whatever happens to it; take the default signal
 * handlers and a name that says what we are. */
static void kid_settle(const struct spawn_spec *s, pid_t parent, const char *comm)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, s->ignore_term ? SIG_IGN : SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	prctl(PR_SET_NAME, comm);
}

static void kid_join(const struct spawn_spec *s)
{
	for (int i = 0; i < s->njoin; i++)
		if (mr_write_file(s->join[i], "cgroup.procs", "0", NULL))
			kid_fail("join cgroup");
}

static _Noreturn void hog_main(const struct spawn_spec *s, int report_fd)
{
	if (setpriority(PRIO_PROCESS, 0, -20))
		kid_fail("nice -20");
	kid_pin(s->cpu);
	if (write(report_fd, "r", 1) != 1)
		kid_fail("report");
	for (volatile unsigned long spin = 0;; spin++)
		;
}

/* Times its own munmap() of what it touched, and writes the time. */
static _Noreturn void munmap_main(const struct spawn_spec *s, void **map, size_t chunk,
				  int report_fd)
{
	int64_t t0, dt;

	if (s->cpu >= 0)
		kid_pin(s->cpu);
	t0 = mr_now_us();
	for (int i = 0; i < s->chunks; i++)
		if (munmap(map[i], chunk))
			kid_fail("munmap");
	dt = mr_now_us() - t0;
	if (write(report_fd, &dt, sizeof(dt)) != sizeof(dt))
		kid_fail("report");
	_exit(0);
}

static _Noreturn void victim_main(const struct spawn_spec *s, int report_fd)
{
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

/* A copy of a template: the same memory, shared copy-on-write, in page
 * tables of its own as large as the template's; it joins the cgroups,
 * writes its pid, and waits to be killed. */
static _Noreturn void copy_main(const struct spawn_spec *s, int report_fd, pid_t parent)
{
	pid_t self = getpid();

	kid_settle(s, parent, VICTIM_COMM);
	kid_join(s);
	if (write(report_fd, &self, sizeof(self)) != sizeof(self))
		kid_fail("report");
	for (;;)
		pause();
}

/* Touched once, a template answers each byte on ask_fd with a copy of
 * itself: a victim of the same size in milliseconds, where touching fresh
 * memory takes seconds per GiB.  CLONE_PARENT makes each copy mr-bench's
 * own child, so that mr-bench opens its pidfd while it is an unreaped
 * child and reaps it.  Its answers are pid_t: 0 once ready, then each
 * copy's pid (written by the copy) or -errno. */
static _Noreturn void template_main(const struct spawn_spec *s, int report_fd, int ask_fd,
				    pid_t parent)
{
	pid_t msg = 0;
	char c;

	if (write(report_fd, &msg, sizeof(msg)) != sizeof(msg))
		kid_fail("report");
	while (read(ask_fd, &c, 1) == 1) {
		msg = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
		if (msg == 0)
			copy_main(s, report_fd, parent);
		if (msg < 0) {
			msg = -errno;
			if (write(report_fd, &msg, sizeof(msg)) != sizeof(msg))
				kid_fail("report");
		}
	}
	_exit(0);
}

/* ---- the OOM victim and its holder (oom) ----
 *
 * The OOM killer thaws every thread of its victim (thaw_process(), Linux
 * 6.18), so no freezer holds one.  What holds it is an uninterruptible
 * sleep that no signal ends and no thaw touches: a thread of the victim
 * waits in mutex_lock() for the lock of a pipe (pipe_write() takes it so),
 * which a holder, another child, keeps: its own write to that pipe copies
 * from a page that userfaultfd leaves missing, and no one ever answers the
 * fault.  The victim's other thread goes over its memory cgroup's limit
 * when told; the OOM killer kills it, and its exit stops at the waiting
 * thread, which keeps the memory: only a reaper can take it.  Killing the
 * holder ends its write and lets the lock go, and the victim dies. */

static int holder_uffd;

/* The holder's second thread: the fault is there, so the write holds the
 * pipe's lock; say so, and never answer it. */
static void *holder_watch(void *arg)
{
	struct uffd_msg msg;
	int report_fd = (int)(intptr_t)arg;

	if (read(holder_uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		kid_fail("userfaultfd read");
	if (write(report_fd, "r", 1) != 1)
		kid_fail("report");
	for (;;)
		pause();
}

static _Noreturn void holder_main(const struct spawn_spec *s, int report_fd)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t t;

	if (p == MAP_FAILED)
		kid_fail("mmap");
	/* Not UFFD_USER_MODE_ONLY: the fault to catch is the kernel's own
	 * copy in pipe_write(); root may catch those. */
	holder_uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	reg.range = (struct uffdio_range){ (unsigned long)p, page };
	if (holder_uffd < 0 || ioctl(holder_uffd, UFFDIO_API, &api) ||
	    ioctl(holder_uffd, UFFDIO_REGISTER, &reg))
		kid_fail("userfaultfd");
	if ((errno = pthread_create(&t, NULL, holder_watch, (void *)(intptr_t)report_fd)))
		kid_fail("pthread_create");
	if (write(s->stall_fd, p, page) < 0)
		kid_fail("write to the pipe");
	kid_fail("the fault was answered");
}

static int oom_stall_fd, oom_report_fd;

/* The victim's second thread: ready, then into the pipe's lock for good. */
static void *oom_stall(void *arg)
{
	(void)arg;
	if (write(oom_report_fd, "r", 1) != 1)
		kid_fail("report");
	if (write(oom_stall_fd, "x", 1) < 0)
		kid_fail("write to the pipe");
	for (;;)
		pause();
}

static _Noreturn void oom_main(const struct spawn_spec *s, int report_fd, int ask_fd)
{
	pthread_t t;
	char c;

	oom_stall_fd = s->stall_fd;
	oom_report_fd = report_fd;
	if ((errno = pthread_create(&t, NULL, oom_stall, NULL)))
		kid_fail("pthread_create");
	if (read(ask_fd, &c, 1) != 1)
		kid_fail("read");
	kid_touch(s->over);
	errno = 0;
	kid_fail("over the limit, and not killed");
}

static _Noreturn void kid_main(const struct spawn_spec *s, int report_fd, int ask_fd,
			       pid_t parent)
{
	static const char *const comm[] = {
		[KID_VICTIM] = VICTIM_COMM, [KID_HOG] = "mrb-busy", [KID_MUNMAP] = "mrb-munmap",
		[KID_TEMPLATE] = "mrb-template", [KID_HOLDER] = "mrb-holder",
		[KID_OOM] = "mrb-oom-victim",
	};
	void *map[64];
	size_t chunk = s->bytes / (size_t)s->chunks;

	kid_settle(s, parent, comm[s->kind]);
	if (s->kind != KID_TEMPLATE)
		kid_join(s);
	if (s->kind == KID_HOG)
		hog_main(s, report_fd);
	if (s->kind == KID_HOLDER)
		holder_main(s, report_fd);
	if (s->chunks < 1 || s->chunks > (int)ARRAY_LEN(map))
		_exit(1);
	for (int i = 0; i < s->chunks; i++)
		map[i] = kid_touch(chunk);
	if (s->kind == KID_MUNMAP)
		munmap_main(s, map, chunk, report_fd);
	if (s->kind == KID_TEMPLATE)
		template_main(s, report_fd, ask_fd, parent);
	if (s->kind == KID_OOM)
		oom_main(s, report_fd, ask_fd);
	victim_main(s, report_fd);
}

/* ---- in the driver ---- */

/* ask: a template's request pipe, or NULL. */
static struct kid *kid_fork(const struct spawn_spec *s, int report_fd[2], int ask[2])
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		err(EXIT_FATAL, "fork");
	if (pid == 0) {
		close(report_fd[0]);
		if (ask)
			close(ask[1]);
		kid_main(s, report_fd[1], ask ? ask[0] : -1, parent);
	}
	return kid_track(pid, s->kind == KID_HOG || s->kind == KID_HOLDER);
}

/* n children of one kind, reporting ready on one pipe, a byte each; they
 * touch their memory side by side.  A child that dies first is noticed on
 * its pidfd within 0.1 s, not at the deadline. */
void start_victims(const struct spawn_spec *s, int n, struct kid **out)
{
	int64_t deadline = mr_now_us() + setup_budget(s->bytes * (size_t)n);
	struct pollfd *dead = calloc((size_t)n, sizeof(*dead));
	int p[2], got = 0;
	char buf[64];

	if (!dead)
		err(EXIT_FATAL, "malloc");
	if (pipe2(p, O_CLOEXEC))
		err(EXIT_FATAL, "pipe");
	for (int i = 0; i < n; i++) {
		out[i] = kid_fork(s, p, NULL);
		dead[i] = (struct pollfd){ .fd = out[i]->pidfd, .events = POLLIN };
	}
	close(p[1]);
	while (got < n) {
		ssize_t r;

		if (!poll_until(p[0], POLLIN, mr_now_us() + 100 * US_PER_MS, true)) {
			if (poll(dead, (nfds_t)n, 0) > 0)
				for (int i = 0; i < n; i++)
					if (dead[i].revents)
						errx(EXIT_FATAL, "child %d: died before it was ready",
						     out[i]->pid);
			if (mr_now_us() > deadline)
				errx(EXIT_FATAL, "%d of %d children not ready after %lld s", n - got,
				     n, (long long)(setup_budget(s->bytes * (size_t)n) / US_PER_S));
			continue;
		}
		r = read(p[0], buf, (size_t)(n - got) < sizeof(buf) ? (size_t)(n - got) : sizeof(buf));
		if (r == 0)
			errx(EXIT_FATAL, "children died before they were ready");
		if (r < 0 && errno != EINTR)
			err(EXIT_FATAL, "read");
		if (r > 0)
			got += (int)r;
	}
	close(p[0]);
	free(dead);
}

struct kid *start_victim(const struct spawn_spec *s)
{
	struct kid *k;

	start_victims(s, 1, &k);
	return k;
}

/* The nice -20 busy loop that starves a SCHED_IDLE victim on cpu. */
struct kid *start_hog(int cpu)
{
	struct spawn_spec s = { .kind = KID_HOG, .chunks = 1, .cpu = cpu };
	struct kid *k = start_victim(&s);

	/* Let it settle on the CPU before the victim is woken by SIGKILL. */
	sleep_us(100 * US_PER_MS);
	return k;
}

/* len bytes from fd by the deadline: 0, -ETIMEDOUT, -EPIPE (the writers
 * are gone) or -errno. */
static int read_all(int fd, void *buf, size_t len, int64_t deadline, bool interruptible)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n;

		if (!poll_until(fd, POLLIN, deadline, interruptible))
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

/* A child touches the memory and times its own munmap() of it.  0 with
 * *us, or -errno. */
int munmap_run(const struct spawn_spec *s, int64_t extra_us, int64_t *us)
{
	int64_t deadline = mr_now_us() + setup_budget(s->bytes) + extra_us;
	int p[2], e;
	struct kid *k;

	if (pipe2(p, O_CLOEXEC))
		err(EXIT_FATAL, "pipe");
	k = kid_fork(s, p, NULL);
	close(p[1]);
	e = read_all(p[0], us, sizeof(*us), deadline, true);
	close(p[0]);
	kid_reap(k);
	return e;
}

/* ---- templates: victims cloned from one touched process ---- */

/* The template's next answer (template_main): a pid, 0, or -errno. */
static pid_t template_read(struct kid *t, int64_t deadline, bool interruptible)
{
	pid_t msg;
	int e = read_all(t->answer, &msg, sizeof(msg), deadline, interruptible);

	return e ? e : msg;
}

/* A template of s->bytes, touched once; its copies join s->join. */
struct kid *start_template(const struct spawn_spec *s)
{
	int64_t deadline = mr_now_us() + setup_budget(s->bytes);
	int report[2], ask[2];
	struct kid *t;
	pid_t r;

	if (pipe2(report, O_CLOEXEC) || pipe2(ask, O_CLOEXEC))
		err(EXIT_FATAL, "pipe");
	t = kid_fork(s, report, ask);
	close(report[1]);
	close(ask[0]);
	t->answer = report[0];
	t->ask = ask[1];
	if ((r = template_read(t, deadline, true)))
		errx(EXIT_FATAL, "template %d: not ready: %s", t->pid, strerror(-r));
	return t;
}

/* A fresh copy of the template, in its cgroups, not yet frozen. */
struct kid *template_copy(struct kid *t)
{
	pid_t pid;

	t->pending = true;
	if (write(t->ask, "c", 1) != 1)
		err(EXIT_FATAL, "template %d", t->pid);
	pid = template_read(t, mr_now_us() + 10 * US_PER_S, true);
	t->pending = false;
	if (pid <= 0)
		errx(EXIT_FATAL, "template %d: no copy: %s", t->pid,
		     strerror(pid ? -pid : EPROTO));
	return kid_track(pid, false);
}

/* ---- the OOM victim (oom) ---- */

/* A victim of s->bytes whose second thread waits for the lock of the pipe
 * s->stall_fd (kept by a holder started first), in its cgroups, ready once
 * that thread is about to wait; oom_go tells it to touch s->over more. */
struct kid *start_oom_victim(const struct spawn_spec *s)
{
	int64_t deadline = mr_now_us() + setup_budget(s->bytes);
	int report[2], ask[2], e;
	struct kid *k;
	char c;

	if (pipe2(report, O_CLOEXEC) || pipe2(ask, O_CLOEXEC))
		err(EXIT_FATAL, "pipe");
	k = kid_fork(s, report, ask);
	close(report[1]);
	close(ask[0]);
	k->ask = ask[1];
	e = read_all(report[0], &c, 1, deadline, true);
	close(report[0]);
	if (e)
		errx(EXIT_FATAL, "OOM victim %d: not ready: %s", k->pid,
		     e == -EPIPE ? "it died" : strerror(-e));
	return k;
}

void oom_go(struct kid *k)
{
	if (write(k->ask, "g", 1) != 1)
		err(EXIT_FATAL, "OOM victim %d", k->pid);
}
