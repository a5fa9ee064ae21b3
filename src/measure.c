/* measure.c: what mrelease reads in /proc.
 *
 * A target's identity and memory figures are read here directly, each with
 * one read of one file, not through libproc2's pids API:
 * - libproc2 is not thread-safe (helgrind shows races in its static data
 *   even between separate handles), and the figures of many targets are
 *   read at once, on the worker threads;
 * - procps_pids_new() calls numa_init(), which dlopens libnuma after probing
 *   some 40 paths (about 1 ms at every start), and the pids code pulls in
 *   readproc, which links libsystemd, libgcrypt and the compressors: a run
 *   needs none of that.
 * libproc2 keeps what it does well here, /proc/meminfo (MemAvailable), read
 * on the main thread only. CMake links it from libproc2.a where there is
 * one, so that only its meminfo code comes along.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libproc2/meminfo.h>

#include "mrelease.h"
#include "sys.h"

/* /proc/PID/stat is about 300 bytes; status about 1.5 KiB, smaps_rollup
 * about 700. */
#define STAT_MAX 1024
#define STATUS_MAX 4096

void mr_mem_unknown(struct mr_mem *mem)
{
	*mem = (struct mr_mem){ MR_UNKNOWN, MR_UNKNOWN, MR_UNKNOWN, MR_UNKNOWN };
}

static ssize_t read_proc(const char *proc, pid_t pid, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d/%s", proc, (int)pid, file);
	return mr_read_file(path, buf, len);
}

/* Field n (4 and up, as proc(5) numbers them) of a /proc/PID/stat text, as
 * an unsigned number: the fields go on after the last ")". */
static int stat_field(const char *buf, int n, unsigned long *v)
{
	const char *p = strrchr(buf, ')');
	char *end;

	if (!p || p[1] != ' ')
		return -EIO;
	p += 2;
	for (int i = 3; i < n; i++) {
		if (!(p = strchr(p, ' ')))
			return -EIO;
		p++;
	}
	errno = 0;
	*v = strtoul(p, &end, 10);
	return end == p || errno || (*end != ' ' && *end != '\n' && *end) ? -EIO : 0;
}

/* The fields of /proc/PID/stat a target is checked with. The name is in
 * parentheses and may hold anything, ")" and blanks included: the fields
 * go on after the last ")". buf is changed. */
int mr_parse_stat(char *buf, struct mr_stat *st)
{
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	unsigned long pp, start;

	if (!open || !close || close < open || close[1] != ' ' || !close[2] || close[3] != ' ' ||
	    stat_field(buf, 4, &pp) || pp > MR_PID_MAX || stat_field(buf, 9, &st->flags) ||
	    stat_field(buf, 22, &start))
		return -EIO;
	st->state = close[2];
	*close = '\0';
	snprintf(st->comm, MR_COMM_LEN, "%s", open + 1);
	st->ppid = (pid_t)pp;
	st->start = start;
	return 0;
}

int mr_proc_stat(const char *proc, pid_t pid, struct mr_stat *st)
{
	char buf[STAT_MAX];
	ssize_t n;

	if ((n = read_proc(proc, pid, "stat", buf, sizeof(buf))) < 0)
		return (int)n;
	return mr_parse_stat(buf, st);
}

/* A thread's: /proc/PID/task/TID/stat. */
int mr_proc_thread_stat(const char *proc, pid_t pid, pid_t tid, struct mr_stat *st)
{
	char buf[STAT_MAX], file[32];
	ssize_t n;

	snprintf(file, sizeof(file), "task/%d/stat", (int)tid);
	if ((n = read_proc(proc, pid, file, buf, sizeof(buf))) < 0)
		return (int)n;
	return mr_parse_stat(buf, st);
}

/* "Key:\t value kB" lines: the value of key, or -1 when it is not there. */
static int64_t field_kb(const char *buf, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = buf; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, key, len) == 0)
			return strtoll(p + len, NULL, 10);
	}
	return -1;
}

int mr_proc_tgid(const char *proc, pid_t pid, pid_t *tgid)
{
	char buf[STATUS_MAX];
	int64_t v;
	ssize_t n;

	if ((n = read_proc(proc, pid, "status", buf, sizeof(buf))) < 0)
		return (int)n;
	if ((v = field_kb(buf, "Tgid:")) <= 0)
		return -EIO;
	*tgid = (pid_t)v;
	return 0;
}


static int64_t known(int64_t v)
{
	return v < 0 ? 0 : v;
}

/* The figures in a smaps_rollup, status or statm text; a line that is not
 * there counts 0 (a process without an address space has none of them).
 * statm always has its numbers: one that is not there is unknown. */
void mr_parse_mem(const char *buf, enum mr_measure_mode mode, struct mr_mem *mem)
{
	mr_mem_unknown(mem);
	if (mode == MR_MEASURE_SMAPS) {
		mem->rss_kb = known(field_kb(buf, "Rss:"));
		mem->pss_kb = known(field_kb(buf, "Pss:"));
		mem->anon_kb = known(field_kb(buf, "Anonymous:"));
		mem->swap_kb = known(field_kb(buf, "Swap:"));
	} else if (mode == MR_MEASURE_STATUS) {
		mem->rss_kb = known(field_kb(buf, "VmRSS:"));
		mem->anon_kb = known(field_kb(buf, "RssAnon:"));
		mem->swap_kb = known(field_kb(buf, "VmSwap:"));
	} else if (mode == MR_MEASURE_RSS) {
		/* statm: "size resident shared text lib data dt", in pages. */
		char *end;
		unsigned long long resident;

		strtoull(buf, &end, 10);
		resident = strtoull(end, NULL, 10);
		if (end != buf && resident < (1ULL << 40))
			mem->rss_kb = (int64_t)resident * (sysconf(_SC_PAGESIZE) / 1024);
	}
}

