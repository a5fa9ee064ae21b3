/* victim.c: a process for the tests to release: it allocates and touches
 * memory, says it is ready, and waits to be killed. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: mr-victim [-m MIB] [-c N | -C N] [-k] [-i] [-T | -e] [-D] [-u] [-t | -d | -x | -s | -z]\n"
	"                 [-R LOCKFILE] [-r FILE]\n"
	"       mr-victim -W LOCKFILE\n"
	"  -m MIB   allocate and touch MIB of private anonymous memory\n"
	"  -c N     fork N children that each touch MIB too\n"
	"  -C N     fork N children that only share our MIB, copy-on-write\n"
	"  -k       keep forking short-lived children until killed\n"
	"  -i       run at SCHED_IDLE\n"
	"  -T       ignore SIGTERM\n"
	"  -e       on SIGTERM, exit by itself 0.2 s later (a graceful stop)\n"
	"  -D       not dumpable (PR_SET_DUMPABLE 0): /proc denies its memory\n"
	"           figures to all but CAP_SYS_PTRACE\n"
	"  -u       on each SIGUSR1, fork a child that touches MIB and waits\n"
	"  -t       start a second thread and report its tid as well\n"
	"  -d       as -t; on SIGUSR2, which only that thread takes, it dumps\n"
	"           core (SIGSEGV): the dump waits for the main thread, held\n"
	"           by a v1 freezer, to exit\n"
	"  -x       as -t, then end the main thread (pthread_exit): the leader\n"
	"           is a zombie while the process lives on\n"
	"  -s       start a process that shares our address space (CLONE_VM)\n"
	"           and report its pid as well\n"
	"  -z       leave a zombie child and report its pid as well\n"
	"  -R LOCK  hold a robust mutex shared between processes, in LOCK (a file\n"
	"           it makes, mapped shared)\n"
	"  -W LOCK  wait up to 5 s for the mutex in LOCK, then print \"owner died\"\n"
	"           (its holder died, and the kernel said so) or \"timed out\"\n"
	"  -r FILE  write \"PID [OTHER]\" to FILE once ready\n";

static volatile sig_atomic_t fork_wanted;

static void want_fork(int sig)
{
	(void)sig;
	fork_wanted = 1;
}

static void dump_core(int sig)
{
	(void)sig;
	signal(SIGSEGV, SIG_DFL);
	raise(SIGSEGV);
}

static void exit_later(int sig)
{
	(void)sig;
	usleep(200000);
	_exit(0);
}

static void *touch(size_t mib)
{
	size_t len = mib << 20;
	char *p;

	if (len == 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		err(1, "mmap %zu MiB", mib);
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
	return p;
}

/* The robust, process-shared mutex in file lock, mapped shared. */
static pthread_mutex_t *robust_mutex(const char *lock, bool create)
{
	int fd = open(lock, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0600);
	pthread_mutex_t *m;

	if (fd < 0 || (create && ftruncate(fd, sizeof(*m))))
		err(1, "%s", lock);
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		err(1, "mmap %s", lock);
	close(fd);
	if (create) {
		pthread_mutexattr_t a;

		pthread_mutexattr_init(&a);
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
		if (pthread_mutex_init(m, &a))
			errx(1, "pthread_mutex_init");
	}
	return m;
}

/* -W: wait for the mutex its holder keeps; say how that ended. */
static int wait_robust(const char *lock)
{
	pthread_mutex_t *m = robust_mutex(lock, false);
	struct timespec until;
	int r;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	r = pthread_mutex_timedlock(m, &until);
	puts(r == EOWNERDEAD ? "owner died" : r == ETIMEDOUT ? "timed out" : strerror(r));
	return r == EOWNERDEAD ? 0 : 1;
}

static void *sleeper(void *arg)
{
	pid_t tid = gettid();

	if (write(*(int *)arg, &tid, sizeof(tid)) != sizeof(tid))
		err(1, "write");
	for (;;)
		pause();
}

static int share_mm(void *arg)
{
	(void)arg;
	while (pause())
		;
	return 0;
}

static bool is_zombie(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z';
}

static void write_ready(const char *file, pid_t tid)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "w");
	if (!f)
		err(1, "%s", tmp);
	if (tid)
		fprintf(f, "%d %d\n", getpid(), tid);
	else
		fprintf(f, "%d\n", getpid());
	if (fclose(f) || rename(tmp, file))
		err(1, "%s", file);
}

