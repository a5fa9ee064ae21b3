/* nosys.c: run a command with process_mrelease answering ENOSYS, as on a
 * kernel before 5.15 or under a seccomp filter that does not know it; with
 * -p, EPERM, as a seccomp filter that refuses it says (systemd-nspawn's
 * default filter, a unit's SystemCallFilter with SystemCallErrorNumber=EPERM).
 * usage: mr-nosys [-p] COMMAND [ARG...] */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif

int main(int argc, char **argv)
{
	int eperm = argc > 1 && strcmp(argv[1], "-p") == 0;
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_mrelease, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (eperm ? EPERM : ENOSYS)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };

	argv += eperm;
	argc -= eperm;
	if (argc < 2)
		errx(2, "usage: mr-nosys [-p] COMMAND [ARG...]");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err(1, "PR_SET_NO_NEW_PRIVS");
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		err(1, "seccomp");
	execvp(argv[1], argv + 1);
	err(127, "%s", argv[1]);
}
