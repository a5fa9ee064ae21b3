/* killwatch.c: a watch on every SIGKILL generated on the host, whoever sends
 * it (kill(2), pidfd_send_signal, cgroup.kill, the OOM killer), so that
 * --follow can release the victim at once. The kernel's tracepoint
 * signal:signal_generate fires in __send_signal_locked() for each of them;
 * it is opened with perf_event_open on each online CPU, filtered in the
 * kernel to sig == 9, and each CPU's samples go to a small ring buffer that
 * wakes its reader at every sample. While nothing is killed nothing wakes.
 *
 * Only syscalls: no BPF, no library. A CPU-wide event with raw tracepoint
 * data needs CAP_PERFMON or CAP_SYS_ADMIN (kernel/events/core.c), and tracefs
 * mounted, for the tracepoint's id and the layout of its record; nothing
 * here mounts it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mrelease.h"
#include "sys.h"

#define EVENT_DIR "events/signal/signal_generate"
#define FILTER "sig == 9"
/* Data pages of each CPU's ring: perf wants a power of two. A SIGKILL
 * sample takes 64 bytes there (a header, the raw size and the 48-byte
 * record, padded to 8 bytes), so 32 KiB hold 511 of them (the kernel
 * leaves one byte free, CIRC_SPACE()). */
#define RING_PAGES 8
/* A ring with less room than this may have dropped a sample: one sample,
 * and the PERF_RECORD_LOST the kernel writes in front of the next. */
#define FULL_MARGIN 256
/* Pids read by mr_killwatch_selftest that are not its child's, kept for
 * the next mr_killwatch_read; beyond these they count as lost. */
#define KEPT_MAX 64
/* Where a PERF_RECORD_LOST has its count: after its header and the id of
 * the event. */
#define LOST_AT (sizeof(struct perf_event_header) + sizeof(uint64_t))
/* The fields read must lie in the first RECORD_MAX bytes of the record. */
#define RECORD_MAX 256

/* Where a field sits in the tracepoint's record. */
struct field {
	size_t offset, size;
};

struct ring {
	int fd;
	struct perf_event_mmap_page *meta; /* the first page, then the data */
	unsigned char *data;
	uint64_t size;                     /* of the data, a power of two */
	bool full;                         /* found full, and counted lost */
};

struct mr_killwatch {
	int epfd;
	size_t map_len;
	struct field sig, pid;
	size_t need;  /* record bytes that hold both fields */
	size_t next;  /* the ring a read starts with, so that a busy CPU
		       * cannot starve the others when pids fill up */
	pid_t kept[KEPT_MAX];
	size_t nkept, kept_from;
	uint64_t kept_lost;
	size_t nrings;
	struct ring rings[];
};

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* One mountinfo line, "id parent dev root mountpoint opts [tags] - type
 * source superopts": its root, mount point and type, or -EINVAL. */
static int mount_fields(char *line, char **root, char **point, char **type)
{
	char *field[64], *save = NULL, *tok;
	int n = 0, sep = -1;

	for (tok = strtok_r(line, " \n", &save); tok && n < 64;
	     tok = strtok_r(NULL, " \n", &save)) {
		if (sep < 0 && n >= 6 && strcmp(tok, "-") == 0)
			sep = n;
		field[n++] = tok;
	}
	if (sep < 0 || sep + 1 >= n)
		return -EINVAL;
	mr_unescape_octal(field[3]);
	mr_unescape_octal(field[4]);
	*root = field[3];
	*point = field[4];
	*type = field[sep + 1];
	return 0;
}

static int put_path(char *out, size_t len, const char *dir, const char *sub)
{
	return snprintf(out, len, "%s%s", dir, sub) >= (int)len ? -ENAMETOOLONG : 0;
}

/* Only a tracefs mount counts: debugfs's "tracing" is an automount point
 * (kernel/trace/trace.c), and looking into it would have the kernel mount
 * tracefs there, which mrelease never does. */
int mr_tracefs_find(const char *mountinfo, char *out, size_t len)
{
	char *line = NULL, *root, *point, *type;
	FILE *f = fopen(mountinfo, "re");
	size_t cap = 0;
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r == -ENOENT && getline(&line, &cap, f) > 0) {
		/* A mount of a subdirectory (root other than "/") may lack events/. */
		if (mount_fields(line, &root, &point, &type) == 0 && strcmp(root, "/") == 0 &&
		    strcmp(type, "tracefs") == 0)
			r = put_path(out, len, point, "");
	}
	if (r == -ENOENT && ferror(f))
		r = -EIO;
	free(line);
	fclose(f);
	return r;
}

/* The number after tag ("offset:", "size:") in the line that starts at
 * from and ends at end. */
