// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_wake_flags - argument checking of EPOLLEXCLUSIVE and
 * EPOLLROUNDROBIN, and the state epoll is left in afterwards.
 *
 *  - EINVAL for: EPOLL_CTL_MOD carrying EPOLLEXCLUSIVE or EPOLLROUNDROBIN,
 *    EPOLL_CTL_MOD of an item added with EPOLLEXCLUSIVE, EPOLLROUNDROBIN
 *    without EPOLLEXCLUSIVE, an epoll fd as target of an exclusive ADD,
 *    an exclusive ADD with any bit outside IN, OUT, ERR, HUP, WAKEUP, ET
 *    and ROUNDROBIN;
 *  - a failed ADD leaves nothing behind, a failed MOD leaves the old
 *    registration working;
 *  - the allowed combinations succeed;
 *  - neither flag ever shows up in the events epoll_wait() returns;
 *  - POLLFREE unhooks every exclusive entry of a dying signalfd.
 *
 * The binary skips itself (exit 4) on a kernel without EPOLLROUNDROBIN.
 * Set EPOLL_WAKE_NOPROBE=1 in the environment to bypass that probe, e.g.
 * to run the EPOLLEXCLUSIVE-only tests on an unpatched kernel.
 *
 * Diagram legend (style of filesystems/epoll/epoll_wakeup_test.c):
 *   t0    the test thread, (ew) epoll_wait(), (ctl) epoll_ctl()
 *   eN    epoll instances, sN event sources
 *   (lt) level triggered, (et) edge triggered, x EPOLLEXCLUSIVE,
 *   rr EPOLLROUNDROBIN, ! the rejected request
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

/*
 * The harness' TEST_F() wrapper modifies a local between setjmp() and
 * longjmp(), which -Wextra reports as -Wclobbered in every test.
 */
#pragma GCC diagnostic ignored "-Wclobbered"

#include "kselftest_harness.h"
#include "thread_util.h"
#include "wake_common.h"

#define XRR		(EPOLLEXCLUSIVE | EPOLLROUNDROBIN)
#define WAIT_MS		5000	/* bound on every blocking wait */
#define TEST_TIMEOUT_S	120	/* QEMU TCG guests are slow */
#define DATA_OLD	((uint64_t)0x1111)
#define DATA_NEW	((uint64_t)0x2222)

/* epoll_ctl() as 0 or -errno, so that one ASSERT_EQ() shows the errno. */
static int ctl(int ep, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return epoll_ctl(ep, op, fd, &ev) ? -errno : 0;
}

static int ctl_del(int ep, int fd)
{
	return ctl(ep, EPOLL_CTL_DEL, fd, 0, 0);
}

/* A failed ADD of @fd must leave no item behind. */
static void check_nothing_left(struct __test_metadata *_metadata,
			       int ep, int fd)
{
	ASSERT_EQ(-ENOENT, ctl_del(ep, fd))
		TH_LOG("failed EPOLL_CTL_ADD left an item behind");
	/* ... and must not make a valid ADD fail with EEXIST. */
	ASSERT_EQ(0, ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN, 0));
	ASSERT_EQ(0, ctl_del(ep, fd));
}

/*
 * After a failed MOD the item added with data DATA_OLD must still be the
 * one in place: make the pipe readable and check what is reported.
 */
static void check_old_registration(struct __test_metadata *_metadata,
				   int ep, int rd, int wr)
{
	struct epoll_event ev[2];
	char byte;

	ASSERT_EQ(1, write(wr, "x", 1));
	ASSERT_EQ(1, epoll_wait(ep, ev, 2, WAIT_MS))
		TH_LOG("old registration does not report events any more");
	EXPECT_EQ(DATA_OLD, ev[0].data.u64)
		TH_LOG("failed EPOLL_CTL_MOD changed the item's data");
	EXPECT_EQ((uint32_t)EPOLLIN, ev[0].events);
	ASSERT_EQ(1, read(rd, &byte, 1));
}

/*
 * Single EPOLL_CTL checks.  Topology of all of them:
 *
 *          t0
 *           | (ctl)
 *          e0       e1   (e1: target of the epoll-in-epoll checks)
 *           |
 *          s0   (pipe read end)
 */
FIXTURE(ctl) {
	int ep, ep2, rd, wr;
};

FIXTURE_SETUP(ctl)
{
	self->ep2 = self->rd = self->wr = -1;
	self->ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_GE(self->ep, 0);
	self->ep2 = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_GE(self->ep2, 0);
	ASSERT_EQ(0, open_pipe(&self->rd, &self->wr));
}

FIXTURE_TEARDOWN(ctl)
{
	close_fd(&self->ep);
	close_fd(&self->ep2);
	close_fd(&self->rd);
	close_fd(&self->wr);
}

/*
 *          t0
 *           | (ctl MOD in|x !)
 *          e0
 *           | (lt)
 *          s0
 */
