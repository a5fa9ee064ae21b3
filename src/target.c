/* target.c: opening a target through a pidfd and checking what it is.
 * Everything after this acts through t->pidfd, so a pid that is reused by
 * another process after we opened it is never signalled or released. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

void mr_target_init(struct mr_target *t, pid_t pid, int cgroup)
{
	*t = (struct mr_target){
		.pid = pid,
		.cgroup = cgroup,
		.pidfd = -1,
		.tgid = pid,
		.mm_pid = pid,
		.release_us = MR_UNKNOWN,
	};
	mr_mem_unknown(&t->before);
	mr_mem_unknown(&t->after);
}

/* End it: a state from MR_RELEASED on, with the reason. */
void mr_target_end(struct mr_target *t, enum mr_state state, enum mr_reason reason, int errnum)
{
	t->state = state;
	t->reason = reason;
	t->errnum = errnum;
}

bool mr_target_ended(const struct mr_target *t)
{
	return t->state >= MR_RELEASED;
}

/* The kernel took sig for it: asked to exit (the --grace signal), or
 * killed. A cgroup's write to cgroup.kill kills it as SIGKILL would. */
void mr_target_signalled(struct mr_target *t, int sig)
{
	t->state = sig == SIGKILL ? MR_KILLED : MR_ASKED;
	t->signal = sig;
}

/* Still to be killed: opened, or asked to exit only. */
bool mr_target_to_kill(const struct mr_target *t)
{
	return t->state == MR_OPENED || t->state == MR_ASKED;
}

/* A dry run's answer: the real run would kill (with --kill) and release it. */
void mr_target_predicted(struct mr_target *t)
{
	t->state = MR_PREDICTED;
}

/* What --wait saw: gone by its end, or still there. */
void mr_target_waited(struct mr_target *t, bool gone)
{
	t->waited = gone ? MR_WAITED_GONE : MR_WAITED_RUNNING;
}

/* The process behind the pidfd has not been reaped, so its pid is still
 * its own. A zombie counts as alive here. */
bool mr_target_alive(const struct mr_target *t)
{
	return mr_sys_pidfd_send_signal(t->pidfd, 0) == 0 || errno == EPERM;
}

/* A pidfd's inode names its process for as long as the system runs where
 * pidfds live in pidfs (Linux 6.9); before, every pidfd shares one
 * anonymous inode, so callers ask only where mr_pidfd_in_pidfs said yes. */
