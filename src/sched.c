/* sched.c: the nice value and CPUs of a releasing thread. The kernel does
 * process_mrelease's freeing in the caller's context, so these decide how
 * fast the memory comes back and which CPUs pay for it. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mrelease.h"

/* Applies to the calling thread only: on Linux both the nice value and the
 * affinity mask are per thread. Each is tried on its own, and is best
 * effort: an OOM daemon's hook may lack CAP_SYS_NICE, and releasing at the
 * priority it has beats not releasing. 0 or the errno of each. */
void mr_sched_apply(const struct mr_sched *s, int *nice_err, int *affinity_err)
{
	*nice_err = *affinity_err = 0;
	if (s->set_affinity && sched_setaffinity(0, sizeof(s->cpus), &s->cpus))
		*affinity_err = errno;
	if (s->set_nice && setpriority(PRIO_PROCESS, (id_t)gettid(), s->nice))
		*nice_err = errno;
}
