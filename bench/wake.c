// SPDX-License-Identifier: GPL-2.0
/*
 * wake - how many epoll waiters one event wakes, for each wake mode.
 *
 * A rework of the benchmark in Jason Baron's RFC "Add epoll round robin
 * wakeup mode" (February 2015), with the same default parameters.  N
 * threads each own an epoll instance, and every instance watches the same
 * wakeup source, level triggered.  The main thread produces E events, one
 * at a time, with a pause of I microseconds between them:
 *
 *                                 |---> [epoll 0] ---> [thread 0]
 *   [main] ---> [shared source] --|---> [epoll 1] ---> [thread 1]
 *   1 event per interval          |---> ...
 *                                 |---> [epoll N-1] -> [thread N-1]
 *
 * Modes (-m), i.e. the events each instance adds the source with:
 *
 *   all         EPOLLIN: every event wakes every waiting thread (the
 *               thundering herd)
 *   exclusive   EPOLLIN | EPOLLEXCLUSIVE: an event wakes one instance that
 *               has a waiter, normally the first such one on the source's
 *               wait queue, so the same few threads take most events
 *   roundrobin  EPOLLIN | EPOLLEXCLUSIVE | EPOLLROUNDROBIN: one instance
 *               per event, and the one that took it moves to the back of
 *               the wait queue, so events rotate over all threads
 *
 * Sources (-s):
 *
 *   pipe     one byte written to a pipe per event; a consumer read()s up
 *            to PIPE_READ_MAX bytes and counts each byte as one event
 *   eventfd  write(1) to an eventfd per event; a consumer read()s the
 *            counter and counts its value
 *   tcp      a listening TCP socket on 127.0.0.1 (port 0) per run; an
 *            event is one blocking connect() from the main thread, which
 *            then closes its end with an RST (SO_LINGER 0, so that repeated
 *            runs leave no TIME_WAIT sockets behind); a consumer
 *            accept4(SOCK_NONBLOCK)s one connection and closes it.  This is
 *            the accept-balancing case that motivated the series.
 *
 * Each thread loops on epoll_wait(its instance, its own 1-entry buffer,
 * maxevents 1, no timeout).  A report of the source is a wakeup, followed
 * by exactly one non-blocking consume attempt (all sources are
 * non-blocking on the consumer side): it either consumes >= 1 event, or
 * fails with EAGAIN because another thread got there first, which is a
 * wasted wakeup.  All threads are set up (instances created and the source
 * added, in thread order, by the main thread) and have met at a start
 * barrier before the first event.  When the last event is written the main
 * thread waits, for at most DRAIN_TIMEOUT_S, until the threads have
 * consumed every event written, then writes a stop eventfd that every
 * instance watches non-exclusively (EPOLLIN, never read, so it stays
 * ready), and joins all threads.
 *
 * Result keys, totals over all threads unless said otherwise:
 *
 *   events           events written (tcp: connect()s that succeeded; a
 *                    failed connect() is not an event, the number that
 *                    failed and the first error go to stderr, and the run
 *                    fails only if none succeeded)
 *   consumed         events consumed by the threads
 *   lost             events - consumed; anything but 0 is a failure
 *   wakeups          epoll_wait() calls that reported the source (the final
 *                    wakeup by the stop eventfd is not counted)
 *   wasted           wakeups whose consume attempt got EAGAIN
 *   extra_per_event  wasted / events: wakeups that consumed nothing, per
 *                    event written (0 is ideal).  Not (wakeups - consumed) /
 *                    consumed: one pipe or eventfd wakeup can consume
 *                    several events, which would make that negative.
 *   never_woken      threads with 0 wakeups
 *   min, max         smallest and largest per-thread consumed count
 *   jain             Jain's fairness index of the per-thread consumed
 *                    counts, (sum x)^2 / (N * sum x^2): 1 when every
 *                    thread consumed the same, 1/N when one consumed all
 *                    (0 if nothing was consumed)
 *   elapsed_s        CLOCK_MONOTONIC from just before the first event to
 *                    the moment the drain found everything consumed (it
 *                    polls every DRAIN_POLL_US)
 *
 * Caveats; take the output as raw microbenchmark numbers:
 *
 *  - "wasted" counts only the wakeups user space can see: a thread that
 *    the kernel wakes and then finds the source no longer ready (another
 *    thread consumed it) goes back to sleep inside epoll_wait() without
 *    returning.  The herd cost of mode "all" is therefore mostly in the
 *    context switches and CPU time (run under perf stat), and "wasted" is
 *    a lower bound of the useless wakeups.  To show that herd, each thread
 *    also reports "sleeps", its voluntary context switches
 *    (getrusage(RUSAGE_THREAD)) from the start barrier to its exit: the
 *    times it blocked in epoll_wait(), each ended by one kernel wakeup,
 *    the last one by the stop eventfd, plus any sleep on a contended lock
 *    inside the consume call (the pipe mutex, the listening socket's
 *    lock).  It is in the per-thread lines and a '#' total only, not in
 *    the wake-result line.
 *  - -i is a minimum: a sleep overshoots, by a lot under QEMU TCG, and the
 *    tcp connect() itself takes time.  When the threads cannot keep up,
 *    pipe and eventfd events pile up and are taken several per wakeup, and
 *    tcp connect()s wait for room in the listen backlog.
 *  - The start barrier only guarantees that every instance is set up; a
 *    thread may not yet be inside epoll_wait() when the first event comes.
 *    Level triggering means that no event is missed because of that.
 *  - With "exclusive", which threads win depends on the wait queue order
 *    (the order of EPOLL_CTL_ADD, thread 0 first) and on which of them are
 *    waiting at that moment, i.e. on the scheduler.
 *  - A kernel without wake-mode support (mainline before 4.5, or v3.19
 *    without the series) silently ignores unknown epoll event bits, which
 *    would measure "all" under another name.  So for the exclusive modes
 *    the program first checks that EPOLL_CTL_MOD with the mode's flags is
 *    refused with EINVAL, as it is where the flags are implemented, and
 *    fails otherwise.  A kernel that knows EPOLLEXCLUSIVE but not
 *    EPOLLROUNDROBIN (mainline 4.5 and later) refuses the ADD with EINVAL:
 *    the program says so and exits 1.
 *
 * Output (-q prints only the last line; errors go to stderr):
 *
 *   # Run summary [PID <pid>]: mode=<m>, source=<s>, threads=<n>, events=<e>, interval=<i>us
 *   [thread  0] wakeups: <w> consumed: <c> wasted: <x> sleeps: <s>
 *   ...                                        (one line per thread)
 *   # sleeps: <S>, <f.2> per event written (voluntary context switches ...)
 *   wake-result: mode=<m> source=<s> threads=<n> events=<written>
 *     consumed=<c> lost=<l> wakeups=<w> wasted=<x> extra_per_event=<f.4>
 *     never_woken=<k> min=<a> max=<b> jain=<f.4> elapsed_s=<f.4>
 *
 * where the wake-result line is one line, keys always in this order.
 * -d FILE also writes "<thread> <consumed> <wakeups>" per thread to FILE.
 *
 * Exit status: 0 on success; 1 if an event was lost (including a drain
 * timeout), a system call failed (a waiter's is reported as "thread N:
 * <call>: <error>"), no tcp connect() succeeded, or the kernel does not
 * support the mode; 2 on a usage error.
 *
 * Only system calls that Linux v3.19 has are used.  Build (static, for the
 * guests; epoll_uapi.h is generated per kernel base and defines
 * EPOLLEXCLUSIVE and EPOLLROUNDROBIN):
 *   gcc [-m32] -O2 -Wall -Wextra -Werror -static -pthread -I<gen> \
 *       -o wake bench/wake.c
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>

/* Generated per kernel base: EPOLLEXCLUSIVE and EPOLLROUNDROBIN. */
#include "epoll_uapi.h"

