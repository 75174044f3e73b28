// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_wake_modes - who is woken when one event source is watched by
 * several epoll instances, each owned by its own waiter thread.
 *
 *   default          every epoll instance is woken (thundering herd)
 *   EPOLLEXCLUSIVE   one epoll instance with a sleeping waiter per event
 *   EPOLLROUNDROBIN  (with EPOLLEXCLUSIVE) the woken entry moves to the
 *                    tail of the source's wait queue, so successive events
 *                    go to successive waiters
 *
 * Determinism: a waiter sets ->armed right before epoll_wait() and clears
 * it right after.  It is asleep in epoll_wait() iff armed == 1 and its
 * /proc/self/task/<tid>/stat state is 'S'.  The writer (the test's main
 * thread) only fires an event when every waiter is asleep.  try_to_wake_up()
 * marks a woken task runnable synchronously inside the waker, so once the
 * expected reports have arrived and everybody is asleep again, every wakeup
 * caused by that event has been counted.  No fixed sleeps are needed.
 *
 * Two kinds of tests, for each source: a pipe's read end, an eventfd and
 * a TCP listener (readers: EPOLLIN interest, keyed EPOLLIN wakeups); a
 * pipe's write end and an eventfd whose counter is full (writers: EPOLLOUT
 * interest, keyed EPOLLOUT wakeups when a read makes room); a timerfd
 * (woken without a key on v3.19, where timerfd calls wake_up_locked(),
 * with EPOLLIN on 6.12) and an inotify instance (always woken without a
 * key, by wake_up()): every kind of wakeup an epoll item gets:
 *
 *   wake_*     edge triggered, waiters never consume: they count the
 *              wakeup and go back to epoll_wait(); the writer drains the
 *              source itself.  Level triggered consumption would hide
 *              extra wakeups: a woken waiter that finds the data gone
 *              goes back to sleep inside the kernel without returning.
 *   consume_*  level triggered, waiters consume with non-blocking
 *              read()/accept4(); EAGAIN counts as a wasted wakeup.
 *
 * Every test prints one machine readable line:
 *   # spread: test=<wake|consume> source=<pipe|eventfd|tcp>
 *     mode=<all|exclusive|roundrobin|mixed> waiters=N events=K wakeups=W
 *     consumed=C wasted=E min=a max=b jain=0.xxx
 * (on one line).  min, max and jain (Jain's fairness index,
 * (sum x)^2 / (N * sum x^2)) are over the per-waiter wakeup counts for
 * wake_* and over the per-waiter consumed counts for consume_*.  For wake_*
 * nothing is consumed by the waiters, so consumed=0 and wasted is the
 * number of wakeups beyond one per event (W - K).
 *
 * The binary skips itself (exit 4) on a kernel without EPOLLROUNDROBIN.
 * Set EPOLL_WAKE_NOPROBE=1 in the environment to bypass that probe, e.g.
 * to check the default and EPOLLEXCLUSIVE tests on an unpatched kernel
 * (the round-robin tests are then expected to fail).
 *
 * Diagram legend (style of filesystems/epoll/epoll_wakeup_test.c):
 *   tN    waiter thread, blocked in epoll_wait() (ew) on its own eN
 *   eN    epoll instance owned by tN
 *   s0    shared source: pipe read end, eventfd or TCP listener
 *   w     writer: fires one event at a time, only when all tN sleep
 *   (lt) level triggered, (et) edge triggered, x EPOLLEXCLUSIVE,
 *   rr EPOLLROUNDROBIN
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <signal.h>

/*
 * The harness' TEST_F() wrapper modifies a local between setjmp() and
 * longjmp(), which -Wextra reports as -Wclobbered in every test.
 */
#pragma GCC diagnostic ignored "-Wclobbered"

#include "kselftest_harness.h"
#include "wake_common.h"

#define NR_WAITERS		4
#define NR_WAKE_EVENTS		100
#define NR_CONSUME_EVENTS	200
#define WAIT_MS			10000	/* bound on each wait of the writer */
#define POLL_US			200	/* writer's polling interval */
#define TEST_TIMEOUT_S		300	/* QEMU TCG guests are slow */
#define NR_ORDER		16	/* first winners printed */

#define TOKEN_SRC	1
#define TOKEN_STOP	2

enum src_type { SRC_PIPE, SRC_EVENTFD, SRC_TCP, SRC_PIPE_OUT, SRC_EVENTFD_OUT,
		SRC_TIMERFD, SRC_INOTIFY };

/* A full eventfd: no write of 1 or more fits (the counter's maximum). */
#define EVENTFD_FULL	0xfffffffffffffffeULL
enum wake_mode { MODE_ALL, MODE_EXCLUSIVE, MODE_ROUNDROBIN, MODE_MIXED,
		 MODE_MIXED_RR };

static const char * const mode_name[] = {
	[MODE_ALL]		= "all",
	[MODE_EXCLUSIVE]	= "exclusive",
	[MODE_ROUNDROBIN]	= "roundrobin",
	[MODE_MIXED]		= "mixed",
	[MODE_MIXED_RR]		= "mixed_roundrobin",
};

struct wake_ctx;

struct waiter {
	struct wake_ctx *ctx;
	pthread_t thread;
	int epfd;
	bool exclusive;
	pid_t tid;		/* set by the thread itself */
	int armed;		/* 1 from right before epoll_wait() to return */
	long wakeups;		/* epoll_wait() returns reporting the source */
	long consumed;		/* units taken from the source */
	long wasted;		/* wakeups that found nothing to consume */
};

struct wake_ctx {
	enum src_type type;
	const char *src_name;
	int src;		/* watched: pipe read end, eventfd, listener */
	int src_wr;		/* pipe write end (pipe_out: the read end) */
	uint32_t interest;	/* EPOLLIN, or EPOLLOUT for the writers' sources */
	size_t chunk;		/* pipe_out: one pipe buffer's worth, a page */
	char dir[64];		/* inotify: the watched directory */
	int client;		/* tcp: client socket of the current event */
	struct sockaddr_in addr;
	int stopfd;		/* eventfd in every epoll set: stop request */
	bool consume;		/* level triggered and waiters consume */
	int nr_threads;		/* threads successfully created */
	long started;		/* threads that published their tid */
	long reports;		/* sum of all wakeups */
	long consumed;		/* sum of all consumed units */
	int err;		/* first errno hit by a waiter */
	struct attacker *atk;	/* hijack tests: shared with its process */
	struct waiter w[NR_WAITERS];
};

