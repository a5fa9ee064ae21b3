/* fuzz_pids.c: libFuzzer target for the pid and number parsers: one word
 * through mr_parse_pidspec() and mr_parse_seconds(), the whole input as
 * standard input through mr_pidlist_read(). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrelease.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct mr_pidlist l = { 0 };
	struct mr_pidspec spec;
	char *s = malloc(size + 1), bad[48];
	unsigned int ms;
	FILE *f;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (mr_parse_pidspec(s, &spec) == 0 && (spec.pid < 1 || spec.pid > MR_PID_MAX))
		abort();
	if (mr_parse_seconds(s, MR_SECONDS_MAX, &ms) == 0 && ms > MR_SECONDS_MAX * 1000u)
		abort();
	f = fmemopen(s, size ? size : 1, "r");
	if (f) {
		if (mr_pidlist_read(&l, f, true, bad, sizeof(bad)) == 0)
			for (size_t i = 0; i < l.len; i++)
				if (l.v[i].pid < 1 || l.v[i].pid > MR_PID_MAX)
					abort();
		fclose(f);
	}
	mr_pidlist_free(&l);
	free(s);
	return 0;
}
