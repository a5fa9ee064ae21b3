/* protect.c: what a run guards.
 *
 * Itself: a run happens when memory is short. An OOM kill of mrelease half
 * way would leave its targets half done, and faults on its own pages would
 * stall it. Like Android's lmkd and earlyoom, it asks the OOM killer to
 * pass it over (oom_score_adj -1000) and locks its memory (mlockall).
 * MCL_ONFAULT locks each page as it is first touched, so the lock costs no
 * memory the run does not use. Both need privilege; without it, or where
 * the kernel lacks MCL_ONFAULT, the run goes on as it is.
 *
 * Its ancestors: a pattern that matches the script running mrelease
 * ("pgrep -f victim | mrelease --kill -") names that script. The chain of
 * parents up to pid 1 is read once, at the start: none of them is ever
 * killed, and a cgroup that holds one is not killed at all.
 *
 * Its view: what it reads in /proc must be the processes it signals. A
 * /proc mounted for another pid namespace (a namespace made without
 * --mount-proc, a container given the host's /proc) numbers other
 * processes with the same pids, so the run refuses to start there.
 *
 * Its descriptors: 0, 1 and 2 are open before anything else is, so that
 * no report is ever written into a descriptor the run opened; each target
 * holds a pidfd while a phase works on it, and a phase goes in batches
 * when they do not all fit under the limit.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

/* Descriptors 0, 1 and 2 that are closed are opened on /dev/null, before
 * anything else is opened: a descriptor mrelease opens later (a pidfd, a
 * pressure trigger, cgroup.kill) would otherwise take one of their
 * numbers, and a report or a warning would be written into it. Which were
 * closed, as bits (1 << fd), or -errno when /dev/null cannot be opened. */
int mr_std_fds(void)
{
	int closed = 0;

	for (int fd = 0; fd <= 2; fd++) {
		int got;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free number is fd's. */
		if ((got = open("/dev/null", O_RDWR)) < 0)
			return -errno;
		if (got != fd) {
			close(got);
			return -EBADF;
		}
		closed |= 1 << fd;
	}
	return closed;
}

void mr_protect_self(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		/* EACCES without CAP_SYS_RESOURCE: the default score stays. */
		if (write(fd, "-1000", 5) < 0)
			errno = 0;
		close(fd);
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT))
		errno = 0;
}

/* Whether proc is the /proc of mrelease's own pid namespace. /proc/self
 * names the reader by its pid in the namespace that /proc was mounted for
 * (or is missing, when the reader is not in that namespace at all), and
 * NSpid in its status lists one pid for each level from that namespace
 * down to the reader's: one pid, equal to getpid(), only when the two
 * namespaces are the same. 0 yes; -EXDEV another namespace's (*seen: the
 * pid /proc/self names, 0 for none); -ENODEV no proc file system there;
 * another -errno when it cannot be read. */
int mr_proc_own(const char *proc, pid_t *seen)
{
	char path[PATH_MAX], link[32], status[4096];
	const char *ns;
	struct statfs sfs;
	ssize_t n;
	pid_t self = getpid();
	long fields = 0;

	*seen = 0;
	if (statfs(proc, &sfs))
		return -errno;
	if (sfs.f_type != PROC_SUPER_MAGIC)
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/self", proc);
	if ((n = readlink(path, link, sizeof(link) - 1)) < 0)
		return errno == ENOENT ? -EXDEV : -errno;
	link[n] = '\0';
	if (mr_parse_pid(link, seen) || *seen != self)
		return -EXDEV;
	snprintf(path, sizeof(path), "%s/self/status", proc);
	if ((n = mr_read_file(path, status, sizeof(status))) < 0)
		return (int)n;
	/* Without pid namespaces there is no NSpid, and no other /proc. */
	if (!(ns = strstr(status, "\nNSpid:")))
		return 0;
	for (const char *p = ns + 7; *p && *p != '\n'; p++)
		fields += (p[0] == '\t' || p[0] == ' ') && p[1] >= '0' && p[1] <= '9';
	return fields == 1 ? 0 : -EXDEV;
}

/* The inode the kernel gives the initial pid namespace, and no other one
 * (the others' are allocated from 0xF0000000 up); systemd's
 * namespace_is_init() tells it by the same. */
#define PID_NS_INIT_INO 0xEFFFFFFCU

/* Whether mrelease runs in a pid namespace below the initial one: 1 yes, 0
 * no, -errno cannot tell. */
int mr_pidns_nested(const char *proc)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/self/ns/pid", proc);
	if (stat(path, &st))
		return -errno;
	return st.st_ino != PID_NS_INIT_INO;
}

/* The parent of pid, whose /proc stat said from_stat: told by its pidfd
 * where the kernel can (PIDFD_GET_INFO), a fact of that very process; 0
 * when it is outside our pid namespace. */