/*
 * Hijack tests: a plain EPOLLEXCLUSIVE | EPOLLET waiter in another process
 * that never consumes and goes straight back to epoll_wait().  Lives in a
 * MAP_SHARED page so that the test can see its state.
 */
struct attacker {
	pid_t pid;
	int armed;		/* as for a waiter */
	int added;		/* its EPOLL_CTL_ADD is done */
	int err;		/* errno of its first failure */
	long wakeups;
};

static void waiter_error(struct wake_ctx *c, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(&c->err, &zero, err, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/*
 * Take one unit from the source without blocking.
 * Returns the amount taken (> 0), 0 if there was nothing (EAGAIN), -errno.
 */
static long consume_one(struct wake_ctx *c)
{
	static const char page[65536];	/* what a writer writes */
	uint64_t val, full = EVENTFD_FULL;
	ssize_t n = -1;
	char byte;
	int fd;

	switch (c->type) {
	case SRC_PIPE_OUT:
		/* a writer takes the room a read made: one page */
		n = write(c->src, page, c->chunk);
		if (n == (ssize_t)c->chunk)
			return 1;
		break;
	case SRC_EVENTFD_OUT:
		n = write(c->src, &full, sizeof(full));
		if (n == sizeof(full))
			return 1;
		break;
	case SRC_TIMERFD:
		n = read(c->src, &val, sizeof(val));
		if (n == sizeof(val))
			return (long)val;
		break;
	case SRC_INOTIFY: {
		/* one event per fire: the name is unread when the next comes */
		char buf[sizeof(struct inotify_event) + NAME_MAX + 1];

		n = read(c->src, buf, sizeof(buf));
		if (n > 0)
			return 1;
		break;
	}
	case SRC_PIPE:
		n = read(c->src, &byte, 1);
		if (n == 1)
			return 1;
		break;
	case SRC_EVENTFD:
		n = read(c->src, &val, sizeof(val));
		if (n == sizeof(val))
			return (long)val;
		break;
	case SRC_TCP:
		fd = accept4(c->src, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			return 1;
		}
		break;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return n < 0 ? -errno : -EIO;
}

static void waiter_got_source(struct waiter *w)
{
	struct wake_ctx *c = w->ctx;
	long got;

	if (c->consume) {
		got = consume_one(c);
		if (got < 0) {
			waiter_error(c, (int)-got);
			return;
		}
		if (got) {
			__atomic_add_fetch(&w->consumed, got, __ATOMIC_SEQ_CST);
			__atomic_add_fetch(&c->consumed, got, __ATOMIC_SEQ_CST);
		} else {
			__atomic_add_fetch(&w->wasted, 1, __ATOMIC_SEQ_CST);
		}
	}
	__atomic_add_fetch(&w->wakeups, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->reports, 1, __ATOMIC_SEQ_CST);
}

/*
 * No ASSERT_*() in here: the harness longjmp()s on failure, which must
 * only happen in the test's main thread.  Errors go to ctx->err instead.
 */
static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	struct wake_ctx *c = w->ctx;
	struct epoll_event evs[2];
	bool stop = false;
	int i, n;

	__atomic_store_n(&w->tid, thread_tid(), __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->started, 1, __ATOMIC_SEQ_CST);

	while (!stop && !__atomic_load_n(&c->err, __ATOMIC_SEQ_CST)) {
		/*
		 * No timeout: an expiring timeout would take us off the
		 * epoll wait queue and let an exclusive wakeup skip us.
		 * The stop eventfd and the harness timeout bound this.
		 */
		__atomic_store_n(&w->armed, 1, __ATOMIC_SEQ_CST);
		n = epoll_wait(w->epfd, evs, 2, -1);
		__atomic_store_n(&w->armed, 0, __ATOMIC_SEQ_CST);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			waiter_error(c, errno);
			break;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.u64 == TOKEN_STOP)
				stop = true;
			else
				waiter_got_source(w);
		}
	}
	return NULL;
}

static uint32_t mode_flags(enum wake_mode mode, int idx)
{
	switch (mode) {
	case MODE_EXCLUSIVE:
		return EPOLLEXCLUSIVE;
	case MODE_ROUNDROBIN:
		return EPOLLEXCLUSIVE | EPOLLROUNDROBIN;
	case MODE_MIXED:
		/* Interleave: plain entries go to the queue head anyway. */
		return (idx & 1) ? EPOLLEXCLUSIVE : 0;
	case MODE_MIXED_RR:
		/* Round-robin entries that are never first in the queue. */
		return (idx & 1) ? EPOLLEXCLUSIVE | EPOLLROUNDROBIN : 0;
	case MODE_ALL:
	default:
		return 0;
	}
}

static bool attacker_asleep(struct attacker *a)
{
	return __atomic_load_n(&a->armed, __ATOMIC_SEQ_CST) &&
	       process_state(a->pid) == 'S';
}

static bool all_asleep(struct wake_ctx *c)
{
	struct waiter *w;
	int i;

	if (c->atk && !attacker_asleep(c->atk))
		return false;
	for (i = 0; i < NR_WAITERS; i++) {
		w = &c->w[i];
		if (!__atomic_load_n(&w->armed, __ATOMIC_SEQ_CST))
			return false;
		if (thread_state(w->tid) != 'S')
			return false;
	}
	return true;
}

static void dump_waiters(struct wake_ctx *c)
{
	struct waiter *w;
	int i;

	for (i = 0; i < NR_WAITERS; i++) {
		w = &c->w[i];
		ksft_print_msg("waiter %d: tid=%d armed=%d state=%c wakeups=%ld consumed=%ld wasted=%ld\n",
			       i, (int)w->tid,
			       __atomic_load_n(&w->armed, __ATOMIC_SEQ_CST),
			       thread_state(w->tid) ?: '?',
			       __atomic_load_n(&w->wakeups, __ATOMIC_SEQ_CST),
			       __atomic_load_n(&w->consumed, __ATOMIC_SEQ_CST),
			       __atomic_load_n(&w->wasted, __ATOMIC_SEQ_CST));
	}
}

