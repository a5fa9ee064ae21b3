/* sys.h: syscall shims and the kernel's constants that mrelease relies on.
 * glibc's wrappers where CMake found them, the raw syscall otherwise; either
 * way the answer is -1 with errno set, and ENOSYS means this kernel (or a
 * seccomp filter) does not offer the call. */
#ifndef MR_SYS_H
#define MR_SYS_H

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"

#ifdef HAVE_PIDFD_OPEN
#include <sys/pidfd.h>
#endif

#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448 /* x86_64, and the unified table since 5.1 */
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* include/uapi/linux/pidfd.h, Linux 6.9 */
#endif
#ifndef PIDFS_MAGIC
#define PIDFS_MAGIC 0x50494446 /* include/uapi/linux/magic.h, Linux 6.9 */
#endif
#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0 /* include/uapi/linux/magic.h */
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4 /* include/uapi/asm-generic/mman-common.h, Linux 4.4 */
#endif
#ifndef SYS_kcmp
#define SYS_kcmp 312 /* x86_64 */
#endif
#define MR_KCMP_VM 1 /* include/uapi/linux/kcmp.h */
/* PIDFD_GET_INFO (Linux 6.13): facts of the process behind a pidfd, read
 * from the pidfd itself. The first version of its struct
 * (include/uapi/linux/pidfd.h); the request number carries its size. */
struct mr_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid, spare0;
};
#define MR_PIDFD_GET_INFO _IOWR(0xFF, 11, struct mr_pidfd_info)
#define MR_PIDFD_INFO_CGROUPID (1ULL << 2)
/* Task flags, as the ninth field of /proc/PID/stat shows them
 * (include/linux/sched.h). */
#define MR_PF_EXITING 0x00000004
#define MR_PF_KTHREAD 0x00200000

static inline int mr_sys_pidfd_open(pid_t pid)
{
#ifdef HAVE_PIDFD_OPEN
	return pidfd_open(pid, 0);
#else
	return (int)syscall(SYS_pidfd_open, pid, 0);
#endif
}

static inline int mr_sys_pidfd_send_signal(int pidfd, int sig)
{
#ifdef HAVE_PIDFD_SEND_SIGNAL
	return pidfd_send_signal(pidfd, sig, NULL, 0);
#else
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#endif
}

static inline int mr_sys_process_mrelease(int pidfd)
{
#ifdef HAVE_PROCESS_MRELEASE
	return process_mrelease(pidfd, 0);
#else
	return (int)syscall(SYS_process_mrelease, pidfd, 0);
#endif
}

#endif
