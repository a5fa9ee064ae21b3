/* robust.c: whether a process that is dying can be released at once
 * without harm to another process.
 *
 * A thread's exit walks its robust futex list (futex_exit_release(), at
 * the start of exit_mm()): each robust lock it still holds is marked
 * OWNER_DIED, and a waiter, perhaps in another process, is woken. The list
 * lives in the process's own memory. A release that strips that memory
 * first leaves the walk nothing to read, and the waiters of a lock shared
 * between processes asleep for good; this is why the kernel's OOM reaper
 * waits 2 s before it reaps (OOM_REAPER_DELAY, Linux 5.18, commit
 * e4a38402c36e). process_mrelease has no such guard.
 *
 * The release is harmless where the walk has nothing to do: every thread's
 * list empty, with no operation pending on it, and no thread able to
 * change that any more. The SIGKILL is generated for every thread at once
 * (complete_signal()), and a thread returns to user code only through
 * exit_to_user_mode(), which acts on it first: so a thread that is asleep,
 * stopped or frozen, or already exiting, never runs user code again. One
 * that the kernel reports running may still be in user code, for as long
 * as the interrupt that the kill sent to its CPU takes to arrive; /proc
 * says "running" of one waiting for a CPU too, which cannot be told apart:
 * either is asked again.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

/* Whether thread tid of pid can still run user code: 0 it cannot; -EAGAIN
 * it may (the kernel reports it running, or waiting to run, and it is not
 * exiting: /proc/PID/syscall says "running" of both); -errno. *dead: its
 * exit is over (a zombie), and its list walked. */
static int off_user(const char *proc, pid_t pid, pid_t tid, bool *dead)
{
	char path[PATH_MAX], buf[16];
	struct mr_stat st;
	ssize_t n;
	int r;

	*dead = false;
	if ((r = mr_proc_thread_stat(proc, pid, tid, &st)))
		return r;
	*dead = st.state == 'Z' || st.state == 'X';
	if (*dead || (st.flags & MR_PF_EXITING) || st.state != 'R')
		return 0;
	snprintf(path, sizeof(path), "%s/%d/task/%d/syscall", proc, (int)pid, (int)tid);
	if ((n = mr_read_file(path, buf, sizeof(buf))) < 0)
		return (int)n;
	return strncmp(buf, "running", 7) == 0 ? -EAGAIN : 0;
}

/* Whether thread tid's robust futex list is empty, with nothing pending:
 * 1 yes, 0 no, -errno. A thread with no list is clear once it is dead (its
 * walk is done); before, it may be a 32-bit process's, whose list
 * get_robust_list does not give, and which its exit walks only in
 * exit_mm(), after it is marked exiting: not clear. A list whose
 * head cannot be read (EFAULT: unmapped, or released already, which the
 * kernel makes fault) is clear too: the walk could not read it either, so
 * a release takes nothing from it. */
static int list_empty(pid_t pid, pid_t tid, bool dead)
{
	struct robust_list_head *head, h;
	struct iovec local = { &h, sizeof(h) }, remote;
	size_t len;

	if (syscall(SYS_get_robust_list, tid, &head, &len))
		return -errno;
	if (!head)
		return dead;
	if (len != sizeof(h))
		return 0;
	remote = (struct iovec){ head, sizeof(h) };
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(h))
		return errno == ESRCH ? -ESRCH : errno == EFAULT;
	return h.list.next == &head->list && !h.list_op_pending;
}

/* Whether dying process pid may be released now without leaving a robust
 * lock it holds unmarked: 1 yes, every thread off user code for good and
 * its list empty; 0 no, a list holds a lock or cannot be read (wait for it
 * to exit by itself); -EAGAIN not yet, a thread may still be in user code
 * (ask again soon); -ESRCH it is gone; another -errno. The lists are read
 * only once every thread is known off user code: read earlier, a thread
 * could still take a lock after. */
int mr_robust_clear(const char *proc, pid_t pid)
{
	char path[PATH_MAX];
	struct dirent *e;
	bool dead;
	int r = 1, k;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%d/task", proc, (int)pid);
	if (!(d = opendir(path)))
		return errno == ENOENT ? -ESRCH : -errno;
	/* A thread gone meanwhile (ENOENT, ESRCH) has exited. */
	while (r == 1 && (e = readdir(d))) {
		pid_t tid;

		if (mr_parse_pid(e->d_name, &tid) == 0 && (k = off_user(proc, pid, tid, &dead)) < 0 &&
		    k != -ENOENT && k != -ESRCH)
			r = k;
	}
	rewinddir(d);
	while (r == 1 && (e = readdir(d))) {
		pid_t tid;

		if (mr_parse_pid(e->d_name, &tid) || off_user(proc, pid, tid, &dead) == -ENOENT)
			continue;
		if ((k = list_empty(pid, tid, dead)) == 0 || (k < 0 && k != -ESRCH))
			r = 0;
	}
	closedir(d);
	return r;
}
