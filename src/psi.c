/* psi.c: memory pressure triggers (PSI, Linux 5.2): a descriptor that
 * polls POLLPRI each time the tasks it covers stall on memory for longer
 * than a threshold within a window (the kernel's
 * Documentation/accounting/psi.rst). --follow sleeps on them: while
 * nothing happens there is no timer and no wakeup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mrelease.h"

/* The kernel's own limits on a trigger's window (kernel/sched/psi.c). */
#define WINDOW_MIN_US 500000U
#define WINDOW_MAX_US 10000000U

/* "some|full STALL_US WINDOW_US", strictly: 0; -EINVAL not that form;
 * -ERANGE outside the kernel's limits (a window of 500 ms to 10 s, a
 * stall above 0 and no longer than the window). */
int mr_parse_pressure(const char *s, struct mr_pressure *p)
{
	char kind[8], stall[16], window[16], extra;
	long v;

	if (sscanf(s, "%7s %15s %15s %c", kind, stall, window, &extra) != 3)
		return -EINVAL;
	if (strcmp(kind, "some") != 0 && strcmp(kind, "full") != 0)
		return -EINVAL;
	p->full = kind[0] == 'f';
	if (mr_parse_long(stall, 0, WINDOW_MAX_US, &v))
		return strspn(stall, "0123456789") == strlen(stall) ? -ERANGE : -EINVAL;
	p->stall_us = (unsigned int)v;
	if (mr_parse_long(window, 0, WINDOW_MAX_US * 10L, &v))
		return strspn(window, "0123456789") == strlen(window) ? -ERANGE : -EINVAL;
	p->window_us = (unsigned int)v;
	if (p->window_us < WINDOW_MIN_US || p->window_us > WINDOW_MAX_US || !p->stall_us ||
	    p->stall_us > p->window_us)
		return -ERANGE;
	return 0;
}

/* p as the kernel and --pressure take it: "some|full STALL_US WINDOW_US". */
const char *mr_pressure_text(const struct mr_pressure *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s %u %u", p->full ? "full" : "some", p->stall_us, p->window_us);
	return buf;
}

/* A trigger on a pressure file (/proc/pressure/memory, or a cgroup v2's
 * memory.pressure): its descriptor, or -errno (-ENOENT: no PSI here;
 * -EOPNOTSUPP: PSI is off, psi=0; -EINVAL: a trigger the kernel refuses,
 * such as one whose window an unprivileged caller may not ask for). */
int mr_psi_trigger(const char *file, const struct mr_pressure *p)
{
	char spec[64];
	int fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC), e;

	if (fd < 0)
		return -errno;
	mr_pressure_text(p, spec, sizeof(spec));
	/* The kernel takes the text with its NUL. */
	if (write(fd, spec, strlen(spec) + 1) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Sleep until one of the n triggers fires, or deadline_us (INT64_MAX for
 * none), with the signal mask mask, so that a signal ends the wait. 1 a
 * trigger fired; 0 the deadline came; -EINTR a signal; -EIO a trigger
 * went away (its cgroup was removed); another -errno. */
int mr_psi_wait(const int *fds, size_t n, int64_t deadline_us, const sigset_t *mask)
{
	struct pollfd pfd[8];
	struct timespec ts, *tp = NULL;
	int r;

	if (n > sizeof(pfd) / sizeof(pfd[0]))
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLPRI };
	if (deadline_us != INT64_MAX) {
		int64_t wait = deadline_us - mr_now_us();

		wait = wait < 0 ? 0 : wait;
		ts = (struct timespec){ wait / 1000000, (wait % 1000000) * 1000 };
		tp = &ts;
	}
	if ((r = ppoll(pfd, n, tp, mask)) < 0)
		return -errno;
	for (size_t i = 0; i < n; i++)
		if (pfd[i].revents & (POLLERR | POLLNVAL))
			return -EIO;
	return r > 0;
}