/* 0 once every waiter sleeps in epoll_wait(), -errno otherwise. */
static int wait_all_asleep(struct wake_ctx *c)
{
	long long deadline = wk_now_ms() + WAIT_MS;

	for (;;) {
		if (__atomic_load_n(&c->err, __ATOMIC_SEQ_CST))
			return -c->err;
		if (c->atk && __atomic_load_n(&c->atk->err, __ATOMIC_SEQ_CST))
			return -c->atk->err;
		if (all_asleep(c))
			return 0;
		if (wk_now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(POLL_US);
	}
}

/* 0 once *ctr >= target, -errno otherwise. */
static int wait_count(struct wake_ctx *c, long *ctr, long target)
{
	long long deadline = wk_now_ms() + WAIT_MS;

	for (;;) {
		if (__atomic_load_n(&c->err, __ATOMIC_SEQ_CST))
			return -c->err;
		if (__atomic_load_n(ctr, __ATOMIC_SEQ_CST) >= target)
			return 0;
		if (wk_now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(POLL_US);
	}
}

static void expect_all_asleep(struct __test_metadata *_metadata,
			      struct wake_ctx *c, int ev)
{
	int ret = wait_all_asleep(c);

	if (ret)
		dump_waiters(c);
	ASSERT_EQ(0, ret)
		TH_LOG("event %d: waiters not all asleep in epoll_wait() within %d ms: %s",
		       ev, WAIT_MS, strerror(-ret));
}

static void start_waiters(struct __test_metadata *_metadata,
			  struct wake_ctx *c, enum wake_mode mode,
			  bool consume)
{
	struct epoll_event ev;
	struct waiter *w;
	int i, ret;

	c->consume = consume;
	/*
	 * Register from this thread, in index order: the order of the
	 * entries in the source's wait queue is then known (w0 first).
	 */
	for (i = 0; i < NR_WAITERS; i++) {
		w = &c->w[i];
		w->ctx = c;
		w->exclusive = mode_flags(mode, i) & EPOLLEXCLUSIVE;
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		ASSERT_GE(w->epfd, 0);

		ev.events = EPOLLIN;
		ev.data.u64 = TOKEN_STOP;
		ASSERT_EQ(0, epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->stopfd, &ev));

		ev.events = c->interest | (consume ? 0 : EPOLLET) |
			    mode_flags(mode, i);
		ev.data.u64 = TOKEN_SRC;
		ret = epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->src, &ev);
		ASSERT_EQ(0, ret)
			TH_LOG("waiter %d: EPOLL_CTL_ADD events=%#x: %s",
			       i, ev.events, strerror(errno));
	}
	for (i = 0; i < NR_WAITERS; i++) {
		ASSERT_EQ(0, pthread_create(&c->w[i].thread, NULL, waiter_fn,
					    &c->w[i]));
		c->nr_threads++;
	}
	/*
	 * Start barrier: all tids must be known before the first asleep
	 * check.  Threads do not block on it, so a failed pthread_create()
	 * cannot leave anybody stuck.
	 */
	ret = wait_count(c, &c->started, NR_WAITERS);
	ASSERT_EQ(0, ret)
		TH_LOG("waiter threads did not start: %s", strerror(-ret));
}

static void stop_waiters(struct wake_ctx *c)
{
	uint64_t one = 1;
	int i;

	if (!c->nr_threads)
		return;
	/* The stop eventfd is level triggered and in every epoll set. */
	if (write(c->stopfd, &one, sizeof(one)) != sizeof(one))
		ksft_print_msg("stop eventfd write: %s\n", strerror(errno));
	for (i = 0; i < c->nr_threads; i++)
		pthread_join(c->w[i].thread, NULL);
	c->nr_threads = 0;
}

/* Fire event number @ev.  Only called with every waiter asleep. */
static void fire(struct __test_metadata *_metadata, struct wake_ctx *c,
		 int ev)
{
	uint64_t one = 1;
	int fd;

	struct itimerspec its = { .it_value.tv_nsec = 1000 };
	char page[65536];

	switch (c->type) {
	case SRC_PIPE:
		ASSERT_EQ(1, write(c->src_wr, "x", 1));
		break;
	case SRC_PIPE_OUT:
		/* a whole buffer, so that the full pipe has room again */
		ASSERT_EQ((ssize_t)c->chunk, read(c->src_wr, page, c->chunk));
		break;
	case SRC_EVENTFD_OUT:
		ASSERT_EQ((ssize_t)sizeof(one), read(c->src, &one, sizeof(one)));
		ASSERT_EQ(EVENTFD_FULL, one);
		break;
	case SRC_TIMERFD:
		/* expires 1 us from now, in the timer interrupt */
		ASSERT_EQ(0, timerfd_settime(c->src, 0, &its, NULL));
		break;
	case SRC_INOTIFY:
		/* IN_CREATE is what the watch wants; the unlink is unseen */
		fd = openat(AT_FDCWD, c->dir, O_RDONLY | O_DIRECTORY);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, mknodat(fd, "f", S_IFREG | 0600, 0));
		ASSERT_EQ(0, unlinkat(fd, "f", 0));
		close(fd);
		break;
	case SRC_EVENTFD:
		ASSERT_EQ((ssize_t)sizeof(one),
			  write(c->src, &one, sizeof(one)));
		break;
	case SRC_TCP:
		fd = wk_tcp_connect(&c->addr);
		ASSERT_GE(fd, 0)
			TH_LOG("event %d: connect: %s", ev, strerror(-fd));
		c->client = fd;
		break;
	}
}

/* The TCP client can only go once its connection has been accepted. */
static void close_client(struct wake_ctx *c)
{
	if (c->client >= 0) {
		close(c->client);
		c->client = -1;
	}
}

static void snapshot(struct wake_ctx *c, long *cnt, bool consumed)
{
	int i;

	for (i = 0; i < NR_WAITERS; i++)
		cnt[i] = __atomic_load_n(consumed ? &c->w[i].consumed :
					 &c->w[i].wakeups, __ATOMIC_SEQ_CST);
}

/*
 * Index of the first waiter whose count moved, -1 if none.  Plain waiters
 * of the mixed mode always wake, so only exclusive ones are considered
 * when there are any.
 */
static int winner(struct wake_ctx *c, const long *before, const long *after)
{
	bool excl_only = false;
	int i;

	for (i = 0; i < NR_WAITERS; i++)
		excl_only |= c->w[i].exclusive;
	for (i = 0; i < NR_WAITERS; i++) {
		if (excl_only && !c->w[i].exclusive)
			continue;
		if (after[i] != before[i])
			return i;
	}
	return -1;
}