#define EXIT_USAGE		2
#define MAX_THREADS		4096
#define MAX_EVENTS		100000000UL
#define MAX_INTERVAL_US		10000000UL
#define PIPE_READ_MAX		64
#define DRAIN_TIMEOUT_S		10
#define DRAIN_POLL_US		1000
#define THREAD_STACK		(256 * 1024)
#define LISTEN_BACKLOG		4096	/* capped by net.core.somaxconn */
#define CACHELINE		64

/* epoll_event.data of the two items in every instance */
#define TAG_SOURCE		0
#define TAG_STOP		1

enum mode {
	MODE_ALL,
	MODE_EXCLUSIVE,
	MODE_ROUNDROBIN,
	MODE_NR,
};

static const char * const mode_name[MODE_NR] = {
	[MODE_ALL]		= "all",
	[MODE_EXCLUSIVE]	= "exclusive",
	[MODE_ROUNDROBIN]	= "roundrobin",
};

enum source {
	SRC_PIPE,
	SRC_EVENTFD,
	SRC_TCP,
	SRC_NR,
};

static const char * const source_name[SRC_NR] = {
	[SRC_PIPE]	= "pipe",
	[SRC_EVENTFD]	= "eventfd",
	[SRC_TCP]	= "tcp",
};

/* Options; the defaults are the parameters of the 2015 RFC benchmark. */
static enum mode mode = MODE_ALL;
static enum source source = SRC_PIPE;
static unsigned int nthreads = 100;
static unsigned long nevents = 20000;
static unsigned long interval_us = 100;
static const char *dist_path;
static bool quiet;

