// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_fuzz - a seeded, bounded fuzzer for epoll_ctl(2) with the
 * EPOLLEXCLUSIVE and EPOLLROUNDROBIN flags, and for epoll_mod_wait(2).
 *
 * Model.  T threads (default 4) each run their own xorshift generator,
 * seeded from the run's seed and the thread index, and issue random
 * calls against one shared pool of file descriptors until a deadline
 * (-d, or FUZZ_SECS) or a call budget (-n) runs out:
 *
 *  - epoll_ctl() with random epfd, op, fd, event pointer and event bits,
 *    EPOLLEXCLUSIVE and EPOLLROUNDROBIN included;
 *  - epoll_mod_wait() with random flags, counts, command arrays, wait
 *    specs, clocks, timeouts, signal masks and sigsetsizes;
 *  - epoll_wait() with a zero timeout, to drain and check reported bits;
 *  - writes and reads on the pool, so that waits find events;
 *  - "recycle": close a pool entry and open a new one of a random kind
 *    (pipe end, eventfd, epoll fd, unix socket, TCP listener, /dev/null)
 *    while other threads may be using the old number.
 *
 * A signal thread sends SIGUSR1 to random workers; they keep it blocked,
 * so it only lands when a random wait mask unblocks it (EINTR).
 *
 * Topology (style of filesystems/epoll/epoll_wakeup_test.c; any arrow
 * may name a closed or reused fd at any time):
 *
 *      t0   t1   t2   t3        (ctl) (mw) (ew) read/write, recycle
 *        \   |    |   /
 *   e0 e1 e2 e3 e4 e5           pool[0..5]: always epoll fds
 *     \  |  ...  |  /   \       any pool fd may be ADDed to any eN,
 *   s6 s7 ........ s23   eN     epoll fds too (nesting, ELOOP)
 *                               pool[6..23]: (p)ipe end, (e)ventfd,
 *                               (E)poll, (u)nix dgram, (l)isten TCP,
 *                               /dev/null (no poll: EPERM)
 *      main: tgkill(SIGUSR1) -> t0..t3, every 2 ms
 *
 * Pointers come from a fixed set of classes: valid, NULL, unmapped,
 * read-only, straddling the end of a mapping, misaligned and kernel
 * addresses.  Counts include 0, 1, limits, limit + 1, negative values,
 * INT_MAX and values whose byte size wraps.
 *
 * What is checked, for every call:
 *  - the return is a success or -1 with an errno from the set the man
 *    page allows for that call (epoll_ctl(2), epoll_mod_wait(2));
 *  - argument errors that do not depend on the racing pool are exact:
 *    flags != 0, a bad ncmds, or an unusable cmds array give EINVAL or
 *    EFAULT as documented, in the documented order;
 *  - epoll_mod_wait()'s error fields: a call that fails before running
 *    a command leaves every field as it was; a failed command has
 *    -errno in its field, the commands before it 0 and the ones after it
 *    untouched; a success or a failed wait has 0 in every field;
 *  - a wait returns at most maxevents events, and no reported event has
 *    a bit other than poll bits (never EPOLLEXCLUSIVE, EPOLLROUNDROBIN,
 *    EPOLLET, EPOLLONESHOT or EPOLLWAKEUP).
 * Crashes, splats and hangs are the harness' job: the guest fails on any
 * console splat and on a missing exit status; an alarm here ends a hung
 * run with a message.
 *
 * Caveats.  The seed fixes every thread's sequence of calls, not how the
 * threads interleave, so a replay (-s SEED) repeats the inputs but not
 * always the race; -t 1 makes a replay exact up to timing.  Valid wait
 * timeouts are at most 1 ms and never "forever", so that the run stays
 * bounded; invalid ones are tried freely.
 *
 * Options:
 *   -s SEED   seed (default: time and pid); printed in the output
 *   -d SECS   run time (default 6, or $FUZZ_SECS)
 *   -n CALLS  stop each thread after CALLS calls (default: no limit)
 *   -t N      worker threads (default 4, at most 16)
 *   -v        print every violation (default: the first 20)
 *
 * Output: TAP 13; "# fuzz: ..." is the one machine-readable summary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "epoll_uapi.h"
#include "epoll_mod_wait.h"
#include "kselftest.h"
#include "thread_util.h"

#define POOL_SIZE	24
#define POOL_EPOLLS	6	/* the first entries are always epoll fds */
#define MAX_THREADS	16
#define NR_EVENTS	64
#define MAX_VIOLATIONS	20
#define SENTINEL	0x5a5a5a5a

/* Bits a wait may report: poll bits only, never epoll's own flags. */
#define REPORTABLE_BITS	0x3fffU

/* --- randomness ------------------------------------------------------ */

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	/* xorshift64*: small, good enough, identical on every ABI */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

static unsigned int below(struct rng *r, unsigned int n)
{
	return (unsigned int)(rnd(r) % n);
}

static bool chance(struct rng *r, unsigned int percent)
{
	return below(r, 100) < percent;
}

/* --- the shared pool of file descriptors ---------------------------- */

enum fd_kind {
	K_PIPE_RD, K_PIPE_WR, K_EVENTFD, K_EPOLL, K_UNIX, K_TCP_LISTEN,
	K_DEVNULL, NR_KINDS
};

/*
 * Each slot holds an fd and, for pipes and socket pairs, the other end.
 * Only one thread recycles a slot at a time (@busy), so every fd the
 * fuzzer opens is closed exactly once; other threads may still hold the
 * old number while it is closed and reused, which is the point.
 */
struct slot {
	atomic_int fd;
	atomic_int peer;
	atomic_bool busy;
};