int mr_pidfd_inode(int pidfd, uint64_t *ino)
{
	struct stat st;

	if (fstat(pidfd, &st))
		return -errno;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

bool mr_pidfd_in_pidfs(int pidfd)
{
	struct statfs sfs;

	return fstatfs(pidfd, &sfs) == 0 && sfs.f_type == PIDFS_MAGIC;
}

/* The parent and the cgroup v2 id of the process behind pidfd, from the
 * pidfd itself (PIDFD_GET_INFO, Linux 6.13), not from /proc text: facts of
 * that process whatever its pid names by then. 0; -ENOTTY where the kernel
 * has no such request; -ESRCH when it has been reaped, or when its parent
 * is outside our pid namespace (the kernel says ESRCH for both; the caller
 * tells them apart by whether the pidfd's process is alive). *cgroupid is 0
 * when the kernel does not say. */
int mr_pidfd_info(int pidfd, pid_t *ppid, uint64_t *cgroupid)
{
	struct mr_pidfd_info info = { .mask = MR_PIDFD_INFO_CGROUPID };

	if (ioctl(pidfd, MR_PIDFD_GET_INFO, &info))
		return errno == EINVAL || errno == ENOTTY || errno == EOPNOTSUPP ? -ENOTTY : -errno;
	*ppid = (pid_t)info.ppid;
	*cgroupid = (info.mask & MR_PIDFD_INFO_CGROUPID) ? info.cgroupid : 0;
	return 0;
}

/* kcmp(2) on two processes' address spaces: 0 with *order -1, 0 or 1 as
 * the kernel orders them (by a pointer it scrambles, the same way for the
 * whole boot: 0 is the same one); -errno when it cannot compare them. */
static int mm_order(pid_t a, pid_t b, int *order)
{
	long r = syscall(SYS_kcmp, a, b, MR_KCMP_VM, 0, 0);

	*order = 0;
	if (r < 0)
		return -errno;
	if (r > 2)
		return -EINVAL;
	*order = r == 0 ? 0 : r == 1 ? -1 : 1;
	return 0;
}

static bool same_mm(pid_t a, pid_t b)
{
	int order;

	return mm_order(a, b, &order) == 0 && order == 0;
}

/* For each of the n processes in q, another process (outside its thread
 * group) that shares its address space and for which counts() is true, in
 * q[i].sharer. The kernel releases no address space that a process which
 * is not dying still uses (task_will_free_mem), and kcmp(2) tells which
 * processes share one: the queries are put in the kernel's order of their
 * address spaces once, and every process in /proc is then looked for among
 * them by bisection, about N log n calls in all. A process kcmp cannot
 * compare (gone, or not ours to inspect) shares nothing that can be seen;
 * one that goes while this runs can make a sharer be missed, never one
 * be made up. 0; -ENOSYS without kcmp; -errno. */
int mr_mm_sharers(const char *proc, struct mr_mm_query *q, size_t n,
		  bool (*counts)(pid_t pid, void *arg), void *arg)
{
	size_t *v = calloc(n ? n : 1, sizeof(*v)), k = 0;
	struct dirent *e;
	int order, r = 0;
	DIR *d;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t lo = 0, hi = k;

		q[i].sharer = 0;
		if ((r = mm_order(q[i].mm_pid, q[i].mm_pid, &order)) == -ENOSYS)
			break;
		if (r)
			continue;
		while (lo < hi && mm_order(q[i].mm_pid, q[v[lo + (hi - lo) / 2]].mm_pid, &order) == 0) {
			if (order < 0)
				hi = lo + (hi - lo) / 2;
			else
				lo = lo + (hi - lo) / 2 + 1;
		}
		memmove(&v[lo + 1], &v[lo], (k - lo) * sizeof(*v));
		v[lo] = i;
		k++;
	}
	r = r == -ENOSYS ? r : 0;
	d = r || !k ? NULL : opendir(proc);
	if (!r && k && !d)
		r = -errno;
	while (d && (e = readdir(d))) {
		size_t lo = 0, hi = k, at = SIZE_MAX;
		pid_t pid;

		if (mr_parse_pid(e->d_name, &pid))
			continue;
		while (lo < hi && at == SIZE_MAX) {
			size_t mid = lo + (hi - lo) / 2;

			if (mm_order(pid, q[v[mid]].mm_pid, &order))
				break;
			if (order == 0)
				at = mid;
			else if (order < 0)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (at == SIZE_MAX)
			continue;
		/* Every query with that address space: at and its like around. */
		while (at > 0 && same_mm(pid, q[v[at - 1]].mm_pid))
			at--;
		for (; at < k && same_mm(pid, q[v[at]].mm_pid); at++)
			if (q[v[at]].pid != pid && !q[v[at]].sharer && counts(pid, arg))
				q[v[at]].sharer = pid;
	}
	if (d)
		closedir(d);
	free(v);
	return r;
}

const struct mr_ancestor *mr_ancestor_of(const struct mr_run *run, pid_t pid)
{
	for (size_t i = 0; i < run->nancestors; i++)
		if (run->ancestors[i].pid == pid)
			return &run->ancestors[i];
	return NULL;
}

/* A pid named on the command line that must not be acted on fails, with
 * its reason; one from a generated list (standard input, a cgroup) is left
 * out, for nobody asked for it by number. */
static int refuse(struct mr_target *t, enum mr_reason reason)
{
	mr_target_close(t);
	mr_target_end(t, t->named && !t->stdin ? MR_FAILED : MR_LEFT_OUT, reason, 0);
	return -EPERM;
}

/* A zombie leader. If the whole process has exited, it has given its memory
 * back. If only its main thread has (pthread_exit), the others still hold
 * the address space: its figures are read through one of them. */
static int zombie_leader(const char *proc, struct mr_target *t)
{
	struct pollfd pfd = { .fd = t->pidfd, .events = POLLIN };
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;

	if (poll(&pfd, 1, 0) > 0) {
		mr_target_end(t, MR_EXITED, MR_R_NONE, 0);
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

static int open_pidfd(const struct mr_run *run, struct mr_target *t)
{
	int e;

	if (t->pidfd >= 0 || (t->pidfd = mr_sys_pidfd_open(t->pid)) >= 0)
		return 0;
	e = errno;
	if (e == ESRCH && t->named)
		mr_target_end(t, MR_FAILED, MR_R_NO_PROCESS, 0);
	else if (e == ESRCH)
		mr_target_end(t, MR_LEFT_OUT, MR_R_GONE, 0);
	else if (e == ENOSYS)
		mr_target_end(t, MR_FAILED, MR_R_NO_PIDFD, 0);
	/* A thread that is not its group's leader: EINVAL before Linux 6.9,
	 * ENOENT since PIDFD_THREAD came. */
	else if ((e == EINVAL || e == ENOENT) && mr_proc_tgid(run->cfg.proc, t->pid, &t->tgid) == 0 &&
		 t->tgid != t->pid)
		mr_target_end(t, MR_FAILED, MR_R_THREAD, 0);
	else
		mr_target_end(t, MR_FAILED, MR_R_OPEN, e);
	return -e;
}

static int check_inode(const struct mr_run *run, struct mr_target *t, uint64_t want)
{
	int r = run->pidfs ? mr_pidfd_inode(t->pidfd, &t->ino) : 0;

	if (r)
		mr_target_end(t, MR_FAILED, MR_R_OPEN, -r);
	else if (want && !t->ino)
		mr_target_end(t, MR_FAILED, MR_R_NO_PIDFS, 0);
	else if (want && t->ino != want)
		mr_target_end(t, MR_FAILED, MR_R_INODE, 0);
	else
		return 0;
	/* The report names the inode that was asked for. */
	if (t->reason == MR_R_INODE)
		t->ino = want;
	return -EPERM;
}

/* Open a selected target and check what it is. 0: it is MR_OPENED, also
 * when its /proc/PID/stat cannot be read (hidepid, EMFILE; t's figures say
 * so): the pidfd is all a kill and a release need, and the kernel refuses
 * what they must not touch. -errno: it has ended, and t says why. Refused
 * whatever else is asked: mrelease itself, pid 1 (its death takes the whole
 * pid namespace with it), the chain of processes mrelease runs under, and
 * kernel threads. */
int mr_target_open(const struct mr_run *run, struct mr_target *t, uint64_t want_ino)
{
	const struct mr_ancestor *a;
	struct mr_stat st;
	int r;

	if (t->pid == run->self)
		return refuse(t, MR_R_SELF);
	if (t->pid == 1)
		return refuse(t, MR_R_INIT);
	if ((a = mr_ancestor_of(run, t->pid))) {
		memcpy(t->comm, a->comm, sizeof(t->comm));
		return refuse(t, MR_R_ANCESTOR);
	}
	if ((r = open_pidfd(run, t)) || (r = check_inode(run, t, want_ino))) {
		mr_target_close(t);
		return r;
	}
	/* What /proc says belongs to the pidfd's process only if that process
	 * is still there after we read it. */
	r = mr_proc_stat(run->cfg.proc, t->pid, &st);
	if (!mr_target_alive(t)) {
		mr_target_end(t, t->named ? MR_EXITED : MR_LEFT_OUT, t->named ? MR_R_NONE : MR_R_GONE, 0);
		mr_target_close(t);
		return -ESRCH;
	}
	t->state = MR_OPENED;
	if (r < 0) {
		t->comm[0] = '\0';
		t->figures = MR_FIG_ERRNO;
		t->fig_file = "stat";
		t->fig_errnum = -r;
		return 0;
	}
	memcpy(t->comm, st.comm, sizeof(t->comm));
	t->start = st.start;
	if (st.flags & MR_PF_KTHREAD) {
		mr_target_close(t);
		return refuse(t, MR_R_KTHREAD);
	}
	if ((st.state == 'Z' || st.state == 'X') && (r = zombie_leader(run->cfg.proc, t)))
		mr_target_close(t);
	return r;
}

/* Open t's pidfd again, after it was closed to make room for others. Its
 * pid is t's process only as long as that process is not reaped; what
 * proves the process behind the new pidfd is t's is its pidfs inode (the
 * kernel never gives two processes one inode in a boot), or, before pidfs,
 * its start time read from /proc and confirmed by the pidfd after the read.
 * 0: held again, the same process. -ESRCH: it is not: t's process has
 * exited, and was reaped. -EPERM: it cannot be proven either way.
 * -EMFILE, -ENFILE: no descriptor; another -errno. t's state is the
 * caller's to change: never a guess, a pid is acted on again only where it
 * is proven the same process. */
int mr_target_reopen(const struct mr_run *run, struct mr_target *t)
{
	struct mr_stat st;
	uint64_t ino = 0;
	int fd = mr_sys_pidfd_open(t->pid), r = 0, read;

	if (fd < 0)
		return -errno;
	if (run->pidfs) {
		if (mr_pidfd_inode(fd, &ino))
			r = -EPERM;
		else if (ino != t->ino)
			r = -ESRCH;
	} else {
		read = mr_proc_stat(run->cfg.proc, t->pid, &st);
		if (mr_sys_pidfd_send_signal(fd, 0) && errno == ESRCH)
			r = -ESRCH;
		else if (read || !t->start)
			r = -EPERM;
		else
			r = st.start == t->start ? 0 : -ESRCH;
	}
	if (r) {
		close(fd);
		return r;
	}
	t->pidfd = fd;
	return 0;
}

void mr_target_close(struct mr_target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}