/* The shared source: consumers use src_fd, the main thread src_wfd. */
static int src_fd = -1, src_wfd = -1;
static struct sockaddr_in src_addr;	/* tcp: where to connect() */
static int stop_fd = -1;
static pthread_barrier_t start_barrier;

/*
 * One per thread, on its own cache line.  The counters are written only by
 * their thread; the main thread reads "consumed" while the run is going
 * on, to know when the drain is done, hence the atomic accesses.
 */
struct waiter {
	unsigned int id;
	int epfd;
	pthread_t thread;
	struct epoll_event ev;		/* private 1-entry wait buffer */
	unsigned long wakeups;
	unsigned long consumed;
	unsigned long wasted;
	unsigned long sleeps;		/* voluntary context switches */
	int error;			/* errno of a failed call, or 0 */
	const char *failed_call;
} __attribute__((aligned(CACHELINE)));

static struct waiter *waiters;

static const struct option long_options[] = {
	{ "mode",	required_argument,	NULL, 'm' },
	{ "source",	required_argument,	NULL, 's' },
	{ "threads",	required_argument,	NULL, 't' },
	{ "events",	required_argument,	NULL, 'e' },
	{ "interval",	required_argument,	NULL, 'i' },
	{ "dist",	required_argument,	NULL, 'd' },
	{ "quiet",	no_argument,		NULL, 'q' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL,		0,			NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: wake [<options>]\n"
"\n"
"  -m, --mode <mode>        all | exclusive | roundrobin (default all)\n"
"  -s, --source <source>    pipe | eventfd | tcp (default pipe)\n"
"  -t, --threads <n>        waiter threads, each with its own epoll\n"
"                           instance, 1..%d (default 100)\n"
"  -e, --events <n>         events to produce, 1..%lu (default 20000)\n"
"  -i, --interval <us>      pause between events in microseconds,\n"
"                           0..%lu (default 100)\n"
"  -d, --dist <file>        write \"<thread> <consumed> <wakeups>\" per\n"
"                           thread to <file>\n"
"  -q, --quiet              print only the wake-result line\n"
"  -h, --help               this text\n"
"\n"
"Modes: the flags every instance adds the shared source with:\n"
"  all         EPOLLIN\n"
"  exclusive   EPOLLIN|EPOLLEXCLUSIVE\n"
"  roundrobin  EPOLLIN|EPOLLEXCLUSIVE|EPOLLROUNDROBIN\n"
"\n"
"Exit status: 0 on success; 1 if an event was lost or a system call\n"
"failed (including a mode this kernel does not support); 2 on a usage\n"
"error.\n",
		MAX_THREADS, MAX_EVENTS, MAX_INTERVAL_US);
}

static void __attribute__((noreturn)) usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "wake: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n\n");
	usage(stderr);
	exit(EXIT_USAGE);
}