static void print_order(struct wake_ctx *c, const char *test,
			enum wake_mode mode, const int *order, int nr)
{
	char buf[NR_ORDER * 4 + 1];
	int i, len = 0;

	for (i = 0; i < nr && i < NR_ORDER; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%d",
				i ? "," : "", order[i]);
	buf[len] = '\0';
	ksft_print_msg("order: test=%s source=%s mode=%s first=%s\n",
		       test, c->src_name, mode_name[mode], buf);
}

static void print_spread(struct wake_ctx *c, const char *test,
			 enum wake_mode mode, int events)
{
	long wakeups = 0, consumed = 0, wasted = 0;
	long min = LONG_MAX, max = 0, x;
	double sum = 0, sq = 0, jain;
	int i;

	for (i = 0; i < NR_WAITERS; i++) {
		wakeups += c->w[i].wakeups;
		consumed += c->w[i].consumed;
		wasted += c->w[i].wasted;
		x = c->consume ? c->w[i].consumed : c->w[i].wakeups;
		sum += x;
		sq += (double)x * x;
		if (x < min)
			min = x;
		if (x > max)
			max = x;
	}
	jain = sq > 0 ? sum * sum / (NR_WAITERS * sq) : 0;
	/* Waiters do not consume in wake tests: report the herd cost. */
	if (!c->consume)
		wasted = wakeups - events;
	ksft_print_msg("spread: test=%s source=%s mode=%s waiters=%d events=%d wakeups=%ld consumed=%ld wasted=%ld min=%ld max=%ld jain=%.3f\n",
		       test, c->src_name, mode_name[mode], NR_WAITERS, events,
		       wakeups, consumed, wasted, min, max, jain);
}

/*
 * Round-robin is exact here: every waiter sleeps when an event fires, so
 * each one gets exactly K/N of them (K is a multiple of N).
 */
static void assert_exact_spread(struct __test_metadata *_metadata,
				struct wake_ctx *c, int events)
{
	long expect = events / NR_WAITERS, x;
	int i;

	for (i = 0; i < NR_WAITERS; i++) {
		x = c->consume ? c->w[i].consumed : c->w[i].wakeups;
		EXPECT_EQ(expect, x)
			TH_LOG("waiter %d got %ld of %d events, want exactly %ld",
			       i, x, events, expect);
	}
}

/*
 * Who must take event @ev, -1 if nobody in particular.  The waiters were
 * added in index order and all sleep when an event fires, so:
 *  - round-robin: the queue rotates by one entry per event, 0,1,..,N-1,0,..
 *  - exclusive: the first exclusive entry (w0) always takes it;
 *  - mixed: the first exclusive entry is w1 (plain entries do not stop the
 *    walk), and it always takes it;
 *  - mixed round-robin: w1 and w3 take turns, behind the plain entries.
 */
static int expected_winner(enum wake_mode mode, int ev)
{
	switch (mode) {
	case MODE_ROUNDROBIN:
		return ev % NR_WAITERS;
	case MODE_EXCLUSIVE:
		return 0;
	case MODE_MIXED:
		return 1;
	case MODE_MIXED_RR:
		return (ev & 1) ? 3 : 1;
	case MODE_ALL:
	default:
		return -1;
	}
}

static void assert_order(struct __test_metadata *_metadata,
			 enum wake_mode mode, const int *order, int events)
{
	int ev, want, bad = 0, first_bad = -1;

	for (ev = 0; ev < events; ev++) {
		want = expected_winner(mode, ev);
		if (want >= 0 && order[ev] != want && !bad++)
			first_bad = ev;
	}
	EXPECT_EQ(0, bad)
		TH_LOG("%d events went to the wrong waiter; first: event %d to waiter %d, want %d",
		       bad, first_bad, first_bad >= 0 ? order[first_bad] : -1,
		       first_bad >= 0 ? expected_winner(mode, first_bad) : -1);
}

/*
 * Wake-count test: fire NR_WAKE_EVENTS events, never consumed by the
 * waiters, and count who wakes up for each.
 */
static void run_wake(struct __test_metadata *_metadata, struct wake_ctx *c,
		     enum wake_mode mode)
{
	long before[NR_WAITERS], after[NR_WAITERS], total, d, excl;
	long xmin = LONG_MAX, xmax = 0, wakeups = 0;
	int nr_excl = 0, expected, bad = 0, first_bad = -1;
	int order[NR_WAKE_EVENTS];
	int i, ev, ret;
	bool ok;

	start_waiters(_metadata, c, mode, false);
	for (i = 0; i < NR_WAITERS; i++)
		nr_excl += c->w[i].exclusive;
	/* Every plain entry, plus the one exclusive entry that stops the walk */
	expected = NR_WAITERS - nr_excl + !!nr_excl;

	for (ev = 0; ev < NR_WAKE_EVENTS; ev++) {
		expect_all_asleep(_metadata, c, ev);
		snapshot(c, before, false);
		total = __atomic_load_n(&c->reports, __ATOMIC_SEQ_CST);

		fire(_metadata, c, ev);

		ret = wait_count(c, &c->reports, total + expected);
		if (ret)
			dump_waiters(c);
		ASSERT_EQ(0, ret)
			TH_LOG("event %d: %ld of %d expected wakeups within %d ms: %s",
			       ev, c->reports - total, expected, WAIT_MS,
			       strerror(-ret));
		expect_all_asleep(_metadata, c, ev);
		snapshot(c, after, false);

		/* Plain waiters: exactly once; exclusive group: >= 1 */
		excl = 0;
		ok = true;
		for (i = 0; i < NR_WAITERS; i++) {
			d = after[i] - before[i];
			if (c->w[i].exclusive)
				excl += d;
			else if (d != 1)
				ok = false;
		}
		if (nr_excl) {
			ok &= excl >= 1;
			xmin = excl < xmin ? excl : xmin;
			xmax = excl > xmax ? excl : xmax;
		}
		if (!ok && !bad++)
			first_bad = ev;
		order[ev] = winner(c, before, after);

		/* Drain it ourselves: waiters must not see it again. */
		ASSERT_EQ(1, consume_one(c))
			TH_LOG("event %d: writer could not drain the source", ev);
		close_client(c);
	}
	stop_waiters(c);

	print_spread(c, "wake", mode, NR_WAKE_EVENTS);
	if (nr_excl)
		print_order(c, "wake", mode, order, NR_WAKE_EVENTS);
	for (i = 0; i < NR_WAITERS; i++)
		wakeups += c->w[i].wakeups;

