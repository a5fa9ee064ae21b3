/* methods.c: the timed ways of ending victims.  Each is timed from just
 * before its first act (the signal, the write to cgroup.kill, the fork of
 * mr-floor, mrelease or pkill) until the memory is back: the act is over
 * (the victim or the tool has exited, the cgroup is empty; a SIGKILL that
 * a service running beside, mrelease --follow, is to answer, once sent)
 * *and* the victims' memory cgroup holds under 1 % of what they touched
 * (cgroups.c).  The floor, mr-floor, is what any tool must spend; munmap()
 * of the same memory inside the process that owns it is shown beside, as
 * the kernel's speed at freeing these pages without a kill. */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "mrelease.h"
#include "sys.h"

static void record_end(const struct bench *b, const struct scenario *sc, int run,
		       struct series *s, int64_t t0, int64_t end, const struct self_report *self)
{
	record(b, sc, run, s, end == TIMED_OUT ? TIMED_OUT : end - t0, self);
}

/* SIGKILL through each victim's pidfd, then wait for the exits: plain
 * "kill -9 and wait".  Only the pidfds are watched, never /proc/PID:
 * reading a victim's /proc files pins its mm for a moment, and if its own
 * mmput() came then, mr-bench would do its teardown. */
void time_sigkill(const struct bench *b, const struct scenario *sc, int run,
		  struct series *s, const struct victims *vs)
{
	int64_t t0 = mr_now_us(), deadline = t0 + b->timeout_us, end = TIMED_OUT;
	int i;

	for (i = 0; i < vs->n; i++)
		if (mr_sys_pidfd_send_signal(vs->v[i]->pidfd, SIGKILL))
			err(EXIT_FATAL, "pidfd_send_signal %d", vs->v[i]->pid);
	for (i = 0; i < vs->n; i++)
		if (!poll_until(vs->v[i]->pidfd, POLLIN, deadline, true))
			break;
	if (i == vs->n)
		end = wait_memory_back(vs->meter, vs->bytes, deadline);
	record_end(b, sc, run, s, t0, end, NULL);
}

/* SIGKILL through each victim's pidfd, then wait for the memory alone:
 * a stuck victim cannot exit, so whatever takes the memory back is
 * running beside (mrelease --follow); and a frozen victim, released or
 * not, stays until it is thawed.  The time from just before the first
 * signal until the memory was back, or TIMED_OUT; not recorded, since
 * the sample counts only once the service's report confirms it. */
int64_t sigkill_memory_back(const struct bench *b, const struct victims *vs)
{
	int64_t t0 = mr_now_us(), end;

	for (int i = 0; i < vs->n; i++)
		if (mr_sys_pidfd_send_signal(vs->v[i]->pidfd, SIGKILL))
			err(EXIT_FATAL, "pidfd_send_signal %d", vs->v[i]->pid);
	end = wait_memory_back(vs->meter, vs->bytes, t0 + b->timeout_us);
	return end == TIMED_OUT ? TIMED_OUT : end - t0;
}

/* Write 1 to cgroup.kill, wait for "populated 0" in cgroup.events (set
 * once every member has passed cgroup_exit(), after exit_mm()), then for
 * the meter. */
void time_cgroup_kill(const struct bench *b, const struct scenario *sc, int run,
		      struct series *s, const struct cgdir *cg, const struct victims *vs)
{
	int64_t t0, deadline, next, end = TIMED_OUT;
	char buf[256];
	int fd, e;

	fd = openat(cg->dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		err(EXIT_FATAL, "%s/cgroup.events", cg->path);
	t0 = mr_now_us();
	deadline = t0 + b->timeout_us;
	if ((e = mr_write_file(cg->path, "cgroup.kill", "1", NULL)))
		errx(EXIT_FATAL, "%s/cgroup.kill: %s", cg->path, strerror(-e));
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		if (n < 0)
			err(EXIT_FATAL, "%s/cgroup.events", cg->path);
		buf[n] = '\0';
		if (strstr(buf, "populated 0")) {
			end = wait_memory_back(vs->meter, vs->bytes, deadline);
			break;
		}
		if (mr_now_us() >= deadline)
			break;
		/* kernfs flags a change with POLLPRI; cap the wait anyway. */
		next = mr_now_us() + US_PER_MS;
		poll_until(fd, POLLPRI, next < deadline ? next : deadline, true);
	}
	close(fd);
	record_end(b, sc, run, s, t0, end, NULL);
}