static unsigned long parse_ulong(const char *arg, unsigned long min,
				 unsigned long max, const char *what)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max) {
		fprintf(stderr, "wake: %s: '%s' is not a number in %lu..%lu\n\n",
			what, arg, min, max);
		usage(stderr);
		exit(EXIT_USAGE);
	}
	return v;
}

static int lookup(const char *arg, const char * const *names, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		if (!strcmp(arg, names[i]))
			return i;
	return -1;
}

static void parse_options(int argc, char **argv)
{
	int c, v;

	while ((c = getopt_long(argc, argv, "m:s:t:e:i:d:qh",
				long_options, NULL)) != -1) {
		switch (c) {
		case 'm':
			v = lookup(optarg, mode_name, MODE_NR);
			if (v < 0)
				usage_error("-m: unknown mode '%s'", optarg);
			mode = v;
			break;
		case 's':
			v = lookup(optarg, source_name, SRC_NR);
			if (v < 0)
				usage_error("-s: unknown source '%s'", optarg);
			source = v;
			break;
		case 't':
			nthreads = parse_ulong(optarg, 1, MAX_THREADS, "-t");
			break;
		case 'e':
			nevents = parse_ulong(optarg, 1, MAX_EVENTS, "-e");
			break;
		case 'i':
			interval_us = parse_ulong(optarg, 0, MAX_INTERVAL_US, "-i");
			break;
		case 'd':
			dist_path = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
}

static uint32_t mode_events(void)
{
	switch (mode) {
	case MODE_EXCLUSIVE:
		return EPOLLIN | (uint32_t)EPOLLEXCLUSIVE;
	case MODE_ROUNDROBIN:
		return EPOLLIN | (uint32_t)EPOLLEXCLUSIVE |
		       (uint32_t)EPOLLROUNDROBIN;
	default:
		return EPOLLIN;
	}
}

static const char *events_str(uint32_t events)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), "EPOLLIN%s%s",
		 events & (uint32_t)EPOLLEXCLUSIVE ? "|EPOLLEXCLUSIVE" : "",
		 events & (uint32_t)EPOLLROUNDROBIN ? "|EPOLLROUNDROBIN" : "");
	return buf;
}

static const char *kernel_release(void)
{
	static struct utsname u;

	if (uname(&u))
		return "?";
	return u.release;
}

/* The flag an exclusive mode needs that this kernel may not know. */
static void mode_flag(const char **name, uint32_t *bit)
{
	if (mode == MODE_ROUNDROBIN) {
		*name = "EPOLLROUNDROBIN";
		*bit = (uint32_t)EPOLLROUNDROBIN;
	} else {
		*name = "EPOLLEXCLUSIVE";
		*bit = (uint32_t)EPOLLEXCLUSIVE;
	}
}

/* EPOLL_CTL_ADD or exit 1, explaining an EINVAL for the wake-mode flags. */
static void ctl_add(int epfd, int fd, uint32_t events, uint64_t tag,
		    const char *what)
{
	struct epoll_event ev;
	const char *flag;
	uint32_t bit;
	int e;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.u64 = tag;
	if (!epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev))
		return;
	e = errno;
	if (e == EINVAL && mode != MODE_ALL &&
	    (events & (uint32_t)EPOLLEXCLUSIVE)) {
		mode_flag(&flag, &bit);
		errx(EXIT_FAILURE,
		     "epoll_ctl(EPOLL_CTL_ADD, %s, %s): %s: kernel %s does not accept %s (0x%08" PRIx32 "): mode=%s needs the epoll wake-modes series (and an epoll_uapi.h generated for this kernel)",
		     what, events_str(events), strerror(e), kernel_release(),
		     flag, bit, mode_name[mode]);
	}
	errno = e;
	err(EXIT_FAILURE, "epoll_ctl(EPOLL_CTL_ADD, %s, %s)", what,
	    events_str(events));
}

/*
 * Kernels that do not implement the wake-mode flags ignore unknown event
 * bits on EPOLL_CTL_ADD; those that do refuse them on EPOLL_CTL_MOD.  Check
 * on a scratch instance, so that "exclusive" never silently measures "all".
 */