static int tag_value(const char *from, const char *end, const char *tag, long *v)
{
	const char *p;
	char num[16];
	size_t len;

	if (!(p = strstr(from, tag)) || p >= end)
		return -EPROTO;
	p += strlen(tag);
	len = strcspn(p, ";\n");
	if (len == 0 || len >= sizeof(num))
		return -EPROTO;
	memcpy(num, p, len);
	num[len] = '\0';
	return mr_parse_long(num, 0, RECORD_MAX, v) ? -EPROTO : 0;
}

/* A field of the tracepoint's format file, whose lines read
 * "\tfield:int sig;\toffset:8;\tsize:4;\tsigned:1;" (f_show() in
 * kernel/trace/trace_events.c). The name is the declaration's last word,
 * less any array size. Only ints of 4 or 8 bytes are read. */
static int find_field(const char *format, const char *name, struct field *f)
{
	size_t nlen = strlen(name);
	long off, size;

	for (const char *p = format; (p = strstr(p, "field:")); p++) {
		const char *semi = strchr(p, ';'), *eol = strchr(p, '\n'), *end, *word;

		if (!semi || (eol && eol < semi))
			continue;
		end = memchr(p, '[', (size_t)(semi - p));
		end = end ? end : semi;
		for (word = end; word > p && word[-1] != ' ' && word[-1] != ':'; word--)
			;
		if ((size_t)(end - word) != nlen || memcmp(word, name, nlen) != 0)
			continue;
		eol = eol ? eol : semi + strlen(semi);
		if (tag_value(semi, eol, "offset:", &off) || tag_value(semi, eol, "size:", &size))
			return -EPROTO;
		if ((size != 4 && size != 8) || off + size > RECORD_MAX)
			return -EPROTO;
		*f = (struct field){ (size_t)off, (size_t)size };
		return 0;
	}
	return -EPROTO;
}

/* The tracepoint's id, and where its sig and pid fields sit. */
static int read_event(struct mr_killwatch *w, const char *tracefs, long *id)
{
	char path[PATH_MAX], buf[8192];
	ssize_t len;
	int r;

	if (put_path(path, sizeof(path), tracefs, "/" EVENT_DIR "/id"))
		return -ENAMETOOLONG;
	if ((len = mr_read_file(path, buf, sizeof(buf))) < 0)
		return (int)len;
	buf[strcspn(buf, "\n")] = '\0';
	if (mr_parse_long(buf, 1, INT_MAX, id))
		return -EPROTO;
	if (put_path(path, sizeof(path), tracefs, "/" EVENT_DIR "/format"))
		return -ENAMETOOLONG;
	if ((len = mr_read_file(path, buf, sizeof(buf))) < 0)
		return (int)len;
	if ((r = find_field(buf, "sig", &w->sig)) || (r = find_field(buf, "pid", &w->pid)))
		return r;
	w->need = w->sig.offset + w->sig.size;
	if (w->pid.offset + w->pid.size > w->need)
		w->need = w->pid.offset + w->pid.size;
	return 0;
}

/* Open the event on one CPU, filter it, map its ring and add it to the
 * epoll set; disabled until every CPU is ready. -ENODEV: perf has no such
 * CPU (it went offline since the list was read). */
static int open_ring(struct mr_killwatch *w, struct perf_event_attr *attr, int cpu)
{
	struct ring *rg = &w->rings[w->nrings];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = w->nrings };
	void *map = MAP_FAILED;
	int fd, r;

	if ((fd = sys_perf_event_open(attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)) < 0)
		return -errno;
	if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, FILTER) < 0) {
		r = -errno;
		goto out;
	}
	/* A writable mapping makes the kernel respect data_tail: a full ring
	 * drops new samples, counted in a PERF_RECORD_LOST, rather than
	 * overwriting the ones not read. */
	map = mmap(NULL, w->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED || epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		r = -errno;
		goto out;
	}
	rg->fd = fd;
	rg->meta = map;
	/* data_offset and data_size are there since Linux 4.1; before, the
	 * data followed the first page. */
	rg->data = (unsigned char *)map + (rg->meta->data_offset ? rg->meta->data_offset
								 : w->map_len / (RING_PAGES + 1));
	rg->size = rg->meta->data_size ? rg->meta->data_size
				       : w->map_len / (RING_PAGES + 1) * RING_PAGES;
	w->nrings++;
	return 0;
out:
	if (map != MAP_FAILED)
		munmap(map, w->map_len);
	close(fd);
	return r;
}

