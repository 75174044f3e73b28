/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * epoll_mod_wait(2): userspace declarations and wrapper.
 *
 * Include this instead of <linux/eventpoll.h>, which clashes with glibc's
 * <sys/epoll.h>.  The syscall number comes from the installed kernel uapi
 * headers (<asm/unistd.h>, through <sys/syscall.h>): install the patched
 * kernel's headers (make headers_install) where the compiler finds them.
 *
 * The layout is the same on v3.19 and 6.12 for a given ABI: the timeout is
 * 64-bit seconds and nanoseconds on every ABI (x86_64 and i386), the
 * structures are packed on x86_64 like struct epoll_event.  Only the syscall
 * numbers differ between the two bases; see man/epoll_mod_wait.2.
 */
#ifndef _EPOLL_MOD_WAIT_H
#define _EPOLL_MOD_WAIT_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

/*
 * The series' epoll_ctl(2) flag, for C libraries whose <sys/epoll.h>
 * predates it.  Bit 26 on both bases (the RFC's bit 27 is
 * EPOLL_URING_WAKE since Linux 6.2); valid only with EPOLLEXCLUSIVE.
 */
#ifndef EPOLLROUNDROBIN
#define EPOLLROUNDROBIN (1U << 26)
#endif

#ifndef __NR_epoll_mod_wait
#error "<asm/unistd.h> has no __NR_epoll_mod_wait: use the patched kernel's headers"
#endif

#ifdef __x86_64__
#define EPOLL_MOD_PACKED __attribute__((packed))
#else
#define EPOLL_MOD_PACKED
#endif

/* Most commands one call takes; more is EINVAL. */
#define EPOLL_MOD_MAX_CMDS	1024

/* One epoll_ctl(2) operation. */
struct epoll_mod_cmd {
	int flags;		/* must be 0 */
	int op;			/* EPOLL_CTL_ADD, EPOLL_CTL_MOD or EPOLL_CTL_DEL */
	int fd;			/* target file descriptor */
	uint32_t events;	/* as epoll_event.events */
	uint64_t data;		/* as epoll_event.data */
	int error;		/* out: 0 or -errno, once the command ran */
} EPOLL_MOD_PACKED;

/* 64-bit on every ABI, like the kernel's struct __kernel_timespec. */
struct epoll_mod_timespec {
	int64_t tv_sec;
	int64_t tv_nsec;
} EPOLL_MOD_PACKED;

/* Wait forever: tv_sec = EPOLL_MOD_WAIT_FOREVER, tv_nsec = 0. */
#define EPOLL_MOD_WAIT_FOREVER	(-1)

/* How to wait after the commands; as epoll_pwait(2), with a finer timeout. */
struct epoll_wait_spec {
	int maxevents;
	struct epoll_event *events;
	int clockid;		/* CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME */
	struct epoll_mod_timespec timeout;	/* relative */
	const void *sigmask;	/* kernel sigset, or NULL */
	size_t sigsetsize;	/* EPOLL_MOD_SIGSETSIZE when sigmask is set */
} EPOLL_MOD_PACKED;

/* The kernel's sigset size (glibc's sigset_t is larger: pass this). */
#define EPOLL_MOD_SIGSETSIZE	(64 / 8)

static inline int epoll_mod_wait(int epfd, int flags, int ncmds,
				 struct epoll_mod_cmd *cmds,
				 struct epoll_wait_spec *spec)
{
	return syscall(__NR_epoll_mod_wait, epfd, flags, ncmds, cmds, spec);
}

#endif /* _EPOLL_MOD_WAIT_H */
