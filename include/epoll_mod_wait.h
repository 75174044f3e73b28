/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * epoll_mod_wait(2): userspace declarations and wrapper (ABI v2).
 *
 * Include this instead of <linux/eventpoll.h>, which clashes with glibc's
 * <sys/epoll.h>.  The syscall number comes from the installed kernel uapi
 * headers (<asm/unistd.h>, through <sys/syscall.h>): install the patched
 * kernel's headers (make headers_install) where the compiler finds them.
 *
 * Both structures have one layout on every ABI (x86_64, i386, x32) and on
 * both bases (v3.19 and 6.12): fixed-size fields, pointers carried in
 * 64-bit fields, 64-bit fields naturally aligned, no packing.  So the
 * kernel needs no compat entry.  Only the syscall numbers differ between
 * the two bases; see man/epoll_mod_wait.2.
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

/* Most commands one call takes; more is EINVAL. */
#define EPOLL_MOD_MAX_CMDS	1024

/* One epoll_ctl(2) operation: 32 bytes on every ABI. */
struct epoll_mod_cmd {
	uint32_t flags;		/* must be 0 */
	int32_t op;		/* EPOLL_CTL_ADD, EPOLL_CTL_MOD or EPOLL_CTL_DEL */
	int32_t fd;		/* target file descriptor */
	uint32_t events;	/* as epoll_event.events */
	uint64_t data __attribute__((aligned(8)));	/* as epoll_event.data */
	int32_t error;		/* out: 0 or -errno, once the command ran */
	uint32_t __reserved;	/* must be 0 */
};

/* 64-bit on every ABI, like the kernel's struct __kernel_timespec. */
struct epoll_mod_timespec {
	int64_t tv_sec;
	int64_t tv_nsec;
};

/* epoll_wait_spec.flags */
#define EPOLL_WAIT_ABSTIME	(1U << 0)	/* timeout: a deadline on clockid */
#define EPOLL_WAIT_FOREVER	(1U << 1)	/* no timeout (timeout must be 0) */

/*
 * How to wait after the commands; as epoll_pwait(2), with a nanosecond
 * timeout.  48 bytes on every ABI; pass sizeof(struct epoll_wait_spec) as
 * the last argument, so a later, larger version can be told apart.
 */
struct epoll_wait_spec {
	uint64_t events __attribute__((aligned(8)));	/* struct epoll_event * */
	int32_t maxevents;
	int32_t clockid;	/* CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME */
	uint32_t flags;		/* EPOLL_WAIT_ABSTIME, EPOLL_WAIT_FOREVER */
	uint32_t sigsetsize;	/* EPOLL_MOD_SIGSETSIZE when sigmask is set */
	uint64_t sigmask __attribute__((aligned(8)));	/* kernel sigset *, or 0 */
	struct epoll_mod_timespec timeout;	/* relative unless ABSTIME */
};

/* The first published size of struct epoll_wait_spec. */
#define EPOLL_WAIT_SPEC_SIZE_VER0	48

/* A pointer, as the 64-bit fields above carry it. */
#define EPOLL_MOD_PTR(p)	((uint64_t)(uintptr_t)(p))

/*
 * The kernel's sigset size, _NSIG / 8 (glibc's sigset_t is larger: pass
 * this): 8 bytes, but 16 on MIPS, whose kernel has 128 signals.
 */
#if defined(__mips__)
#define EPOLL_MOD_SIGSETSIZE	(128 / 8)
#else
#define EPOLL_MOD_SIGSETSIZE	(64 / 8)
#endif

_Static_assert(sizeof(struct epoll_mod_cmd) == 32, "epoll_mod_cmd layout");
_Static_assert(sizeof(struct epoll_wait_spec) == EPOLL_WAIT_SPEC_SIZE_VER0,
	       "epoll_wait_spec layout");

static inline int epoll_mod_wait(int epfd, unsigned int flags, int ncmds,
				 struct epoll_mod_cmd *cmds,
				 struct epoll_wait_spec *spec)
{
	return syscall(__NR_epoll_mod_wait, epfd, flags, ncmds, cmds, spec,
		       spec ? sizeof(*spec) : 0);
}

/* The raw call, for callers that pass another size. */
static inline int epoll_mod_wait_sized(int epfd, unsigned int flags,
				       int ncmds, struct epoll_mod_cmd *cmds,
				       void *spec, size_t size)
{
	return syscall(__NR_epoll_mod_wait, epfd, flags, ncmds, cmds, spec,
		       size);
}

#endif /* _EPOLL_MOD_WAIT_H */
