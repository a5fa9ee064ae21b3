/* target.c: opening a target through a pidfd and checking what it is.
 * Everything after this acts through t->pidfd, so a pid that is reused by
 * another process after we opened it is never signalled or released. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
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
		.exited = -1,
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
 * Linux 6.9), and grows with every process made; before pidfs every pidfd
 * shares one anonymous inode: 0 then. */
int mr_pidfd_inode(int pidfd, uint64_t *ino)
{
	struct statfs sfs;
	struct stat st;

	*ino = 0;
	if (fstatfs(pidfd, &sfs) || fstat(pidfd, &st))
		return -errno;
	if (sfs.f_type == PIDFS_MAGIC)
		*ino = (uint64_t)st.st_ino;
	return 0;
}

static int check_inode(struct mr_target *t)
{
	int r = mr_pidfd_inode(t->pidfd, &t->ino);

	if (r) {
		mr_target_fail(t, MR_E_ERRNO, -r);
		return r;
	}
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
static int zombie_leader(const char *proc, struct mr_target *t)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;

	if (group_exited(t)) {
		t->status = MR_EXITED;
		return -ESRCH;
	}
	snprintf(path, sizeof(path), "%s/%d/task", proc, (int)t->pid);
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

static const struct mr_ancestor *ancestor(const struct mr_run *run, pid_t pid)
{
	for (size_t i = 0; i < run->nancestors; i++)
		if (run->ancestors[i].pid == pid)
			return &run->ancestors[i];
	return NULL;
}

/* Refused whatever else is asked: mrelease itself and pid 1, whose death
 * takes the whole pid namespace with it; without --force also the chain
 * of processes mrelease runs under. No pidfd is needed to tell. */
static bool refused(const struct mr_run *run, struct mr_target *t)
{
	const struct mr_ancestor *a;

	if (t->pid == getpid())
		mr_target_fail(t, MR_E_SELF, 0);
	else if (t->pid == 1)
		mr_target_fail(t, MR_E_INIT, 0);
	else if (!run->cfg.force && (a = ancestor(run, t->pid))) {
		mr_target_fail(t, MR_E_ANCESTOR, 0);
		memcpy(t->comm, a->comm, sizeof(t->comm));
	}
	return t->status == MR_FAILED;
}

static int open_pidfd(const struct mr_run *run, struct mr_target *t)
{
	int e;

	t->pidfd = mr_sys_pidfd_open(t->pid);
	if (t->pidfd >= 0)
		return 0;
	e = errno;
	if (e == ESRCH)
		mr_target_fail(t, MR_E_NO_PROCESS, 0);
	else if (e == ENOSYS)
		mr_target_fail(t, MR_E_NO_PIDFD, 0);
	/* A thread that is not its group's leader: EINVAL before Linux 6.9,
	 * ENOENT since PIDFD_THREAD came. */
	else if ((e == EINVAL || e == ENOENT) && mr_proc_tgid(run->cfg.proc, t->pid, &t->tgid) == 0 &&
		 t->tgid != t->pid)
		mr_target_fail(t, MR_E_THREAD, 0);
	else
		mr_target_fail(t, MR_E_OPEN, e);
	return -e;
}

/* Returns 0 when t is ready to be acted on; otherwise t->status says why
 * not and the return is -errno. A /proc/PID/stat that cannot be read
 * (hidepid, EMFILE) does not stop it: the pidfd is all a kill and a release
 * need, and the kernel refuses what they must not touch (a kernel thread
 * takes no signal and has no address space to release). */
int mr_target_open(const struct mr_run *run, struct mr_target *t)
{
	unsigned long flags;
	char state;
	int r;

	if (refused(run, t))
		return -EPERM;
	if ((r = open_pidfd(run, t)) || (r = check_inode(t)))
		return r;
	/* What /proc says belongs to the pidfd's process only if that process
	 * is still there after we read it; the pidfd alone says it is gone. */
	r = mr_proc_stat(run->cfg.proc, t->pid, t->comm, &state, &t->ppid, &flags);
	if (!mr_target_alive(t)) {
		t->status = MR_EXITED;
		return -ESRCH;
	}
	if (r < 0) {
		t->comm[0] = '\0';
		t->proc_file = "stat";
		t->proc_errnum = -r;
		return 0;
	}
	if (flags & PF_KTHREAD) {
		mr_target_fail(t, MR_E_KTHREAD, 0);
		return -EPERM;
	}
	if (state == 'Z' || state == 'X')
		return zombie_leader(run->cfg.proc, t);
	return 0;
}

void mr_target_close(struct mr_target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}