static void probe_wake_mode(void)
{
	uint32_t events = mode_events();
	struct epoll_event ev;
	const char *flag;
	uint32_t bit;
	int epfd, efd, ret, e;

	if (mode == MODE_ALL)
		return;
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		err(EXIT_FAILURE, "eventfd");
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		err(EXIT_FAILURE, "epoll_create1");
	ctl_add(epfd, efd, events, TAG_SOURCE, "wake-mode probe eventfd");

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.u64 = TAG_SOURCE;
	ret = epoll_ctl(epfd, EPOLL_CTL_MOD, efd, &ev);
	e = errno;
	if (ret == 0) {
		mode_flag(&flag, &bit);
		errx(EXIT_FAILURE,
		     "kernel %s accepted EPOLL_CTL_MOD with %s, so it ignores %s (0x%08" PRIx32 "): mode=%s would measure mode=all; it needs the epoll wake-modes series",
		     kernel_release(), events_str(events), flag, bit,
		     mode_name[mode]);
	}
	if (e != EINVAL) {
		errno = e;
		err(EXIT_FAILURE, "probe: epoll_ctl(EPOLL_CTL_MOD, %s) failed, but not with EINVAL",
		    events_str(events));
	}
	if (close(epfd) || close(efd))
		err(EXIT_FAILURE, "close");
}

static void setup_source(void)
{
	struct sockaddr_in sin;
	socklen_t len;
	int p[2], fl;

	switch (source) {
	case SRC_PIPE:
		/* blocking write end: a full pipe makes the producer wait */
		if (pipe2(p, O_CLOEXEC))
			err(EXIT_FAILURE, "pipe2");
		fl = fcntl(p[0], F_GETFL);
		if (fl < 0)
			err(EXIT_FAILURE, "fcntl(F_GETFL)");
		if (fcntl(p[0], F_SETFL, fl | O_NONBLOCK))
			err(EXIT_FAILURE, "fcntl(F_SETFL, O_NONBLOCK)");
		src_fd = p[0];
		src_wfd = p[1];
		break;
	case SRC_EVENTFD:
		src_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (src_fd < 0)
			err(EXIT_FAILURE, "eventfd");
		src_wfd = src_fd;
		break;
	case SRC_TCP:
		src_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
				SOCK_CLOEXEC, 0);
		if (src_fd < 0)
			err(EXIT_FAILURE, "socket(AF_INET, SOCK_STREAM)");
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin.sin_port = 0;
		if (bind(src_fd, (struct sockaddr *)&sin, sizeof(sin)))
			err(EXIT_FAILURE, "bind(127.0.0.1:0)");
		if (listen(src_fd, LISTEN_BACKLOG))
			err(EXIT_FAILURE, "listen");
		len = sizeof(src_addr);
		if (getsockname(src_fd, (struct sockaddr *)&src_addr, &len))
			err(EXIT_FAILURE, "getsockname");
		break;
	default:
		abort();
	}
}

/*
 * Produce one event.  Returns true if it was produced; only a failed tcp
 * connect() is not fatal (the run reports the connect()s that succeeded).
 */
static bool produce(unsigned long *connect_failed, int *connect_errno)
{
	static const uint64_t one = 1;
	static const struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	const char byte = 'e';
	ssize_t n;
	int fd, ret;

	switch (source) {
	case SRC_PIPE:
		do {
			n = write(src_wfd, &byte, 1);
		} while (n < 0 && errno == EINTR);
		if (n != 1)
			err(EXIT_FAILURE, "write(pipe)");
		return true;
	case SRC_EVENTFD:
		do {
			n = write(src_wfd, &one, sizeof(one));
		} while (n < 0 && errno == EINTR);
		if (n != sizeof(one))
			err(EXIT_FAILURE, "write(eventfd)");
		return true;
	case SRC_TCP:
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			err(EXIT_FAILURE, "socket(AF_INET, SOCK_STREAM)");
		if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)))
			err(EXIT_FAILURE, "setsockopt(SO_LINGER)");
		do {
			ret = connect(fd, (struct sockaddr *)&src_addr,
				      sizeof(src_addr));
		} while (ret && errno == EINTR);
		if (ret) {
			if (!(*connect_failed)++)
				*connect_errno = errno;
		}
		if (close(fd))
			err(EXIT_FAILURE, "close");
		return ret == 0;
	default:
		abort();
	}
}