static atomic_ulong open_failures;

static struct slot pool[POOL_SIZE];

static int open_kind(enum fd_kind kind, int *peer)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fds[2], fd;

	*peer = -1;
	switch (kind) {
	case K_PIPE_RD:
	case K_PIPE_WR:
		if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
			return -1;
		*peer = fds[kind == K_PIPE_RD];
		return fds[kind == K_PIPE_WR];
	case K_EVENTFD:
		return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	case K_EPOLL:
		return epoll_create1(EPOLL_CLOEXEC);
	case K_UNIX:
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			       0, fds))
			return -1;
		*peer = fds[1];
		return fds[0];
	case K_TCP_LISTEN:
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
		    listen(fd, 8)) {
			close(fd);
			return -1;
		}
		return fd;
	case K_DEVNULL:
	default:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	}
}

static void recycle(struct rng *r, unsigned int i)
{
	int old, old_peer, fd, peer;

	if (atomic_exchange(&pool[i].busy, true))
		return;		/* another thread is recycling it */
	old = atomic_exchange(&pool[i].fd, -1);
	old_peer = atomic_exchange(&pool[i].peer, -1);
	if (old >= 0)
		close(old);
	if (old_peer >= 0)
		close(old_peer);
	fd = open_kind(i < POOL_EPOLLS ? K_EPOLL : below(r, NR_KINDS), &peer);
	if (fd < 0)
		atomic_fetch_add(&open_failures, 1);
	atomic_store(&pool[i].peer, peer);
	atomic_store(&pool[i].fd, fd);
	atomic_store(&pool[i].busy, false);
}

/* Any fd a call may name: a pool entry, a peer, or a bad number. */
static int pick_fd(struct rng *r)
{
	switch (below(r, 24)) {
	case 0:
		return -1;
	case 1:
		return INT_MAX;
	case 2:
		return 1000 + below(r, 100);		/* not open */
	case 3:
		return atomic_load(&pool[below(r, POOL_SIZE)].peer);
	default:
		return atomic_load(&pool[below(r, POOL_SIZE)].fd);
	}
}

/* An epoll fd, most of the time. */
static int pick_epfd(struct rng *r)
{
	if (chance(r, 85))
		return atomic_load(&pool[below(r, POOL_EPOLLS)].fd);
	return pick_fd(r);
}

/* --- pointer classes ------------------------------------------------- */

enum ptr_class {
	P_VALID, P_NULL, P_UNMAPPED, P_READONLY, P_STRADDLE, P_MISALIGNED,
	P_KERNEL, NR_PTR_CLASSES
};

static const char *const ptr_name[] = {
	"valid", "NULL", "unmapped", "read-only", "straddle", "misaligned",
	"kernel"
};

static long page_size;
static char *ro_page;		/* PROT_READ */
static char *none_page;		/* PROT_NONE */

/*
 * Per-thread buffers sit right before a PROT_NONE guard page, so that a
 * "straddle" pointer is readable for its first bytes only.
 */
struct region {
	char *base;
	size_t size;		/* usable bytes before the guard */
};

static int map_region(struct region *rg, size_t size)
{
	size_t len = (size + page_size - 1) & ~(page_size - 1);
	char *p;

	p = mmap(NULL, len + page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (mprotect(p + len, page_size, PROT_NONE))
		return -1;
	rg->base = p;
	rg->size = len;
	return 0;
}

/* A pointer of class @c for an object of @objsz bytes in @rg. */
static void *class_ptr(enum ptr_class c, struct region *rg, size_t objsz)
{
	switch (c) {
	case P_NULL:
		return NULL;
	case P_UNMAPPED:
		return none_page;
	case P_READONLY:
		return ro_page;
	case P_STRADDLE:
		return rg->base + rg->size - objsz / 2;
	case P_MISALIGNED:
		return rg->base + 1;
	case P_KERNEL:
#ifdef __x86_64__
		return (void *)0xffffffff81000000UL;
#else
		return (void *)0xfffff000UL;	/* top page: never user memory */
#endif
	case P_VALID:
	default:
		return rg->base;
	}
}

static enum ptr_class pick_class(struct rng *r, unsigned int bad_percent)
{
	if (!chance(r, bad_percent))
		return chance(r, 10) ? P_MISALIGNED : P_VALID;
	return 1 + below(r, NR_PTR_CLASSES - 1);
}

/* Pointers the kernel must refuse for a read or write of any size. */
static bool class_faults(enum ptr_class c)
{
	return c == P_NULL || c == P_UNMAPPED || c == P_KERNEL;
}

/* --- random arguments ---------------------------------------------- */

static uint32_t pick_events(struct rng *r)
{
	static const uint32_t bits[] = {
		EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLERR, EPOLLHUP, EPOLLRDHUP,
		EPOLLET, EPOLLONESHOT, EPOLLWAKEUP, EPOLLEXCLUSIVE,
		EPOLLROUNDROBIN,
	};
	uint32_t ev = 0;
	unsigned int i;

	if (chance(r, 5))
		return (uint32_t)rnd(r);
	for (i = 0; i < ARRAY_SIZE(bits); i++)
		if (chance(r, i < 2 ? 50 : 20))
			ev |= bits[i];
	/* favour the combinations that are valid, so that items exist */
	if (chance(r, 40))
		ev = EPOLLIN | EPOLLEXCLUSIVE |
		     (chance(r, 50) ? EPOLLROUNDROBIN : 0) |
		     (chance(r, 20) ? EPOLLET : 0);
	return ev;
}

static int pick_op(struct rng *r)
{
	switch (below(r, 40)) {
	case 0:
		return (int)rnd(r);
	case 1:
		return 0;
	case 2:
		return 4;
	default:
		return 1 + below(r, 3);		/* ADD, DEL, MOD */
	}
}

/* ncmds and maxevents: mostly small, sometimes at or past the limits. */
static int pick_count(struct rng *r, int limit)
{
	switch (below(r, 40)) {
	case 0:
		return 0;
	case 1:
		return -1;
	case 2:
		return INT_MIN;
	case 3:
		return INT_MAX;
	case 4:
		return limit;
	case 5:
		return limit + 1;
	case 6:
		return (int)(INT_MAX / 28 + 1);	/* byte size wraps in 32 bits */
	case 7:
		return (int)rnd(r);
	default:
		return 1 + below(r, 8);
	}
}

static int pick_clock(struct rng *r)
{
	static const int clocks[] = {
		CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME,
		CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
		CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE, -1, INT_MAX, 16,
	};

	if (chance(r, 80))
		return clocks[below(r, 3)];
	return clocks[below(r, ARRAY_SIZE(clocks))];
}

static bool clock_valid(int clk)
{
	return clk == CLOCK_MONOTONIC || clk == CLOCK_REALTIME ||
	       clk == CLOCK_BOOTTIME;
}

/* Valid timeouts never exceed 1 ms; invalid ones are anything. */
static void pick_timeout(struct rng *r, struct epoll_mod_timespec *ts)
{
	static const int64_t bad[][2] = {
		{ 0, -1 }, { 0, 1000000000 }, { -1, 1 }, { -2, 0 },
		{ INT64_MIN, 0 }, { 0, INT64_MAX }, { 1, -5 }, { -1, -1 },
	};
	unsigned int i;

	if (chance(r, 85)) {
		ts->tv_sec = 0;
		ts->tv_nsec = chance(r, 30) ? 0 : below(r, 1000000);
		return;
	}
	i = below(r, ARRAY_SIZE(bad));
	ts->tv_sec = bad[i][0];
	ts->tv_nsec = bad[i][1];
}

static bool timeout_valid(const struct epoll_mod_timespec *ts)
{
	if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000)
		return false;
	return ts->tv_sec >= 0 ||
	       (ts->tv_sec == EPOLL_MOD_WAIT_FOREVER && ts->tv_nsec == 0);
}