/* head (NULL-terminated) followed by the victims' pids; the strings live
 * until the next call. */
const char **pid_args(const char *const *head, const struct victims *vs)
{
	static char pids[1024][12];
	static const char *args[1100];
	int n = 0;

	if (vs->n > (int)ARRAY_LEN(pids))
		errx(EXIT_FATAL, "more than %zu victims for one command", ARRAY_LEN(pids));
	for (; head[n]; n++)
		args[n] = head[n];
	for (int i = 0; i < vs->n; i++) {
		snprintf(pids[i], sizeof(pids[i]), "%d", vs->v[i]->pid);
		args[n++] = pids[i];
	}
	args[n] = NULL;
	return args;
}

/* The victims' pids, one a line, in a memfd left at its start: a
 * standard input for `mrelease -`, which takes any number of them. */
int pid_list(const struct victims *vs)
{
	int fd = memfd_create("mr-bench-pids", MFD_CLOEXEC);
	FILE *f;

	if (fd < 0)
		err(EXIT_FATAL, "memfd_create");
	f = fdopen(fcntl(fd, F_DUPFD_CLOEXEC, 0), "w");
	if (!f)
		err(EXIT_FATAL, "fdopen");
	for (int i = 0; i < vs->n; i++)
		fprintf(f, "%d\n", vs->v[i]->pid);
	if (fclose(f))
		err(EXIT_FATAL, "the pid list");
	if (lseek(fd, 0, SEEK_SET) < 0)
		err(EXIT_FATAL, "lseek");
	return fd;
}

/* Until the memory is back, from t0; or with no meter, until the tool
 * exited at end. */
static int64_t memory_back(const struct bench *b, const struct victims *vs, int64_t t0,
			   int64_t end)
{
	return vs->meter ? wait_memory_back(vs->meter, vs->bytes, t0 + b->timeout_us) : end;
}

static const char *floor_failure(int status)
{
	switch (status) {
	case FLOOR_OPEN: return "a pidfd_open failed";
	case FLOOR_USAGE: return "usage: a pid it did not take";
	case FLOOR_SIGNAL: return "a pidfd_send_signal failed";
	case FLOOR_MRELEASE: return "a process_mrelease failed";
	default: return status > 128 ? strsignal(status - 128) : "unknown exit status";
	}
}

/* mr-floor on the victims' pids, timed as mrelease is: fork to exit, and
 * then until the memory is back. */
void time_floor(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		const struct victims *vs)
{
	const char *const head[] = { b->floor, NULL };
	struct tool_result r;

	run_cmd(pid_args(head, vs), NULL, false, b->timeout_us, &r);
	if (r.status < 0)
		record(b, sc, run, s, TIMED_OUT, NULL);
	else if (r.status != 0)
		record_failure(sc, s, "exit %d: %s", r.status, floor_failure(r.status));
	else
		record_end(b, sc, run, s, r.start_us, memory_back(b, vs, r.start_us, r.end_us),
			   NULL);
}

/* Under a limit on open files below the number of victims, their pidfds
 * cannot all be open at once, so each phase must go in batches; one batch
 * would mean mrelease lifted the limit the child was given.  NULL, or
 * why the report does not show batches. */
static const char *batches_missing(const struct cmd_env *env, const struct victims *vs,
				 const struct mr_report *rep)
{
	if (!env || !env->nofile || vs->n <= env->nofile || rep->self.batches > 1)
		return NULL;
	return rep->self.batches < 0 ? "no \"batches\" in its summary"
				   : "not in batches: it lifted the limit (had it CAP_SYS_RESOURCE?)";
}

/* mrelease with --json and args (and env: a standard input, a limit; or
 * NULL): the sample is until it has exited and the memory is back; its
 * report gives kill_us and the rest, must account for every victim, and
 * under a limit too low for them all must show batches. */