TEST_F_TIMEOUT(ctl, mod_exclusive_einval, TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, ctl(self->ep, EPOLL_CTL_ADD, self->rd, EPOLLIN, DATA_OLD));
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_MOD, self->rd,
			       EPOLLIN | EPOLLEXCLUSIVE, DATA_NEW));
	check_old_registration(_metadata, self->ep, self->rd, self->wr);
}

/*
 *          t0
 *           | (ctl MOD in|rr !)
 *          e0
 *           | (lt)
 *          s0
 */
TEST_F_TIMEOUT(ctl, mod_roundrobin_einval, TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, ctl(self->ep, EPOLL_CTL_ADD, self->rd, EPOLLIN, DATA_OLD));
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_MOD, self->rd,
			       EPOLLIN | EPOLLROUNDROBIN, DATA_NEW));
	check_old_registration(_metadata, self->ep, self->rd, self->wr);
}

/*
 *          t0
 *           | (ctl MOD in|x|rr !)
 *          e0
 *           | (lt)
 *          s0
 */
TEST_F_TIMEOUT(ctl, mod_exclusive_roundrobin_einval, TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, ctl(self->ep, EPOLL_CTL_ADD, self->rd, EPOLLIN, DATA_OLD));
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_MOD, self->rd,
			       EPOLLIN | XRR, DATA_NEW));
	check_old_registration(_metadata, self->ep, self->rd, self->wr);
}

/*
 *          t0
 *           | (ctl MOD in !)
 *          e0
 *           | (lt,x)
 *          s0
 *
 * An exclusive item cannot be modified at all, not even to plain EPOLLIN.
 */
TEST_F_TIMEOUT(ctl, mod_exclusive_item_einval, TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, ctl(self->ep, EPOLL_CTL_ADD, self->rd,
			 EPOLLIN | EPOLLEXCLUSIVE, DATA_OLD));
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_MOD, self->rd,
			       EPOLLIN, DATA_NEW));
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_MOD, self->rd,
			       EPOLLIN | EPOLLOUT, DATA_NEW));
	check_old_registration(_metadata, self->ep, self->rd, self->wr);
}

/*
 *          t0
 *           | (ctl MOD in !, MOD in|x|rr !)
 *          e0
 *           | (lt,x,rr)
 *          s0
 */
TEST_F_TIMEOUT(ctl, mod_roundrobin_item_einval, TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, ctl(self->ep, EPOLL_CTL_ADD, self->rd,
			 EPOLLIN | XRR, DATA_OLD));
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_MOD, self->rd,
			       EPOLLIN, DATA_NEW));
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_MOD, self->rd,
			       EPOLLIN | XRR, DATA_NEW));
	check_old_registration(_metadata, self->ep, self->rd, self->wr);
}

/*
 *          t0
 *           | (ctl ADD in|rr !)
 *          e0
 *           :
 *          s0
 */
TEST_F_TIMEOUT(ctl, add_roundrobin_einval, TEST_TIMEOUT_S)
{
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_ADD, self->rd,
			       EPOLLIN | EPOLLROUNDROBIN, DATA_NEW));
	check_nothing_left(_metadata, self->ep, self->rd);
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_ADD, self->rd,
			       EPOLLROUNDROBIN, DATA_NEW));
	check_nothing_left(_metadata, self->ep, self->rd);
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_ADD, self->rd,
			       EPOLLIN | EPOLLET | EPOLLROUNDROBIN, DATA_NEW));
	check_nothing_left(_metadata, self->ep, self->rd);
}

/*
 *          t0
 *           | (ctl ADD e1 in|x !)
 *          e0
 *           :
 *          e1
 */
TEST_F_TIMEOUT(ctl, add_exclusive_epoll_einval, TEST_TIMEOUT_S)
{
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_ADD, self->ep2,
			       EPOLLIN | EPOLLEXCLUSIVE, DATA_NEW));
	check_nothing_left(_metadata, self->ep, self->ep2);
}

/*
 *          t0
 *           | (ctl ADD e1 in|x|rr !)
 *          e0
 *           :
 *          e1
 */
TEST_F_TIMEOUT(ctl, add_roundrobin_epoll_einval, TEST_TIMEOUT_S)
{
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_ADD, self->ep2,
			       EPOLLIN | XRR, DATA_NEW));
	check_nothing_left(_metadata, self->ep, self->ep2);
}

/*
 * Exclusive ADD with one forbidden bit, one visible test per bit:
 *
 *          t0
 *           | (ctl ADD in|x|bit !, ADD in|x|rr|bit !)
 *          e0
 *           :
 *          s0
 */
FIXTURE(bad_bits) {
	int ep, rd, wr;
};

FIXTURE_VARIANT(bad_bits) {
	uint32_t bit;
};

