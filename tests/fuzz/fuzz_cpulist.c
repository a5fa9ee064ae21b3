/* fuzz_cpulist.c: libFuzzer target for mr_parse_cpulist(). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "mrelease.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	cpu_set_t set;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (mr_parse_cpulist(s, &set) == 0 && CPU_COUNT(&set) == 0)
		abort(); /* a list that parses names at least one CPU */
	free(s);
	return 0;
}
