/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by epoll_wake_modes.c and epoll_wake_flags.c.
 *
 * Everything here must work on a Linux v3.19 guest as well as on 6.12, so
 * only old syscalls are used.  All functions are static inline so that a
 * test file not using one of them does not get -Wunused-function warnings.
 */
#ifndef WAKE_COMMON_H
#define WAKE_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Generated per kernel base: EPOLLROUNDROBIN (and EPOLLEXCLUSIVE if needed) */
#include "epoll_uapi.h"

#include "kselftest.h"
#include "thread_util.h"

/* Set to skip the feature probe, e.g. to run on an unpatched kernel. */
#define WK_NOPROBE_ENV	"EPOLL_WAKE_NOPROBE"

static inline long long wk_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Bring "lo" up; the guest init should have done it, but be robust. */
static inline int wk_lo_up(void)
{
	struct ifreq ifr;
	int s, ret = -1;

	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", sizeof("lo"));
	if (!ioctl(s, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ret = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return ret;
}

/*
 * Non-blocking TCP listener on 127.0.0.1, ephemeral port (stored in @addr).
 * Returns the fd, or -errno; -EAFNOSUPPORT means "no IPv4, skip".
 */
static inline int wk_tcp_listener(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd, err, tries;

	for (tries = 0; tries < 2; tries++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0);
		if (fd < 0)
			return -errno;
		memset(addr, 0, sizeof(*addr));
		addr->sin_family = AF_INET;
		addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (!bind(fd, (struct sockaddr *)addr, sizeof(*addr)) &&
		    !listen(fd, 1024) &&
		    !getsockname(fd, (struct sockaddr *)addr, &len))
			return fd;
		err = errno;
		close(fd);
		/* 127.0.0.1 only exists once lo is up. */
		if (err != EADDRNOTAVAIL || wk_lo_up())
			return -err;
	}
	return -EADDRNOTAVAIL;
}

/* Blocking connect to @addr. Returns the fd or -errno. */
static inline int wk_tcp_connect(const struct sockaddr_in *addr)
{
	int fd, err, tries;

	for (tries = 0; tries < 2; tries++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (const struct sockaddr *)addr, sizeof(*addr)))
			return fd;
		err = errno;
		close(fd);
		if (err != ENETUNREACH || wk_lo_up())
			return -err;
	}
	return -ENETUNREACH;
}

/*
 * Skip the whole binary on a kernel without the patch series.  A patched
 * kernel rejects EPOLLROUNDROBIN without EPOLLEXCLUSIVE; an unpatched one
 * silently ignores the unknown bit (v3.19) and accepts the ADD.
 * Messages go to stderr: stdout is not line buffered yet and the harness
 * forks right after.
 */
static inline void wk_probe_or_skip(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLROUNDROBIN };
	int ep, efd, ret, err;

	if (has_arg(argc, argv, "-l") || has_arg(argc, argv, "-h"))
		return;
	if (getenv(WK_NOPROBE_ENV)) {
		fprintf(stderr, "# %s set: feature probe bypassed\n",
			WK_NOPROBE_ENV);
		return;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC);
	if (ep < 0 || efd < 0)
		ksft_exit_fail_msg("probe: epoll_create1/eventfd: %s\n",
				   strerror(errno));
	ret = epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
	err = errno;
	close(efd);
	close(ep);
	if (!ret)
		ksft_exit_skip("EPOLLROUNDROBIN not supported by this kernel\n");
	if (err != EINVAL)
		ksft_exit_fail_msg("probe: unexpected epoll_ctl error: %s\n",
				   strerror(err));
}

#endif /* WAKE_COMMON_H */