	switch (mode) {
	case MODE_ALL:
		for (i = 0; i < NR_WAITERS; i++) {
			EXPECT_EQ(NR_WAKE_EVENTS, c->w[i].wakeups)
				TH_LOG("waiter %d woke %ld times for %d events",
				       i, c->w[i].wakeups, NR_WAKE_EVENTS);
		}
		break;
	case MODE_EXCLUSIVE:
		EXPECT_EQ(NR_WAKE_EVENTS, wakeups)
			TH_LOG("want exactly one wakeup per event");
		break;
	case MODE_ROUNDROBIN:
		EXPECT_EQ(NR_WAKE_EVENTS, wakeups)
			TH_LOG("want exactly one wakeup per event");
		assert_exact_spread(_metadata, c, NR_WAKE_EVENTS);
		break;
	case MODE_MIXED:
	case MODE_MIXED_RR:
		ksft_print_msg("mixed: exclusive waiters woken per event: min=%ld max=%ld\n",
			       xmin, xmax);
		/* The walk stops at the first exclusive entry that consumes. */
		EXPECT_EQ(1, xmin);
		EXPECT_EQ(1, xmax);
		for (i = 0; i < NR_WAITERS; i++) {
			if (c->w[i].exclusive)
				continue;
			EXPECT_EQ(NR_WAKE_EVENTS, c->w[i].wakeups)
				TH_LOG("plain waiter %d woke %ld times",
				       i, c->w[i].wakeups);
		}
		break;
	}
	EXPECT_EQ(0, bad)
		TH_LOG("%d events with a wrong wakeup pattern, first: event %d",
		       bad, first_bad);
	assert_order(_metadata, mode, order, NR_WAKE_EVENTS);
}

/*
 * Consumption test: fire NR_CONSUME_EVENTS events, each must be consumed
 * by exactly one waiter.
 */
static void run_consume(struct __test_metadata *_metadata,
			struct wake_ctx *c, enum wake_mode mode)
{
	long before[NR_WAITERS], after[NR_WAITERS], total, sum = 0;
	int order[NR_CONSUME_EVENTS];
	int i, ev, ret;

	start_waiters(_metadata, c, mode, true);

	for (ev = 0; ev < NR_CONSUME_EVENTS; ev++) {
		expect_all_asleep(_metadata, c, ev);
		snapshot(c, before, true);
		total = __atomic_load_n(&c->consumed, __ATOMIC_SEQ_CST);

		fire(_metadata, c, ev);

		ret = wait_count(c, &c->consumed, total + 1);
		if (ret)
			dump_waiters(c);
		ASSERT_EQ(0, ret)
			TH_LOG("event %d not consumed within %d ms: %s",
			       ev, WAIT_MS, strerror(-ret));
		expect_all_asleep(_metadata, c, ev);
		ASSERT_EQ(total + 1, c->consumed)
			TH_LOG("event %d consumed more than once", ev);
		snapshot(c, after, true);
		order[ev] = winner(c, before, after);
		close_client(c);
	}
	stop_waiters(c);

	/* Nothing may be left behind, and nothing consumed twice. */
	ret = (int)consume_one(c);
	EXPECT_EQ(0, ret)
		TH_LOG("source not empty at the end (%d)", ret);
	for (i = 0; i < NR_WAITERS; i++)
		sum += c->w[i].consumed;
	EXPECT_EQ(NR_CONSUME_EVENTS, sum);

	print_spread(c, "consume", mode, NR_CONSUME_EVENTS);
	if (mode != MODE_ALL)
		print_order(c, "consume", mode, order, NR_CONSUME_EVENTS);
	if (mode == MODE_ROUNDROBIN)
		assert_exact_spread(_metadata, c, NR_CONSUME_EVENTS);
	if (mode == MODE_ALL)
		return;
	/*
	 * An exclusive wakeup is only consumed by an instance with a waiter,
	 * and only one instance is woken: the woken waiter always finds the
	 * event it was woken for.
	 */
	for (i = 0; i < NR_WAITERS; i++) {
		EXPECT_EQ(0, c->w[i].wasted)
			TH_LOG("waiter %d: %ld wakeups found nothing to consume",
			       i, c->w[i].wasted);
	}
	assert_order(_metadata, mode, order, NR_CONSUME_EVENTS);
}

/* The attacker's process: wake, count, never consume, wait again. */
static void __attribute__((noreturn)) attacker_main(struct wake_ctx *c)
{
	struct attacker *a = c->atk;
	struct epoll_event ev, evs[2];
	int ep, n, i;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.u64 = TOKEN_STOP;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c->stopfd, &ev))
		goto fail;
	ev.events = c->interest | EPOLLET | EPOLLEXCLUSIVE;
	ev.data.u64 = TOKEN_SRC;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->src, &ev))
		goto fail;
	__atomic_store_n(&a->added, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		__atomic_store_n(&a->armed, 1, __ATOMIC_SEQ_CST);
		n = epoll_wait(ep, evs, 2, -1);
		__atomic_store_n(&a->armed, 0, __ATOMIC_SEQ_CST);
		if (n < 0 && errno != EINTR)
			goto fail;
		for (i = 0; i < n; i++) {
			if (evs[i].data.u64 == TOKEN_STOP)
				_exit(0);
			__atomic_add_fetch(&a->wakeups, 1, __ATOMIC_SEQ_CST);
		}
	}
fail:
	__atomic_store_n(&a->err, errno ?: EIO, __ATOMIC_SEQ_CST);
	_exit(1);
}

static void start_attacker(struct __test_metadata *_metadata,
			   struct wake_ctx *c)
{
	long long deadline = wk_now_ms() + WAIT_MS;
	struct attacker *a = c->atk;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		attacker_main(c);
	a->pid = pid;
	/* Its entry must be on the queue before anything else is added. */
	while (!__atomic_load_n(&a->added, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&a->err, __ATOMIC_SEQ_CST) &&
	       wk_now_ms() < deadline)
		usleep(POLL_US);
	ASSERT_EQ(1, a->added)
		TH_LOG("attacker: EPOLL_CTL_ADD failed: %s", strerror(a->err));
}

