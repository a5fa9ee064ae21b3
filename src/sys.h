/* sys.h: syscall shims and the kernel's constants that mrelease relies on.
 * glibc's wrappers where CMake found them, the raw syscall otherwise; either
 * way the answer is -1 with errno set, and ENOSYS means this kernel (or a
 * seccomp filter) does not offer the call. */
#ifndef MR_SYS_H
#define MR_SYS_H

#include <fcntl.h>
#include <signal.h>
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
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4 /* include/uapi/asm-generic/mman-common.h, Linux 4.4 */
#endif
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