/*
 * One non-blocking consume attempt.  Returns the number of events taken
 * (>= 1), 0 if there was nothing (EAGAIN), or -1 with errno set.
 */
static long consume(const char **call)
{
	char buf[PIPE_READ_MAX];
	uint64_t val;
	ssize_t n;
	int fd;

	switch (source) {
	case SRC_PIPE:
		*call = "read(pipe)";
		do {
			n = read(src_fd, buf, sizeof(buf));
		} while (n < 0 && errno == EINTR);
		if (n > 0)
			return n;
		if (n == 0) {
			errno = EPIPE;	/* EOF: the write end cannot be closed */
			return -1;
		}
		break;
	case SRC_EVENTFD:
		*call = "read(eventfd)";
		do {
			n = read(src_fd, &val, sizeof(val));
		} while (n < 0 && errno == EINTR);
		if (n == sizeof(val))
			return (long)val;
		if (n >= 0) {
			errno = EIO;
			return -1;
		}
		break;
	case SRC_TCP:
		*call = "accept4";
		do {
			fd = accept4(src_fd, NULL, NULL,
				     SOCK_NONBLOCK | SOCK_CLOEXEC);
		} while (fd < 0 && errno == EINTR);
		if (fd >= 0) {
			*call = "close(accepted socket)";
			return close(fd) ? -1 : 1;
		}
		/* taken off the queue, already dead: still one event */
		if (errno == ECONNABORTED)
			return 1;
		break;
	default:
		abort();
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	return -1;
}

/* Voluntary context switches of the calling thread so far. */
static int thread_nvcsw(long *nvcsw)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	*nvcsw = ru.ru_nvcsw;
	return 0;
}

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	const char *call = "epoll_wait";
	unsigned long wakeups = 0, consumed = 0, wasted = 0;
	long got, csw0, csw1;
	int n;

	n = pthread_barrier_wait(&start_barrier);
	if (n && n != PTHREAD_BARRIER_SERIAL_THREAD) {
		errno = n;
		call = "pthread_barrier_wait";
		goto fail;
	}
	call = "getrusage(RUSAGE_THREAD)";
	if (thread_nvcsw(&csw0))
		goto fail;
	for (;;) {
		n = epoll_wait(w->epfd, &w->ev, 1, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			call = "epoll_wait";
			goto fail;
		}
		if (n == 0)
			continue;
		if (w->ev.data.u64 == TAG_STOP)
			break;
		wakeups++;
		got = consume(&call);
		if (got < 0)
			goto fail;
		if (got > 0)
			consumed += got;
		else
			wasted++;
		__atomic_store_n(&w->wakeups, wakeups, __ATOMIC_RELAXED);
		__atomic_store_n(&w->wasted, wasted, __ATOMIC_RELAXED);
		__atomic_store_n(&w->consumed, consumed, __ATOMIC_RELEASE);
	}
	call = "getrusage(RUSAGE_THREAD)";
	if (thread_nvcsw(&csw1))
		goto fail;
	w->sleeps = csw1 - csw0;
	return NULL;
fail:
	w->error = errno;
	w->failed_call = call;
	return NULL;
}

static unsigned long total_consumed(void)
{
	unsigned long sum = 0;
	unsigned int i;

	for (i = 0; i < nthreads; i++)
		sum += __atomic_load_n(&waiters[i].consumed, __ATOMIC_ACQUIRE);
	return sum;
}

static double now_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		err(EXIT_FAILURE, "clock_gettime(CLOCK_MONOTONIC)");
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_us(unsigned long us)
{
	struct timespec ts = {
		.tv_sec = us / 1000000,
		.tv_nsec = (us % 1000000) * 1000,
	};

	while (nanosleep(&ts, &ts))
		if (errno != EINTR)
			err(EXIT_FAILURE, "nanosleep");
}