FIXTURE_VARIANT_ADD(bad_bits, pri)	{ .bit = EPOLLPRI, };
FIXTURE_VARIANT_ADD(bad_bits, rdnorm)	{ .bit = EPOLLRDNORM, };
FIXTURE_VARIANT_ADD(bad_bits, rdband)	{ .bit = EPOLLRDBAND, };
FIXTURE_VARIANT_ADD(bad_bits, wrnorm)	{ .bit = EPOLLWRNORM, };
FIXTURE_VARIANT_ADD(bad_bits, wrband)	{ .bit = EPOLLWRBAND, };
FIXTURE_VARIANT_ADD(bad_bits, msg)	{ .bit = EPOLLMSG, };
FIXTURE_VARIANT_ADD(bad_bits, rdhup)	{ .bit = EPOLLRDHUP, };
FIXTURE_VARIANT_ADD(bad_bits, oneshot)	{ .bit = EPOLLONESHOT, };

FIXTURE_SETUP(bad_bits)
{
	self->rd = self->wr = -1;
	self->ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_GE(self->ep, 0);
	ASSERT_EQ(0, open_pipe(&self->rd, &self->wr));
}

FIXTURE_TEARDOWN(bad_bits)
{
	close_fd(&self->ep);
	close_fd(&self->rd);
	close_fd(&self->wr);
}

TEST_F_TIMEOUT(bad_bits, add_exclusive_einval, TEST_TIMEOUT_S)
{
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_ADD, self->rd,
			       EPOLLIN | EPOLLEXCLUSIVE | variant->bit,
			       DATA_NEW));
	check_nothing_left(_metadata, self->ep, self->rd);
}

TEST_F_TIMEOUT(bad_bits, add_roundrobin_einval, TEST_TIMEOUT_S)
{
	EXPECT_EQ(-EINVAL, ctl(self->ep, EPOLL_CTL_ADD, self->rd,
			       EPOLLIN | XRR | variant->bit, DATA_NEW));
	check_nothing_left(_metadata, self->ep, self->rd);
}

/*
 * Allowed combinations must be accepted and work:
 *
 *          t0
 *           | (ctl ADD, ew)
 *          e0
 *           | (events)
 *          s0   (AF_UNIX stream socket, readable and writable)
 *           |
 *          s1   (peer, has written one byte)
 */
FIXTURE(good_bits) {
	int ep, sk[2];
};

FIXTURE_VARIANT(good_bits) {
	uint32_t events;
};

FIXTURE_VARIANT_ADD(good_bits, in_x) {
	.events = EPOLLIN | EPOLLEXCLUSIVE,
};

FIXTURE_VARIANT_ADD(good_bits, out_x) {
	.events = EPOLLOUT | EPOLLEXCLUSIVE,
};

FIXTURE_VARIANT_ADD(good_bits, in_x_rr) {
	.events = EPOLLIN | XRR,
};

FIXTURE_VARIANT_ADD(good_bits, out_et_x_rr) {
	.events = EPOLLOUT | EPOLLET | XRR,
};

FIXTURE_VARIANT_ADD(good_bits, in_out_err_hup_et_x_rr) {
	.events = EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLET | XRR,
};

/* Without CAP_BLOCK_SUSPEND EPOLLWAKEUP is silently dropped: still OK. */
FIXTURE_VARIANT_ADD(good_bits, in_wakeup_x_rr) {
	.events = EPOLLIN | EPOLLWAKEUP | XRR,
};

FIXTURE_SETUP(good_bits)
{
	self->sk[0] = self->sk[1] = -1;
	self->ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_GE(self->ep, 0);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
				SOCK_CLOEXEC, 0, self->sk));
	ASSERT_EQ(1, write(self->sk[1], "x", 1));
}

FIXTURE_TEARDOWN(good_bits)
{
	close_fd(&self->ep);
	close_fd(&self->sk[0]);
	close_fd(&self->sk[1]);
}

TEST_F_TIMEOUT(good_bits, add_ok, TEST_TIMEOUT_S)
{
	uint32_t want = variant->events & (EPOLLIN | EPOLLOUT);
	struct epoll_event ev[2];

	ASSERT_EQ(0, ctl(self->ep, EPOLL_CTL_ADD, self->sk[0],
			 variant->events, DATA_OLD))
		TH_LOG("events=%#x refused", variant->events);
	EXPECT_EQ(-EEXIST, ctl(self->ep, EPOLL_CTL_ADD, self->sk[0],
			       variant->events, DATA_NEW));
	ASSERT_EQ(1, epoll_wait(self->ep, ev, 2, WAIT_MS));
	EXPECT_EQ(DATA_OLD, ev[0].data.u64);
	EXPECT_EQ(want, ev[0].events)
		TH_LOG("events=%#x returned %#x", variant->events,
		       ev[0].events);
	EXPECT_EQ(0, ctl_del(self->ep, self->sk[0]));
	EXPECT_EQ(-ENOENT, ctl_del(self->ep, self->sk[0]));
}

/*
 * Neither flag may leak into the returned events.  The source is put in
 * the wanted state first, then added to two epoll instances:
 *
 *          t0
 *     (ew) /  \ (ew)
 *        e0    e1
 *   (x,lt) \  / (x,rr,lt)     or (x,et) / (x,rr,et)
 *           s0   pipe, eventfd, AF_UNIX or TCP socket, which is
 *                readable (in), writable (out) or hung up (hup)
 */
