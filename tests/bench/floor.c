/* floor.c: mr-floor, the least any tool must spend to end a process and
 * take its memory back: pidfd_open, pidfd_send_signal(SIGKILL) and
 * process_mrelease, one pid after another, in the order given.  No /proc
 * read, no retry, no output; mr-bench times it as it times mrelease, and
 * reads only its exit status (FLOOR_*, bench.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"
#include "sys.h"

/* A process that is gone, or whose mm is gone (ESRCH), has nothing left
 * to release: a normal race, as in pkill, not a failure. */
static int floor_one(pid_t pid)
{
	int fd = mr_sys_pidfd_open(pid), r = FLOOR_DONE;

	if (fd < 0)
		return errno == ESRCH ? FLOOR_DONE : FLOOR_OPEN;
	if (mr_sys_pidfd_send_signal(fd, SIGKILL) && errno != ESRCH)
		r = FLOOR_SIGNAL;
	else if (mr_sys_process_mrelease(fd) && errno != ESRCH)
		r = FLOOR_MRELEASE;
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	int status = FLOOR_DONE;

	if (argc < 2)
		return FLOOR_USAGE;
	for (int i = 1; i < argc; i++) {
		pid_t pid;
		int r;

		if (mr_parse_pid(argv[i], &pid))
			return FLOOR_USAGE;
		if ((r = floor_one(pid)) && !status)
			status = r;
	}
	return status;
}
