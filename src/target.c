/* target.c: opening a target through a pidfd and checking what it is.
 * Everything after this acts through t->pidfd, so a pid that is reused by
 * another process after we opened it is never signalled or released. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
#ifndef PIDFS_MAGIC
#define PIDFS_MAGIC 0x50494446 /* include/uapi/linux/magic.h */
#endif

void mr_target_init(struct mr_target *t, struct mr_pidspec spec, int cgroup)
{
	*t = (struct mr_target){
		.pid = spec.pid,
		.want_ino = spec.ino,
		.pidfd = -1,
		.tgid = spec.pid,
		.mm_pid = spec.pid,
		.cgroup = cgroup,
		.release_us = MR_UNKNOWN,
		.status = MR_PENDING,
	};
	mr_mem_unknown(&t->before);
	mr_mem_unknown(&t->after);
}

void mr_target_fail(struct mr_target *t, enum mr_error error, int errnum)
{
	t->status = MR_FAILED;
	t->error = error;
	t->errnum = errnum;
}

/* The process behind the pidfd has not been reaped. A zombie counts as
 * alive here: its pid cannot be reused yet. */
bool mr_target_alive(const struct mr_target *t)
{
	return mr_sys_pidfd_send_signal(t->pidfd, 0) == 0 || errno == EPERM;
}

/* A pidfd's inode names its process for as long as the system runs (pidfs,
 * Linux 6.9); before pidfs every pidfd shares one anonymous inode, and a
 * PID:INODE cannot be checked. */
static int check_inode(struct mr_target *t)
{
	struct statfs sfs;
	struct stat st;

	if (fstatfs(t->pidfd, &sfs) || fstat(t->pidfd, &st)) {
		mr_target_fail(t, MR_E_ERRNO, errno);
		return -t->errnum;
	}
	if (sfs.f_type == PIDFS_MAGIC)
		t->ino = (uint64_t)st.st_ino;
	if (!t->want_ino)
		return 0;
	if (!t->ino) {
		mr_target_fail(t, MR_E_NO_PIDFS, 0);
		return -EOPNOTSUPP;
	}
	if (t->ino != t->want_ino) {
		mr_target_fail(t, MR_E_INODE, 0);
		return -ESRCH;
	}
	return 0;
}

/* The whole thread group has exited: the pidfd polls readable. */
static bool group_exited(const struct mr_target *t)
{
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* A zombie leader. If the whole process has exited, it has given its memory
 * back. If only its main thread has (pthread_exit), the others still hold
 * the address space: its figures are read through one of them. */
static int zombie_leader(struct mr_target *t)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	if (group_exited(t)) {
		t->status = MR_EXITED;
		return -ESRCH;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		pid_t tid;

		if (mr_parse_pid(d->d_name, &tid) == 0 && tid != t->pid) {
			t->mm_pid = tid;
			break;
		}
	}
	if (dir)
		closedir(dir);
	return 0;
}

/* Returns 0 when t is ready to be acted on; otherwise t->status says why
 * not and the return is -errno. */
int mr_target_open(struct mr_procinfo *pi, struct mr_target *t)
{
	unsigned long flags;
	char state;
	int r;

	if (t->pid == getpid()) {
		mr_target_fail(t, MR_E_SELF, 0);
		return -EPERM;
	}
	if (t->pid == 1) {
		mr_target_fail(t, MR_E_INIT, 0);
		return -EPERM;
	}
	t->pidfd = mr_sys_pidfd_open(t->pid);
	if (t->pidfd < 0) {
		int e = errno;

		if (e == ESRCH)
			mr_target_fail(t, MR_E_NO_PROCESS, 0);
		else if (e == ENOSYS)
			mr_target_fail(t, MR_E_NO_PIDFD, 0);
		/* A thread that is not its group's leader: EINVAL before
		 * Linux 6.9, ENOENT since PIDFD_THREAD came. */
		else if ((e == EINVAL || e == ENOENT) && mr_proc_identity(pi, t, &flags, &state) == 0 &&
			 t->tgid != t->pid)
			mr_target_fail(t, MR_E_THREAD, 0);
		else
			mr_target_fail(t, MR_E_ERRNO, e);
		return -e;
	}
	if ((r = check_inode(t)))
		return r;
	/* What /proc says belongs to the pidfd's process only if that process
	 * is still there after we read it; the pidfd alone says it is gone. */
	r = mr_proc_identity(pi, t, &flags, &state);
	if (!mr_target_alive(t)) {
		t->status = MR_EXITED;
		return -ESRCH;
	}
	if (r < 0) {
		mr_target_fail(t, MR_E_PROC, 0);
		return r;
	}
	if (flags & PF_KTHREAD) {
		mr_target_fail(t, MR_E_KTHREAD, 0);
		return -EPERM;
	}
	if (state == 'Z' || state == 'X')
		return zombie_leader(t);
	return 0;
}

void mr_target_close(struct mr_target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}