/* --- errno sets, from the man pages ---------------------------------- */

#define E(x) (1ULL << (x))

static const uint64_t ctl_errnos = E(EBADF) | E(EEXIST) | E(EFAULT) |
	E(EINVAL) | E(ELOOP) | E(ENOENT) | E(ENOMEM) | E(ENOSPC) | E(EPERM);
/* the call's own checks, before any command runs */
static const uint64_t mw_arg_errnos = E(EBADF) | E(EFAULT) | E(EINVAL);
/* a failing command: what epoll_ctl() would return for it */
static const uint64_t mw_cmd_errnos = E(EBADF) | E(EEXIST) | E(EINVAL) |
	E(ELOOP) | E(ENOENT) | E(ENOMEM) | E(ENOSPC) | E(EPERM);
/* the wait, after every command ran */
static const uint64_t mw_wait_errnos = E(EFAULT) | E(EINTR);
static const uint64_t wait_errnos = E(EBADF) | E(EFAULT) | E(EINTR) |
	E(EINVAL);

static bool in_set(uint64_t set, int err)
{
	return err > 0 && err < 64 && (set & E(err));
}

/* --- per-thread state and reporting ------------------------------------ */

enum call_kind { C_CTL, C_MODWAIT, C_WAIT, C_IO, C_RECYCLE, NR_CALLS };

/*
 * The bad-input classes, counted per call that carried one, so that the
 * summary shows what was tried (README.md's table comes from these).
 */
enum bad_class {
	B_CTL_FD_NUMBER, B_CTL_FD_IS_EPFD, B_CTL_OP, B_CTL_EVENT_PTR,
	B_CTL_WAKE_FLAGS, B_CTL_RANDOM_BITS,
	B_MW_EPFD_NUMBER, B_MW_FLAGS, B_MW_NCMDS_NEGATIVE, B_MW_NCMDS_HUGE,
	B_MW_NCMDS_ZERO_CMDS, B_MW_NCMDS_MAX, B_MW_CMDS_PTR, B_MW_CMD_FLAGS,
	B_MW_CMD_OP, B_MW_SPEC_PTR, B_MW_MAXEVENTS, B_MW_EVENTS_PTR,
	B_MW_CLOCKID, B_MW_TIMEOUT, B_MW_SIGMASK_PTR, B_MW_SIGSETSIZE,
	B_MW_SIGMASK_RANDOM, B_SIGNAL_SENT, NR_BAD
};