/* fds: per thread an epoll instance, plus the sources, stop and stdio. */
static void raise_nofile(void)
{
	rlim_t need = (rlim_t)nthreads + 32;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		err(EXIT_FAILURE, "getrlimit(RLIMIT_NOFILE)");
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rl.rlim_cur = need;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
			rl.rlim_max = need;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			err(EXIT_FAILURE, "setrlimit(RLIMIT_NOFILE, %llu)",
			    (unsigned long long)need);
	}
}

static void start_threads(void)
{
	uint32_t events = mode_events();
	pthread_attr_t attr;
	unsigned int i;
	int ret;

	ret = posix_memalign((void **)&waiters, CACHELINE,
			     nthreads * sizeof(*waiters));
	if (ret) {
		errno = ret;
		err(EXIT_FAILURE, "posix_memalign");
	}
	memset(waiters, 0, nthreads * sizeof(*waiters));

	stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (stop_fd < 0)
		err(EXIT_FAILURE, "eventfd(stop)");

	/*
	 * All instances are set up here, in thread order, so that a mode the
	 * kernel refuses fails before any thread exists.  The order of the
	 * ADDs is the order of the entries on the source's wait queue.
	 */
	for (i = 0; i < nthreads; i++) {
		struct waiter *w = &waiters[i];

		w->id = i;
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (w->epfd < 0)
			err(EXIT_FAILURE, "epoll_create1 (thread %u)", i);
		ctl_add(w->epfd, src_fd, events, TAG_SOURCE, source_name[source]);
		ctl_add(w->epfd, stop_fd, EPOLLIN, TAG_STOP, "stop eventfd");
	}

	ret = pthread_barrier_init(&start_barrier, NULL, nthreads + 1);
	if (ret) {
		errno = ret;
		err(EXIT_FAILURE, "pthread_barrier_init");
	}
	ret = pthread_attr_init(&attr);
	if (!ret)
		ret = pthread_attr_setstacksize(&attr, THREAD_STACK);
	if (ret) {
		errno = ret;
		err(EXIT_FAILURE, "pthread_attr");
	}
	for (i = 0; i < nthreads; i++) {
		ret = pthread_create(&waiters[i].thread, &attr, waiter_fn,
				     &waiters[i]);
		if (ret) {
			/* the threads already made wait on the barrier */
			errno = ret;
			err(EXIT_FAILURE, "pthread_create (thread %u of %u)",
			    i, nthreads);
		}
	}
	ret = pthread_attr_destroy(&attr);
	if (ret) {
		errno = ret;
		err(EXIT_FAILURE, "pthread_attr_destroy");
	}
	ret = pthread_barrier_wait(&start_barrier);
	if (ret && ret != PTHREAD_BARRIER_SERIAL_THREAD) {
		errno = ret;
		err(EXIT_FAILURE, "pthread_barrier_wait");
	}
}

static void stop_threads(void)
{
	static const uint64_t one = 1;
	unsigned int i;
	ssize_t n;
	int ret;

	/* level triggered and never read: every instance sees it */
	n = write(stop_fd, &one, sizeof(one));
	if (n != sizeof(one))
		err(EXIT_FAILURE, "write(stop eventfd)");
	for (i = 0; i < nthreads; i++) {
		ret = pthread_join(waiters[i].thread, NULL);
		if (ret) {
			errno = ret;
			err(EXIT_FAILURE, "pthread_join (thread %u)", i);
		}
	}
	ret = pthread_barrier_destroy(&start_barrier);
	if (ret) {
		errno = ret;
		err(EXIT_FAILURE, "pthread_barrier_destroy");
	}
}

static void write_dist(FILE *f)
{
	unsigned int i;

	for (i = 0; i < nthreads; i++)
		fprintf(f, "%u %lu %lu\n", i, waiters[i].consumed,
			waiters[i].wakeups);
	if (fflush(f) || ferror(f))
		err(EXIT_FAILURE, "write %s", dist_path);
	if (fclose(f))
		err(EXIT_FAILURE, "close %s", dist_path);
}

