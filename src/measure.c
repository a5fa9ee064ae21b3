/* measure.c: everything mrelease reads through libproc2.
 *
 * libproc2 stays behind this file. Two things shape it:
 * - PIDS_VAL lost its last argument in procps-ng 4.0.5, so results are read
 *   through val() below, which both versions build.
 * - libproc2 4.0.2 yields silent zeros when a /proc file cannot be read, so
 *   the file is opened here first: an unreadable smaps_rollup is an error for
 *   that target, never "0 kB". Opening is the permission check for it (the
 *   kernel takes PTRACE_MODE_READ at open), and it does not walk the page
 *   tables, which only reading does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libproc2/meminfo.h>
#include <libproc2/pids.h>

#include "mrelease.h"

/* Items and their index enum side by side, in the same order. */
static enum pids_item ident_items[] = {
	PIDS_CMD, PIDS_TICS_BEGAN, PIDS_FLAGS, PIDS_ID_TGID, PIDS_STATE,
};
enum ident_index { I_CMD, I_BEGAN, I_FLAGS, I_TGID, I_STATE };

static enum pids_item smaps_items[] = {
	PIDS_SMAP_RSS, PIDS_SMAP_PSS, PIDS_SMAP_ANONYMOUS, PIDS_SMAP_SWAP,
};
enum smaps_index { M_RSS, M_PSS, M_ANON, M_SWAP };

/* The O(1) counters; status has no Pss. */
static enum pids_item status_items[] = {
	PIDS_VM_RSS, PIDS_VM_RSS_ANON, PIDS_VM_SWAP,
};
enum status_index { S_RSS, S_ANON, S_SWAP };

#define NITEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

struct mr_procinfo {
	struct pids_info *ident;
	struct pids_info *mem; /* NULL for MR_MEASURE_NONE */
	enum { F_NONE, F_SMAPS, F_STATUS } file; /* what mem reads */
};

static inline struct pids_result *val(struct pids_stack *stack, int index)
{
	return &stack->head[index];
}

int mr_procinfo_new(struct mr_procinfo **out, enum mr_measure_mode mode)
{
	struct mr_procinfo *pi;
	int r;

	pi = calloc(1, sizeof(*pi));
	if (!pi)
		return -ENOMEM;
	r = procps_pids_new(&pi->ident, ident_items, NITEMS(ident_items));
	if (r < 0)
		goto fail;
	switch (mode) {
	case MR_MEASURE_SMAPS:
		pi->file = F_SMAPS;
		r = procps_pids_new(&pi->mem, smaps_items, NITEMS(smaps_items));
		break;
	case MR_MEASURE_STATUS:
		pi->file = F_STATUS;
		r = procps_pids_new(&pi->mem, status_items, NITEMS(status_items));
		break;
	case MR_MEASURE_NONE:
		pi->file = F_NONE;
		r = 0;
		break;
	}
	if (r < 0)
		goto fail;
	*out = pi;
	return 0;
fail:
	mr_procinfo_free(pi);
	return r;
}

void mr_procinfo_free(struct mr_procinfo *pi)
{
	if (!pi)
		return;
	if (pi->ident)
		procps_pids_unref(&pi->ident);
	if (pi->mem)
		procps_pids_unref(&pi->mem);
	free(pi);
}

static struct pids_stack *select_one(struct pids_info *info, pid_t pid)
{
	unsigned int these = (unsigned int)pid;
	struct pids_fetch *f;

	f = procps_pids_select(info, &these, 1, PIDS_SELECT_PID);
	if (!f || !f->counts || f->counts->total < 1)
		return NULL;
	return f->stacks[0];
}

int mr_proc_identity(struct mr_procinfo *pi, struct mr_target *t, unsigned long *flags, char *state)
{
	struct pids_stack *s = select_one(pi->ident, t->pid);

	if (!s)
		return -ESRCH;
	snprintf(t->comm, sizeof(t->comm), "%s", val(s, I_CMD)->result.str);
	t->start_time = val(s, I_BEGAN)->result.ull_int;
	t->tgid = val(s, I_TGID)->result.s_int;
	*flags = val(s, I_FLAGS)->result.ul_int;
	*state = val(s, I_STATE)->result.s_ch;
	return 0;
}

void mr_mem_unknown(struct mr_mem *mem)
{
	*mem = (struct mr_mem){ MR_UNKNOWN, MR_UNKNOWN, MR_UNKNOWN, MR_UNKNOWN };
}

static int check_readable(pid_t pid, const char *file)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int gone(struct mr_mem *mem)
{
	*mem = (struct mr_mem){ 0, 0, 0, 0 };
	return -ESRCH;
}

/* Returns -ESRCH, with zeros, when the process has been reaped, and another
 * -errno when its file cannot be read while it is there (-ENOENT: hidden,
 * as by hidepid; -EACCES: another user's). A process whose address space is
 * gone but is not yet reaped reads as zeros: opening its smaps_rollup
 * answers ESRCH, reading it nothing. */
int mr_measure(struct mr_procinfo *pi, const struct mr_target *t, struct mr_mem *mem)
{
	struct pids_stack *s;
	int r;

	mr_mem_unknown(mem);
	if (pi->file == F_NONE)
		return 0;
	/* Once the process is reaped its pid may name another process, whose
	 * figures we may just have read: what the pidfd says afterwards
	 * decides whether they are its figures, or it is gone. */
	r = check_readable(t->mm_pid, pi->file == F_SMAPS ? "smaps_rollup" : "status");
	s = r ? NULL : select_one(pi->mem, t->mm_pid);
	if (!mr_target_alive(t))
		return gone(mem);
	/* There, but without an address space (a zombie): nothing left. */
	if (r == -ESRCH) {
		*mem = (struct mr_mem){ 0, 0, 0, 0 };
		return 0;
	}
	if (r)
		return r;
	if (!s)
		return -ENOENT;
	if (pi->file == F_SMAPS) {
		mem->rss_kb = (int64_t)val(s, M_RSS)->result.ul_int;
		mem->pss_kb = (int64_t)val(s, M_PSS)->result.ul_int;
		mem->anon_kb = (int64_t)val(s, M_ANON)->result.ul_int;
		mem->swap_kb = (int64_t)val(s, M_SWAP)->result.ul_int;
	} else {
		mem->rss_kb = (int64_t)val(s, S_RSS)->result.ul_int;
		mem->anon_kb = (int64_t)val(s, S_ANON)->result.ul_int;
		mem->swap_kb = (int64_t)val(s, S_SWAP)->result.ul_int;
	}
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