static const char *const bad_name[NR_BAD] = {
	[B_CTL_FD_NUMBER] = "epoll_ctl.fd_or_epfd_not_open",
	[B_CTL_FD_IS_EPFD] = "epoll_ctl.fd_is_epfd",
	[B_CTL_OP] = "epoll_ctl.op_invalid",
	[B_CTL_EVENT_PTR] = "epoll_ctl.event_ptr_bad",
	[B_CTL_WAKE_FLAGS] = "epoll_ctl.exclusive_rr_misuse",
	[B_CTL_RANDOM_BITS] = "epoll_ctl.events_random_32bit",
	[B_MW_EPFD_NUMBER] = "epoll_mod_wait.epfd_not_open",
	[B_MW_FLAGS] = "epoll_mod_wait.flags_nonzero",
	[B_MW_NCMDS_NEGATIVE] = "epoll_mod_wait.ncmds_negative",
	[B_MW_NCMDS_HUGE] = "epoll_mod_wait.ncmds_over_max_or_wrapping",
	[B_MW_NCMDS_ZERO_CMDS] = "epoll_mod_wait.ncmds_0_with_cmds",
	[B_MW_NCMDS_MAX] = "epoll_mod_wait.ncmds_exactly_max",
	[B_MW_CMDS_PTR] = "epoll_mod_wait.cmds_ptr_bad",
	[B_MW_CMD_FLAGS] = "epoll_mod_wait.cmd_flags_nonzero",
	[B_MW_CMD_OP] = "epoll_mod_wait.cmd_op_invalid",
	[B_MW_SPEC_PTR] = "epoll_mod_wait.spec_ptr_bad",
	[B_MW_MAXEVENTS] = "epoll_mod_wait.maxevents_bad",
	[B_MW_EVENTS_PTR] = "epoll_mod_wait.events_ptr_bad",
	[B_MW_CLOCKID] = "epoll_mod_wait.clockid_bad",
	[B_MW_TIMEOUT] = "epoll_mod_wait.timeout_bad",
	[B_MW_SIGMASK_PTR] = "epoll_mod_wait.sigmask_ptr_bad",
	[B_MW_SIGSETSIZE] = "epoll_mod_wait.sigsetsize_bad",
	[B_MW_SIGMASK_RANDOM] = "epoll_mod_wait.sigmask_random",
	[B_SIGNAL_SENT] = "signals_sent",
};

struct worker {
	pthread_t thread;
	pid_t tid;
	unsigned int idx;
	struct rng rng;
	struct region cmds;		/* EPOLL_MOD_MAX_CMDS + 1 commands */
	struct region events;		/* NR_EVENTS events */
	struct region misc;		/* a spec, an epoll_event, a sigset */
	unsigned long calls[NR_CALLS];
	unsigned long errnos[64];
	unsigned long budget;		/* calls, 0 for no limit */
	unsigned long bad[NR_BAD];
	unsigned long successes, events_seen, cmds_run, eintr;
};

static struct worker workers[MAX_THREADS];
static unsigned long signals_sent;
static atomic_ulong violations;
static atomic_ulong violations_by[4];
static atomic_bool stop;
static bool verbose;
static uint64_t seed;

static void note(struct worker *w, enum bad_class b, bool cond)
{
	if (cond)
		w->bad[b]++;
}

static bool bad_ptr(enum ptr_class c)
{
	return c != P_VALID && c != P_MISALIGNED;
}

static bool fd_not_open(int fd)
{
	return fd < 0 || fd >= 1000;
}

/* An EPOLLEXCLUSIVE/EPOLLROUNDROBIN use that the flags' rules refuse. */
static bool wake_flags_misused(uint32_t ev, int op)
{
	const uint32_t ok = EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP |
			    EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE |
			    EPOLLROUNDROBIN;

	if (!(ev & (EPOLLEXCLUSIVE | EPOLLROUNDROBIN)))
		return false;
	return !(ev & EPOLLEXCLUSIVE) || op != EPOLL_CTL_ADD || (ev & ~ok);
}

enum violation {
	V_ERRNO,	/* errno outside the documented set */
	V_EXACT,	/* wrong errno for a deterministic argument error */
	V_FIELDS,	/* error fields inconsistent with the outcome */
	V_EVENTS,	/* too many events or non-poll bits reported */
};