void time_mrelease(const struct bench *b, const struct scenario *sc, int run,
		   struct series *s, const char *const *args, const struct cmd_env *env,
		   const struct victims *vs)
{
	const char *argv[1100] = { "--json" };
	struct tool_result r;
	struct mr_report rep;
	const char *no_batches;
	char why[240];
	int n = 1;

	for (int i = 0; args[i] && n < (int)ARRAY_LEN(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	run_mrelease(b, argv, env, true, b->timeout_us, &r);
	if (r.status < 0) {
		record(b, sc, run, s, TIMED_OUT, NULL);
	} else if (r.status != 0) {
		record_failure(sc, s, "exit %d: %s", r.status, r.err[0] ? r.err : "(no message)");
	} else if (parse_report(r.out, &rep, why, sizeof(why))) {
		record_failure(sc, s, "%s", why);
	} else if (rep.targets != vs->n || rep.released + rep.exited != vs->n) {
		record_failure(sc, s, "%ld targets, %ld released, %ld exited, %d victims%s%s",
			       rep.targets, rep.released, rep.exited, vs->n,
			       rep.error[0] ? ": " : "", rep.error);
	} else if ((no_batches = batches_missing(env, vs, &rep))) {
		record_failure(sc, s, "%d pids under RLIMIT_NOFILE %ld: %s", vs->n, env->nofile,
			       no_batches);
	} else {
		int64_t end = memory_back(b, vs, r.start_us, r.end_us);

		/* mrelease was done, but the memory was not back: say how it
		 * found the victims, since that tells why. */
		if (end == TIMED_OUT && !s->note[0])
			snprintf(s->note, sizeof(s->note),
				 "run %d: mrelease exited 0 after %.1f ms (%ld released, %ld "
				 "found exiting), but the memory was not back",
				 run + 1, (double)(r.end_us - r.start_us) / US_PER_MS, rep.released,
				 rep.exited);
		record_end(b, sc, run, s, r.start_us, end, &rep.self);
	}
	free(r.out);
}

/* pkill --count's one line. */
static int parse_count(char *out, long *count)
{
	out[strcspn(out, "\n")] = '\0';
	return mr_parse_long(out, 0, LONG_MAX, count);
}

/* pkill -m: SIGKILL and process_mrelease through a pidfd per process, as
 * procps-ng 4.0.6 does them.  It picks the victims by parent and name:
 * -P mr-bench -x VICTIM_COMM matches no process mr-bench did not start,
 * and --count must say it found every victim. */
void time_pkill(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		const struct victims *vs)
{
	char parent[16];
	const char *argv[] = { b->pkill.path, "-9", "--mrelease", "--count", "-P", parent, "-x",
			       VICTIM_COMM, NULL };
	struct tool_result r;
	long count;

	snprintf(parent, sizeof(parent), "%d", getpid());
	run_cmd(argv, NULL, true, b->timeout_us, &r);
	if (r.status < 0) {
		record(b, sc, run, s, TIMED_OUT, NULL);
	} else if (r.status != 0) {
		record_failure(sc, s, "exit %d: %s", r.status, r.err[0] ? r.err : "(no message)");
	} else if (parse_count(r.out, &count) || count != vs->n) {
		record_failure(sc, s, "--count says '%.20s', %d victims", r.out, vs->n);
	} else {
		record_end(b, sc, run, s, r.start_us, memory_back(b, vs, r.start_us, r.end_us),
			   NULL);
	}
	free(r.out);
}

void time_munmap(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		 size_t bytes, int chunks, int cpu)
{
	struct spawn_spec spec = { .kind = KID_MUNMAP, .bytes = bytes, .chunks = chunks, .cpu = cpu };
	int64_t us;
	int e = munmap_run(&spec, b->timeout_us, &us);

	if (e)
		record_failure(sc, s, "munmap child: %s", strerror(-e));
	else
		record(b, sc, run, s, us, NULL);
}

/* A whole process, fork to exit: argv must exit 0. */
void time_process(const struct bench *b, const struct scenario *sc, int run, struct series *s,
		  const char *const *argv)
{
	struct tool_result r;

	run_cmd(argv, NULL, false, b->timeout_us, &r);
	if (r.status == 0)
		record(b, sc, run, s, r.end_us - r.start_us, NULL);
	else if (r.status < 0)
		record(b, sc, run, s, TIMED_OUT, NULL);
	else
		record_failure(sc, s, "exit %d: %s", r.status, r.err[0] ? r.err : "(no message)");
}