enum leak_src { LEAK_PIPE, LEAK_EVENTFD, LEAK_UNIX, LEAK_TCP };
enum leak_cond { COND_IN, COND_OUT, COND_HUP };

struct leak_fds {
	int fd;		/* the watched fd */
	int peer;	/* its other end, if any */
	int lsk;	/* tcp: listener */
	struct sockaddr_in addr;
};

FIXTURE(no_leak) {
	struct leak_fds s;
};

FIXTURE_VARIANT(no_leak) {
	enum leak_src src;
	enum leak_cond cond;
};

FIXTURE_VARIANT_ADD(no_leak, pipe_in)	  { LEAK_PIPE, COND_IN };
FIXTURE_VARIANT_ADD(no_leak, pipe_out)	  { LEAK_PIPE, COND_OUT };
FIXTURE_VARIANT_ADD(no_leak, pipe_hup)	  { LEAK_PIPE, COND_HUP };
FIXTURE_VARIANT_ADD(no_leak, eventfd_in)  { LEAK_EVENTFD, COND_IN };
FIXTURE_VARIANT_ADD(no_leak, eventfd_out) { LEAK_EVENTFD, COND_OUT };
FIXTURE_VARIANT_ADD(no_leak, unix_in)	  { LEAK_UNIX, COND_IN };
FIXTURE_VARIANT_ADD(no_leak, unix_out)	  { LEAK_UNIX, COND_OUT };
FIXTURE_VARIANT_ADD(no_leak, unix_hup)	  { LEAK_UNIX, COND_HUP };
FIXTURE_VARIANT_ADD(no_leak, tcp_in)	  { LEAK_TCP, COND_IN };
FIXTURE_VARIANT_ADD(no_leak, tcp_out)	  { LEAK_TCP, COND_OUT };
FIXTURE_VARIANT_ADD(no_leak, tcp_hup)	  { LEAK_TCP, COND_HUP };

static uint32_t cond_bit(enum leak_cond cond)
{
	return cond == COND_IN ? EPOLLIN :
	       cond == COND_OUT ? EPOLLOUT : EPOLLHUP;
}

/* Bounded wait until poll() on @fd reports @bit: TCP is asynchronous. */
static int wait_poll_bit(int fd, short bit)
{
	long long deadline = wk_now_ms() + WAIT_MS;
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

	do {
		if (poll(&pfd, 1, 100) < 0 && errno != EINTR)
			return -errno;
		if (pfd.revents & bit)
			return 0;
	} while (wk_now_ms() < deadline);
	return -ETIMEDOUT;
}

static void setup_tcp(struct __test_metadata *_metadata,
		      struct leak_fds *s, enum leak_cond cond)
{
	int ret;

	ret = wk_tcp_listener(&s->addr);
	if (ret == -EAFNOSUPPORT)
		SKIP(return, "no IPv4 support");
	ASSERT_GE(ret, 0) TH_LOG("listener: %s", strerror(-ret));
	s->lsk = ret;
	ret = wk_tcp_connect(&s->addr);
	ASSERT_GE(ret, 0) TH_LOG("connect: %s", strerror(-ret));
	s->peer = ret;
	if (cond == COND_IN) {
		/* A pending connection makes the listener readable. */
		s->fd = s->lsk;
		s->lsk = -1;
		return;
	}
	s->fd = s->peer;
	ASSERT_EQ(0, wait_poll_bit(s->lsk, POLLIN));
	s->peer = accept4(s->lsk, NULL, NULL, SOCK_CLOEXEC);
	ASSERT_GE(s->peer, 0);
	if (cond == COND_HUP) {
		/* EPOLLHUP needs both directions shut down. */
		ASSERT_EQ(0, shutdown(s->fd, SHUT_WR));
		close_fd(&s->peer);
	}
}

FIXTURE_SETUP(no_leak)
{
	struct leak_fds *s = &self->s;
	uint64_t one = 1;
	int fds[2];

	s->fd = s->peer = s->lsk = -1;
	switch (variant->src) {
	case LEAK_PIPE:
		ASSERT_EQ(0, open_pipe(&fds[0], &fds[1]));
		s->fd = variant->cond == COND_OUT ? fds[1] : fds[0];
		s->peer = variant->cond == COND_OUT ? fds[0] : fds[1];
		break;
	case LEAK_EVENTFD:
		s->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ASSERT_GE(s->fd, 0);
		if (variant->cond == COND_IN)
			ASSERT_EQ((ssize_t)sizeof(one),
				  write(s->fd, &one, sizeof(one)));
		break;
	case LEAK_UNIX:
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
					SOCK_CLOEXEC, 0, fds));
		s->fd = fds[0];
		s->peer = fds[1];
		break;
	case LEAK_TCP:
		setup_tcp(_metadata, s, variant->cond);
		if (_metadata->exit_code)	/* skipped */
			return;
		break;
	}
	if (variant->src == LEAK_PIPE || variant->src == LEAK_UNIX) {
		if (variant->cond == COND_IN)
			ASSERT_EQ(1, write(s->peer, "x", 1));
		if (variant->cond == COND_HUP)
			close_fd(&s->peer);
	}
	ASSERT_EQ(0, wait_poll_bit(s->fd, cond_bit(variant->cond)))
		TH_LOG("source never got into the wanted state");
}

