/* fuzz_proc.c: libFuzzer target for the /proc parsers: the input as a
 * /proc/PID/stat line through mr_parse_stat(), and as smaps_rollup and
 * status and statm text through mr_parse_mem(). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "mrelease.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	struct mr_stat st;
	struct mr_mem mem;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	mr_parse_mem(s, MR_MEASURE_SMAPS, &mem);
	if (mem.rss_kb < 0 || mem.pss_kb < 0 || mem.anon_kb < 0 || mem.swap_kb < 0)
		abort();
	mr_parse_mem(s, MR_MEASURE_STATUS, &mem);
	if (mem.rss_kb < 0 || mem.pss_kb != MR_UNKNOWN)
		abort();
	/* statm has no missing line to count 0: a text that is not one is unknown. */
	mr_parse_mem(s, MR_MEASURE_RSS, &mem);
	if ((mem.rss_kb < 0 && mem.rss_kb != MR_UNKNOWN) || mem.pss_kb != MR_UNKNOWN)
		abort();
	if (mr_parse_stat(s, &st) == 0 && strlen(st.comm) >= MR_COMM_LEN)
		abort();
	free(s);
	return 0;
}