static __printf(3, 4) void violation(struct worker *w, enum violation v,
				     const char *fmt, ...)
{
	unsigned long n = atomic_fetch_add(&violations, 1);
	char buf[512];
	va_list ap;

	atomic_fetch_add(&violations_by[v], 1);
	if (n >= MAX_VIOLATIONS && !verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ksft_print_msg("VIOLATION seed=%llu thread=%u call=%lu: %s\n",
		       (unsigned long long)seed, w->idx,
		       w->calls[C_CTL] + w->calls[C_MODWAIT] + w->calls[C_WAIT],
		       buf);
}

static void count_errno(struct worker *w, int ret, int err)
{
	if (ret >= 0)
		w->successes++;
	else if (err > 0 && err < 64)
		w->errnos[err]++;
}

static void check_events(struct worker *w, const char *call,
			 const struct epoll_event *ev, int n, int maxevents)
{
	int i;

	if (n > maxevents)
		violation(w, V_EVENTS, "%s returned %d > maxevents %d", call,
			  n, maxevents);
	for (i = 0; i < n && i < NR_EVENTS; i++)
		if (ev[i].events & ~REPORTABLE_BITS)
			violation(w, V_EVENTS, "%s reported events %#x",
				  call, ev[i].events);
	w->events_seen += n;
}

/* --- epoll_ctl -------------------------------------------------------- */

static void fuzz_ctl(struct worker *w)
{
	struct rng *r = &w->rng;
	enum ptr_class pc = pick_class(r, 10);
	struct epoll_event *ev = class_ptr(pc, &w->misc, sizeof(*ev));
	int epfd = pick_epfd(r), op = pick_op(r), fd = pick_fd(r), ret, err;

	if (chance(r, 5))
		fd = epfd;
	if (pc == P_VALID || pc == P_MISALIGNED || pc == P_STRADDLE) {
		/* a straddling event is half writable: fill what can be */
		uint32_t e = pick_events(r);

		memcpy(ev, &e, sizeof(e));
	}
	w->calls[C_CTL]++;
	note(w, B_CTL_FD_NUMBER, fd_not_open(fd) || fd_not_open(epfd));
	note(w, B_CTL_FD_IS_EPFD, fd == epfd);
	note(w, B_CTL_OP, op < EPOLL_CTL_ADD || op > EPOLL_CTL_MOD);
	note(w, B_CTL_EVENT_PTR, op != EPOLL_CTL_DEL && bad_ptr(pc));
	if (!bad_ptr(pc) && op != EPOLL_CTL_DEL) {
		note(w, B_CTL_WAKE_FLAGS, wake_flags_misused(ev->events, op));
		note(w, B_CTL_RANDOM_BITS, ev->events & ~(REPORTABLE_BITS |
			EPOLLET | EPOLLONESHOT | EPOLLWAKEUP | EPOLLEXCLUSIVE |
			EPOLLROUNDROBIN));
	}
	ret = epoll_ctl(epfd, op, fd, ev);
	err = errno;
	count_errno(w, ret, err);
	if (ret != 0 && !(ret == -1 && in_set(ctl_errnos, err)))
		violation(w, V_ERRNO, "epoll_ctl(%d, %d, %d, %s) = %d errno %d (%s)",
			  epfd, op, fd, ptr_name[pc], ret, err, strerror(err));
}

/* --- epoll_mod_wait ----------------------------------------------------- */

struct mw_call {
	int epfd, flags, ncmds, cmds_n;	/* cmds_n: commands we can inspect */
	enum ptr_class cmds_class, spec_class, events_class, mask_class;
	bool spec_used;
	struct epoll_mod_cmd *cmds;
	struct epoll_wait_spec *spec;
};

static void fill_cmds(struct worker *w, struct epoll_mod_cmd *c, int n)
{
	struct rng *r = &w->rng;
	int i;

	for (i = 0; i < n; i++) {
		c[i].flags = chance(r, 2) ? (int)rnd(r) : 0;
		c[i].op = pick_op(r);
		c[i].fd = pick_fd(r);
		c[i].events = pick_events(r);
		c[i].data = rnd(r);
		c[i].error = SENTINEL;
	}
}

static const size_t bad_sigsetsize[] = { 0, 4, 16, 128, (size_t)-1 };

static void fill_spec(struct worker *w, struct mw_call *m)
{
	struct rng *r = &w->rng;
	struct epoll_wait_spec *s = m->spec;
	uint64_t *mask = (uint64_t *)(w->misc.base + 256);

	s->maxevents = chance(r, 80) ? 1 + (int)below(r, NR_EVENTS) :
				       pick_count(r, INT_MAX / 12);
	m->events_class = pick_class(r, 10);
	s->events = class_ptr(m->events_class, &w->events,
			      NR_EVENTS * sizeof(struct epoll_event));
	if (m->events_class == P_STRADDLE)	/* first slot only writable */
		s->events = (void *)(w->events.base + w->events.size -
				     sizeof(struct epoll_event));
	s->clockid = pick_clock(r);
	pick_timeout(r, &s->timeout);
	s->sigsetsize = EPOLL_MOD_SIGSETSIZE;
	m->mask_class = P_NULL;
	s->sigmask = NULL;
	if (chance(r, 40)) {
		m->mask_class = pick_class(r, 10);
		*mask = rnd(r);
		s->sigmask = class_ptr(m->mask_class, &w->misc, 8);
		if (m->mask_class == P_VALID)
			s->sigmask = mask;
		if (chance(r, 10))
			s->sigsetsize = bad_sigsetsize[below(r, ARRAY_SIZE(bad_sigsetsize))];
	}
}

/*
 * Errors that do not depend on the pool, in the documented check order:
 * flags, then ncmds and cmds.  Returns -errno for the error the call
 * must fail with, or 0 when the outcome depends on the fds.
 */
static int mw_expected(const struct mw_call *m)
{
	if (m->flags)
		return -EINVAL;
	if (m->ncmds < 0 || m->ncmds > EPOLL_MOD_MAX_CMDS)
		return -EINVAL;
	if (m->ncmds == 0)
		return m->cmds ? -EINVAL : 0;
	if (class_faults(m->cmds_class) || m->cmds_class == P_READONLY ||
	    m->cmds_class == P_STRADDLE)
		return -EFAULT;
	return 0;
}

/* Where the error fields say the call stopped: see the header comment. */
static void check_fields(struct worker *w, const struct mw_call *m, int ret,
			 int err)
{
	int i, ran = 0, failed = -1;

	for (i = 0; i < m->cmds_n; i++) {
		int e = m->cmds[i].error;

		if (e == SENTINEL)
			break;
		if (e != 0) {
			failed = i;
			i++;
			break;
		}
		ran++;
	}
	for (; i < m->cmds_n; i++)
		if (m->cmds[i].error != SENTINEL) {
			violation(w, V_FIELDS, "command %d written after the batch stopped (%d)",
				  i, m->cmds[i].error);
			return;
		}
	w->cmds_run += ran + (failed >= 0);
	if (ret >= 0) {
		if (ran != m->cmds_n)
			violation(w, V_FIELDS, "success but %d of %d commands ran",
				  ran, m->cmds_n);
		return;
	}
	if (failed >= 0) {
		if (m->cmds[failed].error != -err)
			violation(w, V_FIELDS, "command %d error %d, call errno %d",
				  failed, m->cmds[failed].error, err);
		else if (!in_set(mw_cmd_errnos, err))
			violation(w, V_ERRNO, "command %d failed with errno %d (%s)",
				  failed, err, strerror(err));
		return;
	}
	if (ran == 0 && in_set(mw_arg_errnos, err))
		return;		/* refused before any command ran */
	if (ran == m->cmds_n && in_set(mw_wait_errnos, err) && m->spec_used)
		return;		/* every command ran, then the wait failed */
	violation(w, V_FIELDS, "errno %d (%s) with %d of %d commands run, none failed",
		  err, strerror(err), ran, m->cmds_n);
}

static void note_modwait(struct worker *w, const struct mw_call *m)
{
	const struct epoll_wait_spec *sp = m->spec;
	int i;

	note(w, B_MW_EPFD_NUMBER, fd_not_open(m->epfd));
	note(w, B_MW_FLAGS, m->flags);
	note(w, B_MW_NCMDS_NEGATIVE, m->ncmds < 0);
	note(w, B_MW_NCMDS_HUGE, m->ncmds > EPOLL_MOD_MAX_CMDS);
	note(w, B_MW_NCMDS_ZERO_CMDS, !m->ncmds && m->cmds);
	note(w, B_MW_NCMDS_MAX, m->ncmds == EPOLL_MOD_MAX_CMDS);
	note(w, B_MW_CMDS_PTR, m->ncmds > 0 && bad_ptr(m->cmds_class));
	for (i = 0; i < m->cmds_n; i++) {
		note(w, B_MW_CMD_FLAGS, m->cmds[i].flags);
		note(w, B_MW_CMD_OP, m->cmds[i].op < EPOLL_CTL_ADD ||
				     m->cmds[i].op > EPOLL_CTL_MOD);
	}
	note(w, B_MW_SPEC_PTR, m->spec_class != P_NULL && bad_ptr(m->spec_class));
	if (!m->spec_used)
		return;
	note(w, B_MW_MAXEVENTS, sp->maxevents <= 0 ||
				sp->maxevents > INT_MAX / 12);
	note(w, B_MW_EVENTS_PTR, bad_ptr(m->events_class));
	note(w, B_MW_CLOCKID, !clock_valid(sp->clockid));
	note(w, B_MW_TIMEOUT, !timeout_valid(&sp->timeout));
	note(w, B_MW_SIGMASK_PTR, sp->sigmask && bad_ptr(m->mask_class));
	note(w, B_MW_SIGSETSIZE, sp->sigmask &&
				 sp->sigsetsize != EPOLL_MOD_SIGSETSIZE);
	note(w, B_MW_SIGMASK_RANDOM, sp->sigmask && !bad_ptr(m->mask_class));
}

/* A call refused on its arguments must not have run any command. */
static void untouched(struct worker *w, const struct mw_call *m)
{
	int i;

	for (i = 0; i < m->cmds_n; i++)
		if (m->cmds[i].error != SENTINEL) {
			violation(w, V_FIELDS, "refused call (flags %#x, ncmds %d) wrote command %d's error (%d)",
				  m->flags, m->ncmds, i, m->cmds[i].error);
			return;
		}
}

static void fuzz_modwait(struct worker *w)
{
	struct rng *r = &w->rng;
	struct mw_call m = { 0 };
	int ret, err, want;

	m.epfd = pick_epfd(r);
	m.flags = chance(r, 3) ? (int)rnd(r) | 1 : 0;
	m.ncmds = chance(r, 3) ? EPOLL_MOD_MAX_CMDS : pick_count(r, EPOLL_MOD_MAX_CMDS);
	m.cmds_class = pick_class(r, 8);
	m.cmds = class_ptr(m.cmds_class, &w->cmds,
			   (m.ncmds > 0 ? m.ncmds : 1) * sizeof(*m.cmds));
	if (m.ncmds == 0 && chance(r, 70))
		m.cmds = NULL;
	if (m.cmds_class == P_STRADDLE && m.ncmds > 0 &&
	    m.ncmds <= EPOLL_MOD_MAX_CMDS)	/* last command half mapped */
		m.cmds = (void *)(w->cmds.base + w->cmds.size -
				  m.ncmds * sizeof(*m.cmds) + sizeof(*m.cmds) / 2);
	if (m.cmds && (m.cmds_class == P_VALID || m.cmds_class == P_MISALIGNED)) {
		m.cmds_n = m.ncmds > 0 && m.ncmds <= EPOLL_MOD_MAX_CMDS ? m.ncmds : 1;
		fill_cmds(w, m.cmds, m.cmds_n);
	}
	m.spec_class = chance(r, 30) ? P_NULL : pick_class(r, 6);
	m.spec = class_ptr(m.spec_class, &w->misc, sizeof(*m.spec));
	if (m.spec_class == P_VALID || m.spec_class == P_MISALIGNED) {
		m.spec_used = true;
		fill_spec(w, &m);
	} else if (m.spec_class == P_STRADDLE) {
		memset(m.spec, 0, sizeof(*m.spec) / 2);
	}

	w->calls[C_MODWAIT]++;
	note_modwait(w, &m);
	ret = epoll_mod_wait(m.epfd, m.flags, m.ncmds, m.cmds, m.spec);
	err = errno;
	count_errno(w, ret, err);
	if (ret < 0 && err == EINTR)
		w->eintr++;

	if (ret < -1 || (ret == -1 && !in_set(mw_arg_errnos | mw_cmd_errnos |
					      mw_wait_errnos, err))) {
		violation(w, V_ERRNO, "epoll_mod_wait(%d, %#x, %d, %s, %s) = %d errno %d (%s)",
			  m.epfd, m.flags, m.ncmds, ptr_name[m.cmds_class],
			  ptr_name[m.spec_class], ret, err, strerror(err));
		return;
	}
	want = mw_expected(&m);
	if (want && !(ret == -1 && err == -want)) {
		violation(w, V_EXACT, "epoll_mod_wait(flags %#x, ncmds %d, cmds %s%s) = %d errno %d, want %s",
			  m.flags, m.ncmds, ptr_name[m.cmds_class],
			  m.cmds ? "" : " (NULL)", ret, ret < 0 ? err : 0,
			  want == -EINVAL ? "EINVAL" : "EFAULT");
		return;
	}
	if (!want && ret >= 0 && m.spec_used &&
	    (!clock_valid(m.spec->clockid) || !timeout_valid(&m.spec->timeout)))
		violation(w, V_EXACT, "wait accepted clock %d timeout {%lld, %lld}",
			  m.spec->clockid, (long long)m.spec->timeout.tv_sec,
			  (long long)m.spec->timeout.tv_nsec);
	if (m.cmds_n && !want && m.ncmds > 0)
		check_fields(w, &m, ret, err);
	else if (m.cmds_n)
		untouched(w, &m);
	if (ret > 0 && m.spec_used && m.events_class == P_VALID)
		check_events(w, "epoll_mod_wait", m.spec->events, ret,
			     m.spec->maxevents);
	else if (ret > 0 && !m.spec_used)
		violation(w, V_EVENTS, "epoll_mod_wait without a spec returned %d", ret);
}

/* --- the rest: plain waits, I/O, recycling ------------------------------ */

static void fuzz_wait(struct worker *w)
{
	struct epoll_event *ev = (struct epoll_event *)w->events.base;
	int epfd = pick_epfd(&w->rng), ret, err;

	w->calls[C_WAIT]++;
	ret = epoll_wait(epfd, ev, NR_EVENTS, 0);
	err = errno;
	count_errno(w, ret, err);
	if (ret < -1 || (ret == -1 && !in_set(wait_errnos, err)))
		violation(w, V_ERRNO, "epoll_wait(%d) = %d errno %d (%s)", epfd,
			  ret, err, strerror(err));
	else if (ret > 0)
		check_events(w, "epoll_wait", ev, ret, NR_EVENTS);
}

static void fuzz_io(struct worker *w)
{
	uint64_t v = 1;
	char buf[256];
	int fd = pick_fd(&w->rng);

	w->calls[C_IO]++;
	if (fd < 0)
		return;
	/* results do not matter: this only makes events come and go */
	if (chance(&w->rng, 55)) {
		if (write(fd, &v, sizeof(v)) < 0)
			errno = 0;
	} else if (read(fd, buf, sizeof(buf)) < 0) {
		errno = 0;
	}
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned long n = 0;
	sigset_t set;

	/* SIGUSR1 lands only where a random wait mask lets it in */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	w->tid = thread_tid();
	while (!atomic_load(&stop) && (!w->budget || n++ < w->budget)) {
		unsigned int dice = below(&w->rng, 100);

		if (dice < 35)
			fuzz_ctl(w);
		else if (dice < 75)
			fuzz_modwait(w);
		else if (dice < 82)
			fuzz_wait(w);
		else if (dice < 97)
			fuzz_io(w);
		else {
			w->calls[C_RECYCLE]++;
			recycle(&w->rng, below(&w->rng, POOL_SIZE));
		}
	}
	return NULL;
}

static void on_usr1(int sig)
{
}

static void on_alarm(int sig)
{
	static const char msg[] = "# epoll_fuzz: hang: the run did not end in time\n";

	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* --- setup, probe, main --------------------------------------------- */

/* The flags and the syscall must exist, or the whole run is a skip. */
static const char *probe(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLROUNDROBIN };
	int ep, rd = -1, wr = -1, ret;

	if (epoll_mod_wait(-1, 0, 0, NULL, NULL) != -1 || errno != EBADF)
		return "no epoll_mod_wait() in this kernel";
	ep = epoll_create1(0);
	if (ep < 0 || open_pipe(&rd, &wr))
		return "cannot create an epoll fd and a pipe";
	ret = epoll_ctl(ep, EPOLL_CTL_ADD, rd, &ev);
	close(ep);
	close(rd);
	close(wr);
	return ret ? "EPOLLEXCLUSIVE | EPOLLROUNDROBIN refused: kernel without the series" : NULL;
}

static int setup(unsigned int nthreads)
{
	unsigned int i;
	char *p;

	page_size = sysconf(_SC_PAGESIZE);
	p = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p, page_size, PROT_READ) ||
	    mprotect(p + page_size, page_size, PROT_NONE))
		return -1;
	ro_page = p;
	none_page = p + page_size;
	for (i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];

		w->idx = i;
		w->rng.s = seed ^ (0x9e3779b97f4a7c15ULL * (i + 1));
		if (!w->rng.s)
			w->rng.s = 1;
		if (map_region(&w->cmds, (EPOLL_MOD_MAX_CMDS + 1) *
				       sizeof(struct epoll_mod_cmd)) ||
		    map_region(&w->events, 2 * NR_EVENTS * sizeof(struct epoll_event)) ||
		    map_region(&w->misc, 1024))
			return -1;
	}
	for (i = 0; i < POOL_SIZE; i++) {
		struct rng r = { seed + i + 1 };

		atomic_init(&pool[i].fd, -1);
		atomic_init(&pool[i].peer, -1);
		atomic_init(&pool[i].busy, false);
		recycle(&r, i);
	}
	return 0;
}