FIXTURE_TEARDOWN(no_leak)
{
	close_fd(&self->s.fd);
	close_fd(&self->s.peer);
	close_fd(&self->s.lsk);
}

/*
 * One epoll_wait() on @ep with @timeout: check the number of events and
 * that every returned event has the wanted bit and nothing it should not.
 */
static int check_events(struct __test_metadata *_metadata, int ep,
			uint32_t want, uint32_t allowed, int timeout)
{
	struct epoll_event ev[2];
	int n, i;

	n = epoll_wait(ep, ev, 2, timeout);
	EXPECT_GE(n, 0);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0U, ev[i].events & XRR)
			TH_LOG("flag leaked into returned events %#x",
			       ev[i].events);
		EXPECT_EQ(0U, ev[i].events & ~allowed)
			TH_LOG("returned events %#x, only %#x allowed",
			       ev[i].events, allowed);
		EXPECT_NE(0U, ev[i].events & want)
			TH_LOG("returned events %#x lack %#x",
			       ev[i].events, want);
	}
	return n;
}

/* Make @fd ready again synchronously; false if the source cannot. */
static bool retrigger(struct __test_metadata *_metadata,
		      struct leak_fds *s, enum leak_src src,
		      enum leak_cond cond)
{
	uint64_t one = 1;

	if (cond != COND_IN)
		return false;
	switch (src) {
	case LEAK_PIPE:
	case LEAK_UNIX:
		EXPECT_EQ(1, write(s->peer, "y", 1));
		return true;
	case LEAK_EVENTFD:
		EXPECT_EQ((ssize_t)sizeof(one),
			  write(s->fd, &one, sizeof(one)));
		return true;
	case LEAK_TCP:
	default:
		/*
		 * A new connection arrives asynchronously, and an exclusive
		 * wakeup could then legitimately reach only one of e0/e1.
		 */
		return false;
	}
}

static void run_no_leak(struct __test_metadata *_metadata,
			struct leak_fds *s, enum leak_src src,
			enum leak_cond cond, bool et)
{
	uint32_t in_out = cond == COND_OUT ? EPOLLOUT : EPOLLIN;
	uint32_t want = cond_bit(cond);
	uint32_t allowed = in_out | EPOLLERR | EPOLLHUP;
	uint32_t flags[2] = { EPOLLEXCLUSIVE, XRR };
	bool async = src == LEAK_TCP;
	int ep[2] = { -1, -1 };
	int i, n;

	for (i = 0; i < 2; i++) {
		ep[i] = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_GE(ep[i], 0);
		ASSERT_EQ(0, ctl(ep[i], EPOLL_CTL_ADD, s->fd,
				 in_out | flags[i] | (et ? EPOLLET : 0), i))
			TH_LOG("ADD with %#x", flags[i]);
	}
	for (i = 0; i < 2; i++) {
		/* Ready since the ADD: reported without any wakeup. */
		EXPECT_EQ(1, check_events(_metadata, ep[i], want, allowed,
					  WAIT_MS));
		n = check_events(_metadata, ep[i], want, allowed, 0);
		if (!et) {
			EXPECT_EQ(1, n) TH_LOG("level triggered: still ready");
		} else if (!async) {
			/* TCP may legitimately deliver a late second edge. */
			EXPECT_EQ(0, n) TH_LOG("edge triggered: no new edge");
		}
	}
	/* Now through the wakeup callback path as well. */
	if (retrigger(_metadata, s, src, cond)) {
		for (i = 0; i < 2; i++) {
			EXPECT_EQ(1, check_events(_metadata, ep[i], want,
						  allowed, WAIT_MS));
		}
	}
	close(ep[0]);
	close(ep[1]);
}

TEST_F_TIMEOUT(no_leak, level, TEST_TIMEOUT_S)
{
	run_no_leak(_metadata, &self->s, variant->src, variant->cond,
		    false);
}

TEST_F_TIMEOUT(no_leak, edge, TEST_TIMEOUT_S)
{
	run_no_leak(_metadata, &self->s, variant->src, variant->cond,
		    true);
}

/*
 * Only epoll's own exclusive entries join a round-robin rotation.  A
 * thread blocked in accept() waits with an exclusive entry of another kind:
 * its wake function (autoremove_wake_function()) unlinks it.  It must keep
 * its place and its kind when a round-robin item is added to the listener
 * while it sleeps (the walk of the queued entries that makes epoll's plain
 * exclusive peers rotate), and when it goes back to sleep behind that item.
 * Marked round-robin, it would be "rotated" by the wakeup that unlinks it:
 * the kernel warns (the guest's console check fails the run on that too),
 * and here TAINT_WARN appears.  Nothing waits on e0, so each connection
 * goes to t1 in both rounds.
 *
 *        t1 (accept, blocking)      t0
 *           \                        | (ctl ADD x rr, then connect)
 *            \      e0 (x rr, no waiter)
 *             \    /
 *              lsk   (TCP listener on 127.0.0.1)
 */