int mr_killwatch_open(struct mr_killwatch **out, const char *tracefs)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(attr),
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_RAW,
		.wakeup_events = 1,
		.disabled = 1,
	};
	struct mr_killwatch *w;
	cpu_set_t online;
	long id, page = sysconf(_SC_PAGESIZE);
	int r;

	*out = NULL;
	if ((r = mr_cpus_online(&online)))
		return r;
	w = calloc(1, sizeof(*w) + (size_t)CPU_COUNT(&online) * sizeof(w->rings[0]));
	if (!w)
		return -ENOMEM;
	w->map_len = (size_t)(page > 0 ? page : 4096) * (RING_PAGES + 1);
	if ((w->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		r = -errno;
		goto out;
	}
	if ((r = read_event(w, tracefs, &id)))
		goto out;
	attr.config = (uint64_t)id;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &online))
			continue;
		if ((r = open_ring(w, &attr, cpu)) == -ENODEV)
			continue;
		if (r)
			goto out;
	}
	r = w->nrings ? 0 : -ENODEV;
	for (size_t i = 0; !r && i < w->nrings; i++)
		if (ioctl(w->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
			r = -errno;
out:
	if (r) {
		mr_killwatch_close(w);
		return r;
	}
	*out = w;
	return 0;
}

int mr_killwatch_fd(const struct mr_killwatch *w)
{
	return w->epfd;
}

/* len bytes of the ring from position pos, which may run past the end of
 * the data and on from its start. */
static void ring_copy(const struct ring *rg, uint64_t pos, void *dst, size_t len)
{
	size_t at = (size_t)(pos & (rg->size - 1)), first = len;

	if (first > rg->size - at)
		first = (size_t)(rg->size - at);
	memcpy(dst, rg->data + at, first);
	memcpy((unsigned char *)dst + first, rg->data, len - first);
}

static int64_t field_value(const unsigned char *record, struct field f)
{
	int32_t v32;
	int64_t v64;

	if (f.size == 4) {
		memcpy(&v32, record + f.offset, sizeof(v32));
		return v32;
	}
	memcpy(&v64, record + f.offset, sizeof(v64));
	return v64;
}

/* The SIGKILL in the sample of size bytes at pos: its pid into *pid, 1;
 * 0 not a SIGKILL; -EPROTO not a sample the kernel writes. A sample of
 * PERF_SAMPLE_RAW alone is its header, a u32 size and the tracepoint's
 * record (perf_output_sample()), padded to 8 bytes. */
static int sample_pid(const struct mr_killwatch *w, const struct ring *rg, uint64_t pos,
		      size_t size, pid_t *pid)
{
	unsigned char record[RECORD_MAX];
	uint32_t raw;

	if (size < sizeof(struct perf_event_header) + sizeof(raw) + w->need)
		return -EPROTO;
	pos += sizeof(struct perf_event_header);
	ring_copy(rg, pos, &raw, sizeof(raw));
	if (raw < w->need || raw > size - sizeof(struct perf_event_header) - sizeof(raw))
		return -EPROTO;
	ring_copy(rg, pos + sizeof(raw), record, w->need);
	/* The kernel filtered on sig already; this is in case a filter did not
	 * take, which would let every signal through. */
	if (field_value(record, w->sig) != SIGKILL || field_value(record, w->pid) <= 0)
		return 0;
	*pid = (pid_t)field_value(record, w->pid);
	return 1;
}

/* The records of one ring, up to pids filling up: samples, and
 * PERF_RECORD_LOST with the count dropped. The kernel publishes data_head
 * only once the records before it are written, so it is read with acquire;
 * data_tail is written with release once they are read, as it lets the
 * kernel write over them (include/uapi/linux/perf_event.h). */
static int drain_ring(const struct mr_killwatch *w, struct ring *rg, pid_t *pids,
		      size_t cap, size_t *n, uint64_t *lost)
{
	uint64_t head = __atomic_load_n(&rg->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = rg->meta->data_tail, dropped;
	struct perf_event_header h;
	int r = 0;

	/* The kernel reports what it dropped only in front of its next sample,
	 * which may not come for long: a ring this full may have dropped some
	 * already, and counts as one lost, once for each time it fills. */
	if (head - tail <= rg->size - FULL_MARGIN) {
		rg->full = false;
	} else if (!rg->full) {
		rg->full = true;
		(*lost)++;
	}
	for (; tail != head; tail += h.size) {
		if (head - tail < sizeof(h)) {
			r = -EPROTO;
			break;
		}
		ring_copy(rg, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			r = -EPROTO;
			break;
		}
		if (h.type == PERF_RECORD_SAMPLE) {
			if (*n == cap) {
				r = 1;
				break;
			}
			if ((r = sample_pid(w, rg, tail, h.size, &pids[*n])) < 0)
				break;
			*n += (size_t)r;
			r = 0;
		} else if (h.type == PERF_RECORD_LOST && h.size >= LOST_AT + sizeof(dropped)) {
			ring_copy(rg, tail + LOST_AT, &dropped, sizeof(dropped));
			*lost += dropped;
		}
	}
	/* A record the kernel would not write: what is left of the ring is
	 * given up, and counted as lost, so that the next read starts afresh
	 * and the caller looks for what it missed. */
	if (r < 0) {
		tail = head;
		(*lost)++;
	}
	__atomic_store_n(&rg->meta->data_tail, tail, __ATOMIC_RELEASE);
	return r;
}

/* Every ring, starting with the one a full pids stopped at last time. */
static int drain(struct mr_killwatch *w, pid_t *pids, size_t cap, size_t *n, uint64_t *lost)
{
	for (size_t k = 0; k < w->nrings; k++) {
		size_t i = (w->next + k) % w->nrings;
		int r = drain_ring(w, &w->rings[i], pids, cap, n, lost);

		if (r) {
			w->next = i;
			return r;
		}
	}
	return 0;
}

int mr_killwatch_read(struct mr_killwatch *w, pid_t *pids, size_t cap, size_t *n,
		      uint64_t *lost)
{
	*n = 0;
	*lost += w->kept_lost;
	w->kept_lost = 0;
	for (; w->kept_from < w->nkept; w->kept_from++) {
		if (*n == cap)
			return 1;
		pids[(*n)++] = w->kept[w->kept_from];
	}
	w->nkept = w->kept_from = 0;
	return drain(w, pids, cap, n, lost);
}

static void keep(struct mr_killwatch *w, pid_t pid)
{
	if (w->nkept < KEPT_MAX)
		w->kept[w->nkept++] = pid;
	else
		w->kept_lost++;
}

/* Read events until the child's pid comes or the deadline passes. *others:
 * other SIGKILLs came (kept for the caller); *lost: some were dropped. */
static int look_for(struct mr_killwatch *w, pid_t child, int64_t deadline_us, bool *others,
		    uint64_t *lost)
{
	struct pollfd pfd = { .fd = w->epfd, .events = POLLIN };
	pid_t got[KEPT_MAX];
	bool seen = false;
	size_t n;
	int r;

	while (!seen) {
		int64_t left = deadline_us - mr_now_us();

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)((left + 999) / 1000)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		do {
			n = 0;
			if ((r = drain(w, got, KEPT_MAX, &n, lost)) < 0)
				return r;
			for (size_t i = 0; i < n; i++) {
				if (got[i] == child) {
					seen = true;
				} else {
					*others = true;
					keep(w, got[i]);
				}
			}
		} while (r == 1);
	}
	return 0;
}

int mr_killwatch_selftest(struct mr_killwatch *w, int timeout_ms)
{
	int64_t deadline_us = mr_now_us() + (int64_t)timeout_ms * 1000;
	bool others = false;
	uint64_t lost = 0;
	pid_t child;
	int pidfd, r, status;

	if ((child = fork()) < 0)
		return -errno;
	if (child == 0)
		for (;;)
			pause();
	/* The child is ours and not reaped, so its pid cannot name another
	 * process yet: where no pidfd can be had, kill(2) is as safe. */
	if ((pidfd = mr_sys_pidfd_open(child)) < 0) {
		r = -errno;
		kill(child, SIGKILL);
		goto out;
	}
	if ((r = mr_pidfd_signal(pidfd, SIGKILL)))
		kill(child, SIGKILL);
	close(pidfd);
	if (!r)
		r = look_for(w, child, deadline_us, &others, &lost);
	w->kept_lost += lost;
	/* The tracepoint's pid is the task's in the initial pid namespace
	 * (task_pid_nr()): SIGKILLs without our child's pid say we are in
	 * another one, unless the child's sample may be among those lost. */
	if (r == -ETIMEDOUT && others && !lost)
		r = -EXDEV;
out:
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return r;
}

int mr_perf_paranoid(int *level)
{
	char buf[32];
	ssize_t len = mr_read_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf));
	long v;

	if (len < 0)
		return (int)len;
	buf[strcspn(buf, "\n")] = '\0';
	if (mr_parse_long(buf, INT_MIN, INT_MAX, &v))
		return -EPROTO;
	*level = (int)v;
	return 0;
}

void mr_killwatch_close(struct mr_killwatch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nrings; i++) {
		munmap(w->rings[i].meta, w->map_len);
		close(w->rings[i].fd);
	}
	if (w->epfd >= 0)
		close(w->epfd);
	free(w);
}