static pid_t parent_of(pid_t pid, pid_t from_stat)
{
	int fd = mr_sys_pidfd_open(pid), r;
	uint64_t cgroupid;
	pid_t ppid;

	if (fd < 0)
		return from_stat;
	r = mr_pidfd_info(fd, &ppid, &cgroupid);
	if (r == -ESRCH && mr_sys_pidfd_send_signal(fd, 0) == 0) {
		ppid = 0;
		r = 0;
	}
	close(fd);
	return r ? from_stat : ppid;
}

/* The parent chain, parent first, up to pid 1 of our pid namespace, without
 * mrelease itself. It ends where the parent is outside our pid namespace
 * (ppid 0), gone, or hidden from us (hidepid: then we may not signal it
 * either, and a cgroup that holds it is refused as holding a process we
 * cannot see). Any other failure to read it is an error: a chain cut short
 * would leave the rest of it unprotected. */
int mr_ancestors(const char *proc, struct mr_ancestor **out, size_t *n)
{
	pid_t pid = getppid();

	*out = NULL;
	*n = 0;
	while (pid > 0 && *n < 4096) {
		struct mr_ancestor *a;
		struct mr_stat st;
		int r;

		a = reallocarray(*out, *n + 1, sizeof(**out));
		if (!a)
			return -ENOMEM;
		*out = a;
		a = &a[*n];
		a->pid = pid;
		r = mr_proc_stat(proc, pid, &st);
		if (r && r != -ENOENT && r != -ESRCH && r != -EACCES)
			return r;
		/* One we cannot read is kept by its pid, nameless, and ends
		 * the chain. */
		memcpy(a->comm, r ? "" : st.comm, r ? 1 : sizeof(a->comm));
		(*n)++;
		if (r)
			break;
		pid = parent_of(pid, st.ppid);
	}
	return 0;
}

/* Descriptors open below limit: one numbered at or above it takes no room
 * below it. */
static size_t open_below(const char *proc, rlim_t limit)
{
	char path[PATH_MAX];
	struct dirent *e;
	size_t n = 0;
	int self;
	DIR *d;

	snprintf(path, sizeof(path), "%s/self/fd", proc);
	if (!(d = opendir(path)))
		return 3;
	self = dirfd(d);
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (end != e->d_name && !*end && fd != self && fd >= 0 && (rlim_t)fd < limit)
			n++;
	}
	closedir(d);
	return n;
}

/* Once, at the start of a process that will run: the soft limit on open
 * files up to the hard one (no code here uses select), and both up to
 * the system's most (fs.nr_open) where that is permitted
 * (CAP_SYS_RESOURCE). Each target holds a pidfd while it is worked on;
 * when they do not all fit, each phase goes in batches, so this only makes the
 * batches fewer. */
void mr_fd_raise(void)
{
	char buf[32];
	struct rlimit rl;
	long nr_open;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (mr_read_file("/proc/sys/fs/nr_open", buf, sizeof(buf)) > 0 &&
	    mr_parse_long(strtok(buf, "\n"), 1, LONG_MAX, &nr_open) == 0 &&
	    rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)nr_open) {
		struct rlimit most = { (rlim_t)nr_open, (rlim_t)nr_open };

		if (setrlimit(RLIMIT_NOFILE, &most) == 0)
			return;
	}
	if (rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	errno = 0;
}

/* How many pidfds the run may hold at once below the soft limit, with
 * reserve descriptors kept for its own work (listings, the write to
 * cgroup.kill, /proc files, the jobs' duplicates), which must never be
 * short: the kill comes before the report. *used: the descriptors open
 * below the limit; *limit: the limit (SIZE_MAX for none). */
size_t mr_fd_room(const char *proc, size_t reserve, size_t *used, size_t *limit)
{
	struct rlimit rl;

	*used = 0;
	*limit = SIZE_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	*used = open_below(proc, rl.rlim_cur);
	*limit = (size_t)rl.rlim_cur;
	return *limit > *used + reserve ? *limit - *used - reserve : 0;
}

/* The descriptor table made to hold n descriptors (n no more than the soft
 * limit, or the kernel refuses), best effort. Meant for while mrelease has
 * one thread: the kernel grows a table that threads share only after an
 * RCU grace period, milliseconds each time it doubles, where a table of
 * one thread grows at once. */
void mr_fd_grow(size_t n)
{
	int fd, high;

	if (n < 2 || (fd = open("/", O_PATH | O_CLOEXEC)) < 0)
		return;
	if ((high = fcntl(fd, F_DUPFD_CLOEXEC, n > INT_MAX ? INT_MAX - 1 : (int)n - 1)) >= 0)
		close(high);
	close(fd);
}