#define TAINT_WARN_BIT	9	/* TAINT_WARN: a WARN() fired since boot */

/* The kernel's taint mask, or -1 if it cannot be read. */
static long kernel_taint(void)
{
	FILE *f = fopen("/proc/sys/kernel/tainted", "re");
	long taint = -1;

	if (f) {
		if (fscanf(f, "%ld", &taint) != 1)
			taint = -1;
		fclose(f);
	}
	return taint;
}

struct acceptor {
	int lsk;
	int done;	/* eventfd: 1 per accept() that returned */
	int fd;		/* what the last accept() returned, or -errno */
	pid_t tid;
};

/* Helper thread: one blocking accept() per round. */
static void *acceptor_fn(void *arg)
{
	struct acceptor *a = arg;
	uint64_t one = 1;
	int round;

	__atomic_store_n(&a->tid, thread_tid(), __ATOMIC_RELEASE);
	for (round = 0; round < 2; round++) {
		a->fd = accept4(a->lsk, NULL, NULL, SOCK_CLOEXEC);
		if (a->fd < 0)
			a->fd = -errno;
		if (write(a->done, &one, sizeof(one)) != sizeof(one) ||
		    a->fd < 0)
			break;
	}
	return NULL;
}

/* Wait until the acceptor sleeps in accept(): 0, or -ETIMEDOUT. */
static int acceptor_asleep(struct acceptor *a)
{
	long long deadline = wk_now_ms() + WAIT_MS;

	while (wk_now_ms() < deadline) {
		if (__atomic_load_n(&a->tid, __ATOMIC_ACQUIRE) &&
		    thread_state(a->tid) == 'S')
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

/* Connect to the listener and wait for the acceptor to take it. */
static void accept_round(struct __test_metadata *_metadata,
			 struct acceptor *a, const struct sockaddr_in *addr,
			 int round)
{
	struct pollfd pfd = { .fd = a->done, .events = POLLIN };
	uint64_t n;
	int c;

	ASSERT_EQ(0, acceptor_asleep(a))
		TH_LOG("round %d: t1 never slept in accept()", round);
	c = wk_tcp_connect(addr);
	ASSERT_GE(c, 0) TH_LOG("connect: %s", strerror(-c));
	ASSERT_EQ(1, poll(&pfd, 1, WAIT_MS))
		TH_LOG("round %d: the blocked accept() was not woken", round);
	ASSERT_EQ((ssize_t)sizeof(n), read(a->done, &n, sizeof(n)));
	close(c);
	ASSERT_GE(a->fd, 0)
		TH_LOG("round %d: accept(): %s", round, strerror(-a->fd));
	close(a->fd);
}

TEST(accept_waiter_keeps_its_kind)
{
	struct acceptor a = { .lsk = -1, .done = -1 };
	struct sockaddr_in addr;
	pthread_t thr;
	long taint;
	int ep, ret;

	taint = kernel_taint();
	ASSERT_GE(taint, 0) TH_LOG("cannot read /proc/sys/kernel/tainted");
	if (taint & (1L << TAINT_WARN_BIT))
		SKIP(return, "the kernel has warned before: TAINT_WARN cannot tell");
	ret = wk_tcp_listener(&addr);
	if (ret == -EAFNOSUPPORT)
		SKIP(return, "no IPv4 support");
	ASSERT_GE(ret, 0) TH_LOG("listener: %s", strerror(-ret));
	a.lsk = ret;
	ASSERT_EQ(0, fcntl(a.lsk, F_SETFL, 0));		/* blocking accept() */
	a.done = eventfd(0, EFD_CLOEXEC);
	ASSERT_GE(a.done, 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_GE(ep, 0);
	ASSERT_EQ(0, pthread_create(&thr, NULL, acceptor_fn, &a));

	/* Round 1: t1 is queued on lsk before the round-robin item. */
	ASSERT_EQ(0, acceptor_asleep(&a));
	ASSERT_EQ(0, ctl(ep, EPOLL_CTL_ADD, a.lsk, EPOLLIN | XRR, 0));
	accept_round(_metadata, &a, &addr, 1);
	/* Round 2: t1 goes back to sleep behind it. */
	accept_round(_metadata, &a, &addr, 2);

	ASSERT_EQ(0, pthread_join(thr, NULL));
	EXPECT_EQ(0, kernel_taint() & (1L << TAINT_WARN_BIT))
		TH_LOG("the kernel warned: a blocked accept() was made round-robin");
	close(ep);
	close(a.done);
	close(a.lsk);
}

/*
 * POLLFREE: a signalfd's wait queue lives in the sighand_struct of the
 * task that polled it.  When that task's sighand is freed, signalfd sends
 * POLLFREE and every waiter must unhook itself; an exclusive entry that
 * stopped the walk early would leave the next one pointing to freed
 * memory.
 *
 *   parent                    child (CLONE_FILES, own sighand)
 *     e0    e1                  |
 *   (x)  \  / (x or x,rr)       | signalfd s0, ADD to e0 and e1, _exit
 *         s0  <-----------------'
 *
 * After the child is reaped (its sighand is freed then) the parent uses
 * and closes e0, e1 and s0.  A use-after-free here would rarely crash the
 * test itself: the real detector is the guest console staying clean
 * (KASAN, list debugging, oops), which the host checks.
 */
struct pollfree_shared {
	int ep[2];
	uint32_t flags[2];
	int ep2;		/* race test: a third instance, or -1 */
	int sfd;
	int err;
	int step;
	int added;		/* the child's ADDs are done */
};

FIXTURE(pollfree) {
	struct pollfree_shared *sh;
	void *stack;
};

FIXTURE_VARIANT(pollfree) {
	uint32_t flags[2];
};

FIXTURE_VARIANT_ADD(pollfree, exclusive) {
	.flags = { EPOLLEXCLUSIVE, EPOLLEXCLUSIVE },
};

FIXTURE_VARIANT_ADD(pollfree, roundrobin) {
	.flags = { XRR, XRR },
};

FIXTURE_VARIANT_ADD(pollfree, mixed) {
	.flags = { EPOLLEXCLUSIVE, XRR },
};

#define POLLFREE_STACK	(64 * 1024)

FIXTURE_SETUP(pollfree)
{
	int i;

	/* Shared: the child has its own copy of everything else. */
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->sh != MAP_FAILED);
	self->stack = mmap(NULL, POLLFREE_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	ASSERT_TRUE(self->stack != MAP_FAILED);
	self->sh->sfd = -1;
	self->sh->ep2 = -1;
	for (i = 0; i < 2; i++) {
		self->sh->flags[i] = variant->flags[i];
		self->sh->ep[i] = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_GE(self->sh->ep[i], 0);
	}
}

FIXTURE_TEARDOWN(pollfree)
{
	munmap(self->stack, POLLFREE_STACK);
	munmap(self->sh, sizeof(*self->sh));
}

/* Runs in the clone()d child: no stdio, no harness macros. */
static int pollfree_child(void *arg)
{
	struct pollfree_shared *sh = arg;
	sigset_t mask;
	int i;

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	/* The signalfd's wait queue is in this task's own sighand. */
	sh->sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sh->sfd < 0) {
		sh->err = errno;
		sh->step = 1;
		return 1;
	}
	for (i = 0; i < 2; i++) {
		if (ctl(sh->ep[i], EPOLL_CTL_ADD, sh->sfd,
			EPOLLIN | sh->flags[i], i)) {
			sh->err = errno;
			sh->step = 2 + i;
			return 1;
		}
	}
	if (sh->ep2 >= 0 &&
	    ctl(sh->ep2, EPOLL_CTL_ADD, sh->sfd, EPOLLIN | XRR, 2)) {
		sh->err = errno;
		sh->step = 4;
		return 1;
	}
	__atomic_store_n(&sh->added, 1, __ATOMIC_SEQ_CST);
	return 0;
}

TEST_F_TIMEOUT(pollfree, signalfd_owner_exit, TEST_TIMEOUT_S)
{
	struct pollfree_shared *sh = self->sh;
	struct epoll_event ev;
	long long deadline;
	int status = 0, i, ep, efd;
	pid_t pid, ret;

	/* CLONE_FILES: the child's signalfd lands in our fd table too. */
	pid = clone(pollfree_child, (char *)self->stack + POLLFREE_STACK,
		    CLONE_FILES | SIGCHLD, sh);
	ASSERT_GT(pid, 0) TH_LOG("clone: %s", strerror(errno));

	/* Reaping frees the child's sighand: POLLFREE happens now. */
	deadline = wk_now_ms() + WAIT_MS;
	while ((ret = waitpid(pid, &status, WNOHANG)) == 0 &&
	       wk_now_ms() < deadline)
		usleep(1000);
	if (ret == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	ASSERT_EQ(pid, ret) TH_LOG("child did not exit");
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("child failed at step %d: %s", sh->step,
		       strerror(sh->err));
	ASSERT_GE(sh->sfd, 0);

	for (i = 0; i < 2; i++) {
		EXPECT_GE(epoll_wait(sh->ep[i], &ev, 1, 0), 0)
			TH_LOG("epoll_wait(e%d): %s", i, strerror(errno));
	}
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, close(sh->ep[i]));
		sh->ep[i] = -1;
	}
	EXPECT_EQ(0, close(sh->sfd));

	/* Still alive and epoll still usable. */
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_GE(ep, 0);
	efd = eventfd(1, EFD_CLOEXEC);
	ASSERT_GE(efd, 0);
	EXPECT_EQ(0, ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLEXCLUSIVE, 7));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, WAIT_MS));
	close(efd);
	close(ep);
}

