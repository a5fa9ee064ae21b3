/* fuzz_cgroup.c: libFuzzer target for the cgroup path resolver, pasted
 * /proc/PID/cgroup lines included. The input is a mountinfo text, a NUL,
 * and a path to resolve against those mounts. Resolving only looks at the
 * file system (stat, realpath, access). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrelease.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const unsigned char *nul = memchr(data, '\0', size);
	size_t mlen = nul ? (size_t)(nul - data) : size;
	struct mr_cgmounts ms;
	struct mr_cgroup cg;
	char *path, tried[4096], other[4096];
	FILE *f;

	f = fmemopen((void *)data, mlen ? mlen : 1, "r");
	if (!f)
		return 0;
	if (mr_cgmounts_parse(&ms, f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	path = strndup(nul ? (const char *)nul + 1 : "", nul ? size - mlen - 1 : 0);
	if (path && mr_cgroup_resolve(&ms, path, &cg, tried, sizeof(tried), other, sizeof(other)) == 0) {
		bool whole = false, part = false;

		/* What resolves is an absolute path without "..". It is a root
		 * only at the mount point of a whole hierarchy (a mount whose
		 * own root is "/"), and always there, unless a mount of a
		 * subtree shares that mount point. */
		if (cg.path[0] != '/' || strstr(cg.path, "/../"))
			abort();
		for (size_t i = 0; i < ms.n; i++)
			if (strcmp(ms.m[i].path, cg.path) == 0)
				*(strcmp(ms.m[i].root, "/") == 0 ? &whole : &part) = true;
		if ((cg.root && !whole) || (!cg.root && whole && !part))
			abort();
		mr_cgroup_free(&cg);
	}
	free(path);
	mr_cgmounts_free(&ms);
	return 0;
}
