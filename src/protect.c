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
 * parents up to pid 1 is read once, at the start, and never a target
 * without --force.
 *
 * Its descriptors: each target holds a pidfd through the run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mrelease.h"

#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

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

/* The parent chain, parent first, without pid 1 (refused anyway) and
 * without mrelease. It ends at a parent outside our pid namespace (ppid 0),
 * one that is gone, or one we may not see (hidepid: then we may not signal
 * it either). Any other failure to read it is an error: a chain cut short
 * would leave the rest of it unprotected. */
int mr_ancestors(const char *proc, struct mr_ancestor **out, size_t *n)
{
	pid_t pid = getppid();

	*out = NULL;
	*n = 0;
	while (pid > 1 && *n < 4096) {
		struct mr_ancestor *a;
		unsigned long flags;
		pid_t ppid;
		char state;
		int r;

		a = reallocarray(*out, *n + 1, sizeof(**out));
		if (!a)
			return -ENOMEM;
		*out = a;
		a = &a[*n];
		a->pid = pid;
		r = mr_proc_stat(proc, pid, a->comm, &state, &ppid, &flags);
		if (r == -ENOENT || r == -ESRCH || r == -EACCES)
			break;
		if (r)
			return r;
		(*n)++;
		pid = ppid;
	}
	return 0;
}

static size_t open_fds(const char *proc)
{
	char path[PATH_MAX];
	DIR *d;

	snprintf(path, sizeof(path), "%s/self/fd", proc);
	d = opendir(path);
	size_t n = 0;

	if (!d)
		return 3;
	while (readdir(d))
		n++;
	closedir(d);
	/* ".", ".." and the directory's own descriptor. */
	return n > 3 ? n - 3 : 0;
}

/* How many pidfds the run can hold at once, reserve descriptors kept aside
 * for the files it reads meanwhile. The soft limit is raised as far as
 * needed, and the hard one too where that is permitted (CAP_SYS_RESOURCE);
 * what is still short is made up by working in batches. */
size_t mr_fd_budget(const char *proc, size_t want, size_t reserve)
{
	size_t used = open_fds(proc), need = want + reserve + used;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return want;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
			struct rlimit more = { need, need };

			if (setrlimit(RLIMIT_NOFILE, &more) == 0)
				return want;
		}
		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
		if (setrlimit(RLIMIT_NOFILE, &rl) || getrlimit(RLIMIT_NOFILE, &rl))
			return 1;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return want;
	return rl.rlim_cur > used + reserve ? rl.rlim_cur - used - reserve : 1;
}