static void stop_attacker(struct wake_ctx *c)
{
	int status;

	if (!c->atk || c->atk->pid <= 0)
		return;
	/* It watches the stop eventfd too; SIGKILL if the test bailed out. */
	if (waitpid(c->atk->pid, &status, WNOHANG) == 0) {
		usleep(100 * 1000);
		if (waitpid(c->atk->pid, &status, WNOHANG) == 0) {
			kill(c->atk->pid, SIGKILL);
			waitpid(c->atk->pid, &status, 0);
		}
	}
	c->atk->pid = 0;
}

static long all_wakeups(struct wake_ctx *c)
{
	return __atomic_load_n(&c->reports, __ATOMIC_SEQ_CST) +
	       __atomic_load_n(&c->atk->wakeups, __ATOMIC_SEQ_CST);
}

/* 0 once the waiters and the attacker woke @target times, -errno else. */
static int wait_all_wakeups(struct wake_ctx *c, long target)
{
	long long deadline = wk_now_ms() + WAIT_MS;

	for (;;) {
		if (__atomic_load_n(&c->err, __ATOMIC_SEQ_CST))
			return -c->err;
		if (__atomic_load_n(&c->atk->err, __ATOMIC_SEQ_CST))
			return -c->atk->err;
		if (all_wakeups(c) >= target)
			return 0;
		if (wk_now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(POLL_US);
	}
}

/*
 * Fire NR_WAKE_EVENTS events at N round-robin waiters and one attacker
 * whose item is plain EPOLLEXCLUSIVE, added before or after theirs.  Every
 * exclusive epoll entry on the queue takes its turn, so each of the N + 1
 * gets exactly K/(N + 1) events: the attacker no more than one share, and
 * no round-robin waiter less.
 */
static void run_hijack(struct __test_metadata *_metadata, struct wake_ctx *c,
		       bool attacker_first)
{
	long share = NR_WAKE_EVENTS / (NR_WAITERS + 1), total, got;
	int i, ev, ret;

	c->atk = mmap(NULL, sizeof(*c->atk), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(c->atk != MAP_FAILED);
	memset(c->atk, 0, sizeof(*c->atk));

	if (attacker_first)
		start_attacker(_metadata, c);
	start_waiters(_metadata, c, MODE_ROUNDROBIN, false);
	if (!attacker_first)
		start_attacker(_metadata, c);

	for (ev = 0; ev < NR_WAKE_EVENTS; ev++) {
		expect_all_asleep(_metadata, c, ev);
		total = all_wakeups(c);

		fire(_metadata, c, ev);

		ret = wait_all_wakeups(c, total + 1);
		if (ret)
			dump_waiters(c);
		ASSERT_EQ(0, ret)
			TH_LOG("event %d: nobody woke within %d ms (attacker: %ld wakeups, armed=%d, state=%c): %s",
			       ev, WAIT_MS, c->atk->wakeups, c->atk->armed,
			       process_state(c->atk->pid) ?: '?', strerror(-ret));
		expect_all_asleep(_metadata, c, ev);
		ASSERT_EQ(total + 1, all_wakeups(c))
			TH_LOG("event %d woke more than one exclusive waiter", ev);

		ASSERT_EQ(1, consume_one(c))
			TH_LOG("event %d: writer could not drain the source", ev);
		close_client(c);
	}
	stop_waiters(c);
	stop_attacker(c);

	got = c->atk->wakeups;
	ksft_print_msg("hijack: source=%s attacker=%s waiters=%d events=%d attacker_wakeups=%ld share=%ld\n",
		       c->src_name, attacker_first ? "first" : "last",
		       NR_WAITERS, NR_WAKE_EVENTS, got, share);
	print_spread(c, "hijack", MODE_ROUNDROBIN, NR_WAKE_EVENTS - got);
	for (i = 0; i < NR_WAITERS; i++) {
		EXPECT_EQ(share, c->w[i].wakeups)
			TH_LOG("round-robin waiter %d got %ld of %d events, want exactly %ld",
			       i, c->w[i].wakeups, NR_WAKE_EVENTS, share);
	}
	EXPECT_LE(got, share)
		TH_LOG("the attacker took %ld of %d events, more than one share (%ld)",
		       got, NR_WAKE_EVENTS, share);
}

FIXTURE(epoll_wake) {
	struct wake_ctx c;
};

FIXTURE_VARIANT(epoll_wake) {
	enum src_type type;
	const char *name;
};

/* Writer writes one byte per event into a pipe. */
FIXTURE_VARIANT_ADD(epoll_wake, pipe) {
	.type = SRC_PIPE,
	.name = "pipe",
};

/* Writer adds 1 to an eventfd per event. */
FIXTURE_VARIANT_ADD(epoll_wake, eventfd) {
	.type = SRC_EVENTFD,
	.name = "eventfd",
};

/* Writer connect()s to a listener on 127.0.0.1 per event. */
FIXTURE_VARIANT_ADD(epoll_wake, tcp) {
	.type = SRC_TCP,
	.name = "tcp",
};

/*
 * Waiters are writers (EPOLLOUT) on a full pipe; the event is a read of
 * one page, which frees a pipe buffer: a keyed EPOLLOUT wakeup.
 */
FIXTURE_VARIANT_ADD(epoll_wake, pipe_out) {
	.type = SRC_PIPE_OUT,
	.name = "pipe_out",
};

/* Writers on a full eventfd; the event is a read, which empties it. */
FIXTURE_VARIANT_ADD(epoll_wake, eventfd_out) {
	.type = SRC_EVENTFD_OUT,
	.name = "eventfd_out",
};

/* A timerfd armed to expire 1 us later, per event. */
FIXTURE_VARIANT_ADD(epoll_wake, timerfd) {
	.type = SRC_TIMERFD,
	.name = "timerfd",
};

/* An inotify watch on a directory; a file is created there per event. */
FIXTURE_VARIANT_ADD(epoll_wake, inotify) {
	.type = SRC_INOTIFY,
	.name = "inotify",
};

/*
 * Open the source of @type and the stop eventfd in @c.  Returns 0, or 1
 * when the test is skipped (SKIP() has recorded why); a failed assert ends
 * the test as usual.  Shared by the fixture and the stand-alone tests.
 */
static int wake_ctx_setup(struct __test_metadata *_metadata,
			  struct wake_ctx *c, enum src_type type,
			  const char *name)
{
	int fds[2], ret, i;

	memset(c, 0, sizeof(*c));
	c->type = type;
	c->src_name = name;
	c->src = c->src_wr = c->client = c->stopfd = -1;
	for (i = 0; i < NR_WAITERS; i++)
		c->w[i].epfd = -1;

	if (!thread_state(thread_tid()))
		SKIP(return 1, "cannot read /proc/self/task/<tid>/stat");

	c->stopfd = eventfd(0, EFD_CLOEXEC);
	ASSERT_GE(c->stopfd, 0);

	c->interest = EPOLLIN;
	switch (c->type) {
	case SRC_PIPE:
		ASSERT_EQ(0, pipe2(fds, O_NONBLOCK | O_CLOEXEC));
		c->src = fds[0];
		c->src_wr = fds[1];
		break;
	case SRC_PIPE_OUT:
		ASSERT_EQ(0, pipe2(fds, O_NONBLOCK | O_CLOEXEC));
		c->src = fds[1];
		c->src_wr = fds[0];
		c->interest = EPOLLOUT;
		c->chunk = getpagesize();
		ASSERT_GE(65536, (int)c->chunk);
		/* full: every buffer holds one page */
		while (consume_one(c) == 1)
			;
		break;
	case SRC_EVENTFD_OUT:
		c->src = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ASSERT_GE(c->src, 0);
		c->interest = EPOLLOUT;
		ASSERT_EQ(1, consume_one(c));
		break;
	case SRC_TIMERFD:
		c->src = timerfd_create(CLOCK_MONOTONIC,
					TFD_NONBLOCK | TFD_CLOEXEC);
		ASSERT_GE(c->src, 0);
		break;
	case SRC_INOTIFY:
		c->src = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (c->src < 0 && errno == ENOSYS)
			SKIP(return 1, "no inotify (CONFIG_INOTIFY_USER)");
		ASSERT_GE(c->src, 0);
		snprintf(c->dir, sizeof(c->dir), "/tmp/epoll_wake.XXXXXX");
		ASSERT_TRUE(mkdtemp(c->dir) != NULL);
		ASSERT_LE(0, inotify_add_watch(c->src, c->dir, IN_CREATE));
		break;
	case SRC_EVENTFD:
		c->src = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ASSERT_GE(c->src, 0);
		break;
	case SRC_TCP:
		ret = wk_tcp_listener(&c->addr);
		if (ret == -EAFNOSUPPORT)
			SKIP(return 1, "no IPv4 support");
		ASSERT_GE(ret, 0)
			TH_LOG("TCP listener on 127.0.0.1: %s", strerror(-ret));
		c->src = ret;
		break;
	}
	return 0;
}

/* Stop the waiters (and the attacker) and close everything @c holds. */
static void wake_ctx_teardown(struct wake_ctx *c)
{
	int i;

	stop_waiters(c);
	if (c->atk) {
		stop_attacker(c);
		munmap(c->atk, sizeof(*c->atk));
		c->atk = NULL;
	}
	for (i = 0; i < NR_WAITERS; i++)
		if (c->w[i].epfd >= 0)
			close(c->w[i].epfd);
	close_client(c);
	if (c->src_wr >= 0)
		close(c->src_wr);
	if (c->src >= 0)
		close(c->src);
	if (c->dir[0])
		rmdir(c->dir);
	if (c->stopfd >= 0)
		close(c->stopfd);
}

FIXTURE_SETUP(epoll_wake)
{
	wake_ctx_setup(_metadata, &self->c, variant->type, variant->name);
}

FIXTURE_TEARDOWN(epoll_wake)
{
	wake_ctx_teardown(&self->c);
}

/*
 *        t0      t1      t2      t3
 *         | (ew)  | (ew)  | (ew)  | (ew)
 *        e0      e1      e2      e3
 *     (et) \  (et) \    / (et)  / (et)
 *           `------ s0 --------'
 *                    |
 *                    w  (writer drains s0 itself)
 *
 * Default mode: every event wakes all four waiters, exactly once each.
 */
TEST_F_TIMEOUT(epoll_wake, wake_all, TEST_TIMEOUT_S)
{
	run_wake(_metadata, &self->c, MODE_ALL);
}

/*
 *        t0      t1      t2      t3
 *         | (ew)  | (ew)  | (ew)  | (ew)
 *        e0      e1      e2      e3
 *   (et,x) \ (et,x) \  / (et,x) / (et,x)
 *           `------ s0 --------'
 *                    |
 *                    w  (writer drains s0 itself)
 *
 * EPOLLEXCLUSIVE: exactly one wakeup per event in total, and it always goes
 * to t0, the first exclusive entry, which always has a sleeping waiter.
 */
TEST_F_TIMEOUT(epoll_wake, wake_exclusive, TEST_TIMEOUT_S)
{
	run_wake(_metadata, &self->c, MODE_EXCLUSIVE);
}

/*
 *          t0        t1        t2        t3
 *           | (ew)    | (ew)    | (ew)    | (ew)
 *          e0        e1        e2        e3
 *  (et,x,rr) \ (et,x,rr) \    / (et,x,rr) / (et,x,rr)
 *             `-------- s0 ----------'
 *                        |
 *                        w  (writer drains s0 itself)
 *
 * EPOLLROUNDROBIN: exactly one wakeup per event, and the woken entry goes
 * to the tail of s0's wait queue: events go to t0,t1,t2,t3,t0,... exactly,
 * and each waiter gets exactly K/N.
 */
TEST_F_TIMEOUT(epoll_wake, wake_roundrobin, TEST_TIMEOUT_S)
{
	run_wake(_metadata, &self->c, MODE_ROUNDROBIN);
}

/*
 *        t0      t1      t2      t3
 *         | (ew)  | (ew)  | (ew)  | (ew)
 *        e0      e1      e2      e3
 *     (et) \ (et,x) \   / (et)  / (et,x)
 *           `------ s0 --------'
 *                    |
 *                    w  (writer drains s0 itself)
 *
 * Mixed: per event both plain waiters (t0, t2) wake exactly once and exactly
 * one exclusive waiter wakes: t1, the first exclusive entry.
 */
TEST_F_TIMEOUT(epoll_wake, wake_mixed, TEST_TIMEOUT_S)
{
	run_wake(_metadata, &self->c, MODE_MIXED);
}

/*
 *        t0        t1        t2        t3
 *         | (ew)    | (ew)    | (ew)    | (ew)
 *        e0        e1        e2        e3
 *     (et) \ (et,x,rr) \   / (et)  / (et,x,rr)
 *           `-------- s0 ----------'
 *                      |
 *                      w  (writer drains s0 itself)
 *
 * Mixed round-robin: the plain entries (t0, t2) sit at the head of s0's
 * queue, so a round-robin entry is never the first one when it takes an
 * event.  Both plain waiters wake for every event, and t1 and t3 take
 * turns exactly: 1,3,1,3,...
 */
TEST_F_TIMEOUT(epoll_wake, wake_mixed_roundrobin, TEST_TIMEOUT_S)
{
	run_wake(_metadata, &self->c, MODE_MIXED_RR);
}

/*
 *        t0      t1      t2      t3      (each consumes, non-blocking)
 *         | (ew)  | (ew)  | (ew)  | (ew)
 *        e0      e1      e2      e3
 *     (lt) \  (lt) \    / (lt)  / (lt)
 *           `------ s0 --------'
 *                    |
 *                    w
 *
 * Default mode: each event is consumed exactly once, the others' wakeups
 * are wasted (reported, since some are hidden by level triggering).
 */
TEST_F_TIMEOUT(epoll_wake, consume_all, TEST_TIMEOUT_S)
{
	run_consume(_metadata, &self->c, MODE_ALL);
}

/*
 *        t0      t1      t2      t3      (each consumes, non-blocking)
 *         | (ew)  | (ew)  | (ew)  | (ew)
 *        e0      e1      e2      e3
 *   (lt,x) \ (lt,x) \  / (lt,x) / (lt,x)
 *           `------ s0 --------'
 *                    |
 *                    w
 *
 * EPOLLEXCLUSIVE: each event consumed exactly once, always by t0, and no
 * wakeup is wasted.
 */
TEST_F_TIMEOUT(epoll_wake, consume_exclusive, TEST_TIMEOUT_S)
{
	run_consume(_metadata, &self->c, MODE_EXCLUSIVE);
}

/*
 *          t0        t1        t2        t3   (each consumes)
 *           | (ew)    | (ew)    | (ew)    | (ew)
 *          e0        e1        e2        e3
 *  (lt,x,rr) \ (lt,x,rr) \    / (lt,x,rr) / (lt,x,rr)
 *             `-------- s0 ----------'
 *                        |
 *                        w
 *
 * EPOLLROUNDROBIN: each event consumed exactly once, and each waiter
 * consumes exactly K/N of them, in the order t0,t1,t2,t3,t0,...; no wakeup
 * is wasted.
 */
TEST_F_TIMEOUT(epoll_wake, consume_roundrobin, TEST_TIMEOUT_S)
{
	run_consume(_metadata, &self->c, MODE_ROUNDROBIN);
}

/*
 *            a         t0        t1        t2        t3
 *   (other   | (ew)     | (ew)    | (ew)    | (ew)    | (ew)
 *  process)  ea        e0        e1        e2        e3
 *     (et,x)  \ (et,x,rr) \ (et,x,rr) | (et,x,rr) / (et,x,rr)
 *              `----------------- s0 -------------------'
 *                                  |
 *                                  w  (writer drains s0 itself)
 *
 * Hijack, attacker added first: a, in another process, adds s0 with plain
 * EPOLLEXCLUSIVE | EPOLLET before t0..t3 add it round-robin, then takes
 * wakeups and never consumes.  Every exclusive epoll entry of s0 rotates,
 * so t0..t3 each get exactly K/5 events and a no more than K/5.
 */
TEST_F_TIMEOUT(epoll_wake, hijack_attacker_first, TEST_TIMEOUT_S)
{
	run_hijack(_metadata, &self->c, true);
}

/*
 *        t0        t1        t2        t3         a
 *         | (ew)    | (ew)    | (ew)    | (ew)     | (ew)  (other process)
 *        e0        e1        e2        e3         ea
 * (et,x,rr) \ (et,x,rr) \ (et,x,rr) | (et,x,rr) /  / (et,x)
 *            `----------------- s0 -------------------'
 *                                |
 *                                w  (writer drains s0 itself)
 *
 * Hijack, attacker added last: the same, with a's item added after the
 * round-robin ones; once they have rotated behind it, it must not keep the
 * head of the queue.
 */
TEST_F_TIMEOUT(epoll_wake, hijack_attacker_last, TEST_TIMEOUT_S)
{
	run_hijack(_metadata, &self->c, false);
}

/*
 *          t0        t1        t2        t3
 *           | (ew)    | (ew)    | (ew)    | (ew)
 *          e0        e1        e2        e3
 *  (et,x,rr) \ (et,x,rr) \    / (et,x,rr) / (et,x,rr)
 *             `------ listener ------'
 *                        |
 *                        w  shutdown(SHUT_RDWR): wake_up_interruptible_all()
 *
 * A wakeup addressed to all waiters (a listener shut down) reaches every
 * round-robin entry: every entry consumes it and moves to the tail behind
 * the walk, which must stop when it comes round to the first entry it
 * moved (a walk that did not would go round for as long as the entries
 * consume).  The shutdown may wake the queue more than once, so a waiter
 * that is back asleep in time can see a second wakeup: the test requires
 * at least one per waiter, and that everybody is asleep again after.
 */
TEST(hup_roundrobin_wakes_each)
{
	struct wake_ctx *c;
	int i, ret;

	c = calloc(1, sizeof(*c));
	ASSERT_TRUE(c != NULL);
	if (wake_ctx_setup(_metadata, c, SRC_TCP, "tcp"))
		return;

	start_waiters(_metadata, c, MODE_ROUNDROBIN, false);
	expect_all_asleep(_metadata, c, 0);
	ASSERT_EQ(0, shutdown(c->src, SHUT_RDWR));
	ret = wait_count(c, &c->reports, NR_WAITERS);
	if (ret)
		dump_waiters(c);
	ASSERT_EQ(0, ret)
		TH_LOG("%ld of %d waiters woke for the shutdown: %s",
		       c->reports, NR_WAITERS, strerror(-ret));
	expect_all_asleep(_metadata, c, 1);
	for (i = 0; i < NR_WAITERS; i++) {
		EXPECT_LE(1, c->w[i].wakeups)
			TH_LOG("waiter %d did not wake for the shutdown", i);
	}
	ksft_print_msg("hup: wakeups per waiter %ld %ld %ld %ld\n",
		       c->w[0].wakeups, c->w[1].wakeups, c->w[2].wakeups,
		       c->w[3].wakeups);
	wake_ctx_teardown(c);
	free(c);
}

int main(int argc, char **argv)
{
	wk_probe_or_skip(argc, argv);
	return test_harness_run(argc, argv);
}