int main(int argc, char **argv)
{
	unsigned long written = 0, consumed, wakeups = 0, wasted = 0;
	unsigned long cmin = ULONG_MAX, cmax = 0, never = 0;
	unsigned long connect_failed = 0, sleeps = 0, j;
	double t0, t1, deadline, sum = 0, sumsq = 0, jain, extra;
	int connect_errno = 0, status = EXIT_SUCCESS;
	long long lost;
	unsigned int i;
	FILE *dist = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(argc, argv);

	if (dist_path) {
		dist = fopen(dist_path, "w");
		if (!dist)
			err(EXIT_FAILURE, "open %s", dist_path);
	}
	raise_nofile();
	probe_wake_mode();
	setup_source();
	start_threads();

	/* Every instance is set up and every thread is past the barrier. */
	t0 = now_s();
	for (j = 0; j < nevents; j++) {
		if (j && interval_us)
			sleep_us(interval_us);
		if (produce(&connect_failed, &connect_errno))
			written++;
	}

	/* Drain: wait until everything written has been consumed. */
	deadline = now_s() + DRAIN_TIMEOUT_S;
	for (;;) {
		consumed = total_consumed();
		t1 = now_s();
		if (consumed >= written || t1 > deadline)
			break;
		sleep_us(DRAIN_POLL_US);
	}
	stop_threads();

	consumed = 0;
	for (i = 0; i < nthreads; i++) {
		const struct waiter *w = &waiters[i];

		consumed += w->consumed;
		wakeups += w->wakeups;
		wasted += w->wasted;
		sleeps += w->sleeps;
		if (!w->wakeups)
			never++;
		if (w->consumed < cmin)
			cmin = w->consumed;
		if (w->consumed > cmax)
			cmax = w->consumed;
		sum += w->consumed;
		sumsq += (double)w->consumed * w->consumed;
		if (w->error) {
			errno = w->error;
			warn("thread %u: %s", i, w->failed_call);
			status = EXIT_FAILURE;
		}
	}
	lost = (long long)written - (long long)consumed;
	jain = sumsq > 0 ? sum * sum / (nthreads * sumsq) : 0;
	extra = written ? (double)wasted / written : 0;

	if (!quiet) {
		printf("# Run summary [PID %d]: mode=%s, source=%s, threads=%u, events=%lu, interval=%luus\n\n",
		       getpid(), mode_name[mode], source_name[source], nthreads,
		       nevents, interval_us);
		for (i = 0; i < nthreads; i++)
			printf("[thread %2u] wakeups: %8lu consumed: %8lu wasted: %8lu sleeps: %8lu\n",
			       i, waiters[i].wakeups, waiters[i].consumed,
			       waiters[i].wasted, waiters[i].sleeps);
		printf("\n# sleeps: %lu, %.2f per event written (voluntary context switches of the waiters)\n",
		       sleeps, written ? (double)sleeps / written : 0);
	}
	printf("wake-result: mode=%s source=%s threads=%u events=%lu consumed=%lu lost=%lld wakeups=%lu wasted=%lu extra_per_event=%.4f never_woken=%lu min=%lu max=%lu jain=%.4f elapsed_s=%.4f\n",
	       mode_name[mode], source_name[source], nthreads, written,
	       consumed, lost, wakeups, wasted, extra, never, cmin, cmax,
	       jain, t1 - t0);

	if (dist)
		write_dist(dist);

	if (connect_failed) {
		errno = connect_errno;
		warn("%lu of %lu connect()s to 127.0.0.1:%u failed, first error",
		     connect_failed, nevents, ntohs(src_addr.sin_port));
		if (!written)
			status = EXIT_FAILURE;
	}
	if (lost) {
		if (lost > 0)
			warnx("lost=%lld: %lld of %lu events written were not consumed within the %d s drain",
			      lost, lost, written, DRAIN_TIMEOUT_S);
		else
			warnx("lost=%lld: %lld more events consumed than written",
			      lost, -lost);
		status = EXIT_FAILURE;
	}

	for (i = 0; i < nthreads; i++)
		if (close(waiters[i].epfd))
			err(EXIT_FAILURE, "close(epoll fd)");
	if (close(src_fd) || (src_wfd >= 0 && src_wfd != src_fd &&
			      close(src_wfd)) || close(stop_fd))
		err(EXIT_FAILURE, "close");
	free(waiters);
	return status;
}
