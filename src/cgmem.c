/* cgmem.c: a cgroup's memory counters: memory.current on v2, or
 * memory.usage_in_bytes in the v1 memory hierarchy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "mrelease.h"

/* Where this cgroup's memory is accounted: its own memory.current on v2,
 * or memory.usage_in_bytes in the v1 memory hierarchy; else NULL. Only the
 * counter of the hierarchy its members are listed from counts them: on a
 * hybrid host the v1 memory cgroup of the same path need not hold them. */
char *mr_cgroup_memory_file(const char *path, bool v2)
{
	const char *name = v2 ? "memory.current" : "memory.usage_in_bytes";
	char *file = NULL;

	if (!mr_file_in(path, name) || asprintf(&file, "%s/%s", path, name) < 0)
		return NULL;
	return file;
}

int mr_cgroup_memory_kb(const struct mr_cgroup *cg, int64_t *kb)
{
	char buf[64], *end;
	unsigned long long bytes;
	int r;

	*kb = MR_UNKNOWN;
	if (!cg->memory_file)
		return -ENOENT;
	if ((r = (int)mr_read_file(cg->memory_file, buf, sizeof(buf))) < 0)
		return r;
	errno = 0;
	bytes = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*kb = (int64_t)(bytes / 1024);
	return 0;
}

