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
 * Its descriptors: each target holds a pidfd through the run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

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
		if (r && r != -ENOENT && r != -ESRCH && r != -EACCES)
			return r;
		/* One we cannot read is kept by its pid, nameless, and ends
		 * the chain. */
		if (r)
			a->comm[0] = '\0';
		(*n)++;
		if (r)
			break;
		pid = ppid;
	}
	return 0;
}

/* Room for want descriptors at once: each target holds a pidfd through the
 * run, and a deep cgroup tree is walked with a few more. The soft limit is
 * raised to the hard one (no code here uses select), and the hard one too
 * where that is permitted (CAP_SYS_RESOURCE). What still does not fit
 * fails to open, with EMFILE, and is reported. */
void mr_fd_room(size_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
		struct rlimit more = { want, want };

		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			return;
	}
	if (rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}