static const char *const errno_names[64] = {
	[EBADF] = "EBADF", [EEXIST] = "EEXIST", [EFAULT] = "EFAULT",
	[EINTR] = "EINTR", [EINVAL] = "EINVAL", [ELOOP] = "ELOOP",
	[ENOENT] = "ENOENT", [ENOMEM] = "ENOMEM", [ENOSPC] = "ENOSPC",
	[EPERM] = "EPERM",
};

static void print_summary(unsigned int nthreads, double secs)
{
	unsigned long calls[NR_CALLS] = { 0 }, errs[64] = { 0 };
	unsigned long ok = 0, evs = 0, cmds = 0, eintr = 0;
	char line[1024];
	int len, e;
	unsigned int i, k;

	for (i = 0; i < nthreads; i++) {
		for (k = 0; k < NR_CALLS; k++)
			calls[k] += workers[i].calls[k];
		for (k = 0; k < 64; k++)
			errs[k] += workers[i].errnos[k];
		ok += workers[i].successes;
		evs += workers[i].events_seen;
		cmds += workers[i].cmds_run;
		eintr += workers[i].eintr;
		ksft_print_msg("thread %u: ctl=%lu modwait=%lu wait=%lu io=%lu recycle=%lu\n",
			       i, workers[i].calls[C_CTL], workers[i].calls[C_MODWAIT],
			       workers[i].calls[C_WAIT], workers[i].calls[C_IO],
			       workers[i].calls[C_RECYCLE]);
	}
	len = snprintf(line, sizeof(line),
		       "fuzz: seed=%llu threads=%u secs=%.1f calls=%lu ctl=%lu modwait=%lu wait=%lu io=%lu recycle=%lu open_failures=%lu ok=%lu cmds_run=%lu events=%lu violations=%lu errno:",
		       (unsigned long long)seed, nthreads, secs,
		       calls[C_CTL] + calls[C_MODWAIT] + calls[C_WAIT],
		       calls[C_CTL], calls[C_MODWAIT], calls[C_WAIT],
		       calls[C_IO], calls[C_RECYCLE],
		       atomic_load(&open_failures), ok, cmds, evs,
		       atomic_load(&violations));
	for (e = 1; e < 64 && len < (int)sizeof(line) - 32; e++)
		if (errs[e])
			len += snprintf(line + len, sizeof(line) - len, " %s=%lu",
					errno_names[e] ? errno_names[e] : "other",
					errs[e]);
	ksft_print_msg("%s\n", line);
	for (k = 0; k < NR_BAD; k++) {
		unsigned long n = 0;

		for (i = 0; i < nthreads; i++)
			n += workers[i].bad[k];
		if (k == B_SIGNAL_SENT)
			n = signals_sent;
		ksft_print_msg("fuzz-class: %s calls=%lu\n", bad_name[k], n);
	}
	ksft_print_msg("fuzz-class: epoll_mod_wait.eintr calls=%lu\n", eintr);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned int nthreads = 4, i;
	unsigned long budget = 0;
	double secs = 6, start, end;
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct rng sig_rng;
	const char *why;
	int opt;

	if (getenv("FUZZ_SECS"))
		secs = atof(getenv("FUZZ_SECS"));
	seed = (uint64_t)time(NULL) * 1000003ULL ^ (uint64_t)getpid();
	while ((opt = getopt(argc, argv, "s:d:n:t:v")) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			secs = atof(optarg);
			break;
		case 'n':
			budget = strtoul(optarg, NULL, 0);
			break;
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'v':
			verbose = true;
			break;
		default:
			fprintf(stderr, "usage: %s [-s seed] [-d secs] [-n calls] [-t threads] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (!nthreads || nthreads > MAX_THREADS)
		nthreads = 4;

	ksft_print_header();
	why = probe();
	if (why)
		ksft_exit_skip("%s\n", why);
	ksft_set_plan(6);
	ksft_print_msg("seed %llu (replay: %s -s %llu -d %.0f -t %u)\n",
		       (unsigned long long)seed, argv[0],
		       (unsigned long long)seed, secs, nthreads);

	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned int)secs + 120);
	if (setup(nthreads))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));

	sig_rng.s = seed | 1;
	start = now();
	for (i = 0; i < nthreads; i++) {
		workers[i].budget = budget;
		if (pthread_create(&workers[i].thread, NULL, worker_fn, &workers[i]))
			ksft_exit_fail_msg("pthread_create\n");
	}
	/* this thread is the signal source until the deadline */
	while (now() - start < secs) {
		struct worker *w = &workers[below(&sig_rng, nthreads)];

		if (w->tid && !syscall(SYS_tgkill, getpid(), w->tid, SIGUSR1))
			signals_sent++;
		usleep(2000);
		if (budget) {
			bool all_done = true;

			for (i = 0; i < nthreads; i++)
				if (pthread_tryjoin_np(workers[i].thread, NULL) == EBUSY)
					all_done = false;
				else
					workers[i].thread = 0;
			if (all_done)
				break;
		}
	}
	atomic_store(&stop, true);
	for (i = 0; i < nthreads; i++)
		if (workers[i].thread)
			pthread_join(workers[i].thread, NULL);
	end = now();
	alarm(0);

	print_summary(nthreads, end - start);
	ksft_test_result(atomic_load(&violations_by[V_ERRNO]) == 0,
			 "fuzz.errno_in_documented_set\n");
	ksft_test_result(atomic_load(&violations_by[V_EXACT]) == 0,
			 "fuzz.argument_errors_exact\n");
	ksft_test_result(atomic_load(&violations_by[V_FIELDS]) == 0,
			 "fuzz.error_fields_consistent\n");
	ksft_test_result(atomic_load(&violations_by[V_EVENTS]) == 0,
			 "fuzz.reported_events_valid\n");
	ksft_test_result(workers[0].calls[C_MODWAIT] > 0 && workers[0].calls[C_CTL] > 0,
			 "fuzz.made_calls\n");
	/* the fuzzer's own fds: a leak would starve the pool (EMFILE) */
	ksft_test_result(atomic_load(&open_failures) == 0,
			 "fuzz.pool_reopened_every_fd\n");
	ksft_finished();
}
