/* shim.c: an LD_PRELOAD library that holds one chosen call for a while, to
 * test races at an exact point.
 *
 *   MR_SHIM="CALL:PATTERN:MS:WHEN[;...]"   what to hold
 *   MR_SHIM_FIRED=FILE                     a line is appended per hold
 *
 * CALL is openat, process_mrelease, pidfd_send_signal or write; PATTERN an
 * fnmatch(3) pattern for openat's path, write's file (from /proc/self/fd),
 * or pidfd_send_signal's signal number ("*" for any); MS how long to hold
 * it, or -ERRNO to fail it with that errno instead; WHEN the matching call
 * to hold (1 for the first; 0 for every one).
 * The hold sleeps through signals, as a task in the kernel waiting for a
 * lock (mmap_lock, killable only) would. Each hold appends "CALL PATTERN"
 * to FILE before it starts, so that a test whose hold did not happen can
 * fail rather than pass. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_SPECS 8

struct spec {
	char call[32], pattern[256];
	long ms, when;
	long seen; /* matching calls so far */
};

static struct spec specs[MAX_SPECS];
static int nspecs = -1;

static void load(void)
{
	const char *env = getenv("MR_SHIM");
	char *copy, *tok, *save = NULL;

	nspecs = 0;
	if (!env || !(copy = strdup(env)))
		return;
	for (tok = strtok_r(copy, ";", &save); tok && nspecs < MAX_SPECS;
	     tok = strtok_r(NULL, ";", &save)) {
		struct spec *s = &specs[nspecs];

		if (sscanf(tok, "%31[^:]:%255[^:]:%ld:%ld", s->call, s->pattern, &s->ms, &s->when) == 4)
			nspecs++;
	}
	free(copy);
}

/* Sleep ms, whatever signals come. */
static void hold(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int saved = errno;

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	errno = saved;
}

/* 0, or the errno to fail the call with. */
static int maybe_hold(const char *call, const char *what)
{
	if (nspecs < 0)
		load();
	for (int i = 0; i < nspecs; i++) {
		struct spec *s = &specs[i];
		long n;

		if (strcmp(s->call, call) || fnmatch(s->pattern, what, 0))
			continue;
		n = __atomic_add_fetch(&s->seen, 1, __ATOMIC_SEQ_CST);
		if (s->when && n != s->when)
			continue;
		const char *fired = getenv("MR_SHIM_FIRED");
		int fd = fired ? open(fired, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;

		if (fd >= 0) {
			dprintf(fd, "%s %s\n", call, what);
			close(fd);
		}
		if (s->ms < 0)
			return (int)-s->ms;
		hold(s->ms);
	}
	return 0;
}

#define HOLD(call, what)                          \
	do {                                      \
		int e_ = maybe_hold(call, what);  \
		if (e_) {                         \
			errno = e_;               \
			return -1;                \
		}                                 \
	} while (0)

int openat(int dirfd, const char *path, int flags, ...)
{
	static int (*real)(int, const char *, int, ...);
	mode_t mode = 0;
	va_list ap;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!real)
		real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
	HOLD("openat", path);
	return real(dirfd, path, flags, mode);
}

int process_mrelease(int pidfd, unsigned int flags)
{
	HOLD("process_mrelease", "*");
	return (int)syscall(SYS_process_mrelease, pidfd, flags);
}

int pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned int flags)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", sig);
	HOLD("pidfd_send_signal", num);
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	static ssize_t (*real)(int, const void *, size_t);
	char link[64], path[4096];
	ssize_t n;

	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if (fd > 2 && (n = readlink(link, path, sizeof(path) - 1)) > 0) {
		path[n] = '\0';
		HOLD("write", path);
	}
	return real(fd, buf, len);
}