/*
 * POLLFREE against a racing close, under blocked exclusive waiters:
 * the child hooks e0, e1 and e2 on its own signalfd's wait queue and
 * exits; while the parent reaps it (which sends POLLFREE and frees the
 * sighand), a second parent thread closes e0 and e1, whose ep_free()
 * unhooks the same entries, and t0 sleeps in epoll_wait() on e2.  This is
 * the window that mainline commit 138e4ad67afd closed (ep_poll_callback()
 * used the epitem after letting go of ->whead).  Repeated, since the
 * window is small; the guest console is the detector (KASAN on the 6.12
 * debug kernel, DEBUG_PAGEALLOC and SLUB poisoning on v3.19's).
 *
 *   parent: t0 (ew on e2)   closer (close e0, e1)   main (waitpid)
 *            e2               e0    e1
 *     (x,rr)  \        (x)     \    / (x or x,rr)
 *              `------------ s0 <--------- child: signalfd, ADD, _exit
 */
#define POLLFREE_ROUNDS	100

struct pollfree_race {
	int ep;			/* e2: stays open, t0 waits on it */
	int stop;
	int wakeups;
};

static void *pollfree_waiter(void *arg)
{
	struct pollfree_race *r = arg;
	struct epoll_event ev;

	while (!__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST))
		if (epoll_wait(r->ep, &ev, 1, 20) > 0)
			__atomic_add_fetch(&r->wakeups, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Closes e0 and e1 once told to, racing the reap of the child. */
static void *pollfree_closer(void *arg)
{
	struct pollfree_shared *sh = arg;

	/* Yield: under TCG the child needs one of the two vCPUs. */
	while (__atomic_load_n(&sh->added, __ATOMIC_SEQ_CST) != 2)
		sched_yield();
	close(sh->ep[0]);
	close(sh->ep[1]);
	return NULL;
}

/* One round; returns 0 or the failing step (the child's in sh->step). */
static int pollfree_round(struct pollfree_shared *sh, void *stack,
			  uint32_t flags)
{
	long long deadline = wk_now_ms() + WAIT_MS;
	pthread_t closer;
	int status, i;
	pid_t pid;

	for (i = 0; i < 2; i++) {
		sh->ep[i] = epoll_create1(EPOLL_CLOEXEC);
		if (sh->ep[i] < 0)
			return 10;
	}
	sh->flags[0] = EPOLLEXCLUSIVE;
	sh->flags[1] = flags;
	sh->sfd = -1;
	sh->step = 0;
	sh->added = 0;
	if (pthread_create(&closer, NULL, pollfree_closer, sh))
		return 11;
	pid = clone(pollfree_child, (char *)stack + POLLFREE_STACK,
		    CLONE_FILES | SIGCHLD, sh);
	if (pid < 0) {
		__atomic_store_n(&sh->added, 2, __ATOMIC_SEQ_CST);
		pthread_join(closer, NULL);
		return 12;
	}
	while (!__atomic_load_n(&sh->added, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&sh->step, __ATOMIC_SEQ_CST) &&
	       wk_now_ms() < deadline)
		sched_yield();
	/* Reap (POLLFREE, sighand freed) while the closer runs ep_free(). */
	__atomic_store_n(&sh->added, 2, __ATOMIC_SEQ_CST);
	if (waitpid(pid, &status, 0) != pid)
		return 13;
	pthread_join(closer, NULL);
	if (sh->sfd >= 0)
		close(sh->sfd);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return 14;
	return 0;
}

TEST_F_TIMEOUT(pollfree, race_close_under_waiters, TEST_TIMEOUT_S)
{
	struct pollfree_race r = { .ep = epoll_create1(EPOLL_CLOEXEC) };
	struct epoll_event ev;
	pthread_t waiter;
	int round, ret = 0, efd;

	ASSERT_GE(r.ep, 0);
	/* The fixture's own e0 and e1 are not used here. */
	close(self->sh->ep[0]);
	close(self->sh->ep[1]);
	self->sh->ep2 = r.ep;
	ASSERT_EQ(0, pthread_create(&waiter, NULL, pollfree_waiter, &r));
	for (round = 0; round < POLLFREE_ROUNDS && !ret; round++)
		ret = pollfree_round(self->sh, self->stack, variant->flags[1]);
	__atomic_store_n(&r.stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(waiter, NULL);
	EXPECT_EQ(0, ret)
		TH_LOG("round %d failed at step %d: %s (child step %d)",
		       round - 1, ret, strerror(self->sh->err),
		       self->sh->step);
	ksft_print_msg("pollfree: %d rounds, e2 woken %d times\n",
		       round, r.wakeups);

	/* e2 still works after every POLLFREE it went through. */
	efd = eventfd(1, EFD_CLOEXEC);
	ASSERT_GE(efd, 0);
	EXPECT_EQ(0, ctl(r.ep, EPOLL_CTL_ADD, efd, EPOLLIN | XRR, 7));
	EXPECT_EQ(1, epoll_wait(r.ep, &ev, 1, WAIT_MS));
	EXPECT_EQ(7ULL, ev.data.u64);
	close(efd);
	close(r.ep);
}

int main(int argc, char **argv)
{
	wk_probe_or_skip(argc, argv);
	return test_harness_run(argc, argv);
}