/* Whether a status line of pending signals ("SigPnd:\t0000000000000100")
 * holds SIGKILL. */
static bool kill_pending(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);

	return p && (strtoull(p + strlen(key), NULL, 16) & (1ULL << (SIGKILL - 1)));
}

/* Whether a stat text says its process may be dying: its exit has begun
 * (PF_EXITING, a zombie), or a SIGKILL waits for its leader (a fatal
 * signal, or another thread's exit, queues one to every thread; the 31st
 * field, obsolete but kept, shows the leader's own pending signals). Not
 * a kernel thread. 1 yes, 0 no, -EIO not such a text. */
int mr_parse_stat_dying(const char *buf)
{
	unsigned long flags, pending;
	const char *p = strrchr(buf, ')');

	if (!p || p[1] != ' ' || !p[2] || stat_field(buf, 9, &flags) ||
	    stat_field(buf, 31, &pending))
		return -EIO;
	if (flags & MR_PF_KTHREAD)
		return 0;
	return p[2] == 'Z' || p[2] == 'X' || (flags & MR_PF_EXITING) ||
	       (pending & (1UL << (SIGKILL - 1)));
}

/* For a sweep of every process (--dying): whether /proc/PID/stat says it
 * may be dying. One read, and no pidfd, for each one that is not; the
 * kernel's answer to process_mrelease has the last word on the others.
 * 1 yes, 0 no (kernel threads too), -errno unreadable. */
int mr_proc_may_be_dying(const char *proc, pid_t pid)
{
	char buf[STAT_MAX];
	ssize_t n;

	if ((n = read_proc(proc, pid, "stat", buf, sizeof(buf))) < 0)
		return (int)n;
	return mr_parse_stat_dying(buf);
}

/* Whether a process is dying as the kernel decides it for process_mrelease
 * (__task_will_free_mem), as far as /proc tells, for a dry run to predict
 * its answer and a failed release to say why: not while its core dump runs
 * (*dumping: the dump may wait in coredump_wait() as long as a thread of
 * it is stuck); otherwise once its exit has begun (PF_EXITING), or a
 * SIGKILL waits for it (a fatal signal, or another thread's exit, queues
 * one to every thread). 1 yes, 0 no, -errno unreadable. */
int mr_proc_dying(const char *proc, pid_t pid, bool *dumping)
{
	char buf[STATUS_MAX];
	struct mr_stat st;
	int r;

	*dumping = false;
	if ((r = (int)read_proc(proc, pid, "status", buf, sizeof(buf))) < 0)
		return r;
	if (field_kb(buf, "CoreDumping:") > 0) {
		*dumping = true;
		return 0;
	}
	if ((r = mr_proc_stat(proc, pid, &st)))
		return r;
	if ((st.flags & MR_PF_EXITING) || st.state == 'Z' || st.state == 'X')
		return 1;
	return kill_pending(buf, "SigPnd:") || kill_pending(buf, "ShdPnd:");
}

/* The figures of the process behind pidfd, read from /proc/PID (pid: the
 * process, or a live thread of it). Returns -ESRCH, with zeros, when it has
 * been reaped (with a pidfd of -1, the caller checks that afterwards), and
 * another -errno when its file cannot be read while it is there (-ENOENT:
 * hidden, as by hidepid; -EACCES: not ours to read; -EMFILE). A process
 * whose address space is gone but that is not yet reaped reads as zeros:
 * smaps_rollup answers ESRCH, status has no Vm lines.
 *
 * status reads the kernel's counters: O(1), and it takes none of the
 * process's locks; statm, its RSS alone, costs less still. smaps_rollup
 * walks the page tables under the process's mmap_lock: about 20 ms a GiB
 * here, and a process stuck while it holds that lock holds the reader
 * too. */
int mr_measure(const char *proc, enum mr_measure_mode mode, pid_t pid, int pidfd,
	       struct mr_mem *mem)
{
	static const char *const files[] = {
		[MR_MEASURE_STATUS] = "status", [MR_MEASURE_SMAPS] = "smaps_rollup",
		[MR_MEASURE_RSS] = "statm",
	};
	char buf[STATUS_MAX];
	ssize_t n;

	mr_mem_unknown(mem);
	if (mode == MR_MEASURE_NONE)
		return 0;
	n = read_proc(proc, pid, files[mode], buf, sizeof(buf));
	/* Once the process is reaped its pid may name another process, whose
	 * figures we may just have read: what the pidfd says afterwards
	 * decides whether they are its figures, or it is gone. */
	if (pidfd >= 0 && mr_sys_pidfd_send_signal(pidfd, 0) && errno == ESRCH) {
		*mem = (struct mr_mem){ 0, 0, 0, 0 };
		return -ESRCH;
	}
	if (n == -ESRCH) {
		*mem = (struct mr_mem){ 0, 0, 0, 0 };
		return 0;
	}
	if (n < 0)
		return (int)n;
	mr_parse_mem(buf, mode, mem);
	return 0;
}

int mr_mem_available_kb(int64_t *kb)
{
	static enum meminfo_item items[] = { MEMINFO_MEM_AVAILABLE };
	struct meminfo_info *info = NULL;
	struct meminfo_stack *s;
	int r;

	r = procps_meminfo_new(&info);
	if (r < 0)
		return r;
	/* select reads /proc/meminfo every time; get caches it for a second. */
	s = procps_meminfo_select(info, items, 1);
	if (s)
		*kb = (int64_t)s->head[0].result.ul_int;
	else
		r = -EIO;
	procps_meminfo_unref(&info);
	return r;
}