int main(int argc, char **argv)
{
	size_t mib = 0;
	int children = 0, sharers = 0, keep_forking = 0, idle = 0, thread = 0, shared = 0, zombie = 0;
	int ignore_term = 0, graceful = 0, undumpable = 0, fork_on_usr1 = 0;
	int leader_exits = 0, dumper = 0, c;
	const char *ready = NULL, *lock = NULL;
	pid_t tid = 0;

	while ((c = getopt(argc, argv, "m:c:C:kiTeDutdxszR:W:r:")) != -1) {
		switch (c) {
		case 'm': mib = strtoul(optarg, NULL, 10); break;
		case 'c': children = atoi(optarg); break;
		case 'C': sharers = atoi(optarg); break;
		case 'k': keep_forking = 1; break;
		case 'i': idle = 1; break;
		case 'T': ignore_term = 1; break;
		case 'e': graceful = 1; break;
		case 'D': undumpable = 1; break;
		case 'u': fork_on_usr1 = 1; break;
		case 't': thread = 1; break;
		case 'd': thread = dumper = 1; break;
		case 'x': thread = leader_exits = 1; break;
		case 's': shared = 1; break;
		case 'z': zombie = 1; break;
		case 'R': lock = optarg; break;
		case 'W': return wait_robust(optarg);
		case 'r': ready = optarg; break;
		default: fputs(usage, stderr); return 2;
		}
	}
	/* A shell starts background jobs with SIGINT and SIGQUIT ignored, and
	 * whatever runs the tests may ignore or block others: a victim takes
	 * every signal as a service would. */
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (idle) {
		struct sched_param sp = { 0 };
		if (sched_setscheduler(0, SCHED_IDLE, &sp))
			err(1, "SCHED_IDLE");
	}
	if (ignore_term)
		signal(SIGTERM, SIG_IGN);
	if (graceful)
		signal(SIGTERM, exit_later);
	if (fork_on_usr1) {
		struct sigaction sa = { .sa_handler = want_fork };

		sigaction(SIGUSR1, &sa, NULL);
		signal(SIGCHLD, SIG_IGN);
	}
	if (undumpable && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		err(1, "PR_SET_DUMPABLE");
	touch(mib);
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();
		if (pid < 0)
			err(1, "fork");
		if (pid == 0) {
			touch(mib);
			for (;;)
				pause();
		}
	}
	for (int i = 0; i < sharers; i++) {
		pid_t pid = fork();
		if (pid < 0)
			err(1, "fork");
		if (pid == 0)
			for (;;)
				pause();
	}
	if (thread) {
		pthread_t t;
		int pfd[2];
		if (pipe(pfd))
			err(1, "pipe");
		if (pthread_create(&t, NULL, sleeper, &pfd[1]))
			errx(1, "pthread_create");
		if (read(pfd[0], &tid, sizeof(tid)) != sizeof(tid))
			err(1, "read");
		if (dumper) {
			sigset_t usr2;

			signal(SIGUSR2, dump_core);
			sigemptyset(&usr2);
			sigaddset(&usr2, SIGUSR2);
			pthread_sigmask(SIG_BLOCK, &usr2, NULL);
		}
	}
	if (shared) {
		static char stack[64 << 10];

		tid = clone(share_mm, stack + sizeof(stack), CLONE_VM | SIGCHLD, NULL);
		if (tid < 0)
			err(1, "clone");
	}
	if (zombie) {
		tid = fork();
		if (tid < 0)
			err(1, "fork");
		if (tid == 0)
			_exit(0);
		/* Not reaped: it stays a zombie while we live. */
		for (int i = 0; i < 10000 && !is_zombie(tid); i++)
			usleep(1000);
	}
	if (lock && pthread_mutex_lock(robust_mutex(lock, true)))
		errx(1, "pthread_mutex_lock");
	if (ready)
		write_ready(ready, tid);
	if (leader_exits)
		pthread_exit(NULL);
	if (keep_forking) {
		/* Children that come and go, so a kill races against fork. */
		signal(SIGCHLD, SIG_IGN);
		for (;;) {
			pid_t pid = fork();
			if (pid == 0) {
				usleep(200000);
				_exit(0);
			}
			usleep(10000);
		}
	}
	for (;;) {
		pause();
		if (fork_wanted) {
			fork_wanted = 0;
			if (fork() == 0) {
				touch(mib);
				for (;;)
					pause();
			}
		}
	}
}
