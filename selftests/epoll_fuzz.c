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
 *  - epoll_mod_wait() with random flags, counts, command arrays (with
 *    random flags and __reserved), wait specs and spec sizes, spec
 *    flags, clocks, timeouts and deadlines, signal masks and sigsetsizes;
 *  - epoll_wait() with a zero timeout, to drain and check reported bits;
 *  - writes and reads on the pool, so that waits find events;
 *  - "recycle": close a pool entry and open a new one of a random kind
 *    (pipe end, eventfd, epoll fd, unix socket, TCP listener, /dev/null)
 *    while other threads may be using the old number.
 *
 * A third of the epoll_ctl() and epoll_mod_wait() calls go instead to
 * the thread's own fds: two epoll instances, a pipe, an eventfd and
 * /dev/null that no other thread ever names and that stay open for the
 * whole run.  The thread keeps a model of what each own instance holds
 * (nothing, a plain item or an exclusive one), so every such call has
 * one exact expected result, success included.
 *
 * A signal thread sends SIGUSR1 to random workers; they keep it blocked,
 * so it only lands when a random wait mask unblocks it (EINTR).
 *
 * Topology (style of filesystems/epoll/epoll_wakeup_test.c; any arrow
 * into the pool may name a closed or reused fd at any time):
 *
 *      t0   t1   t2   t3        (ctl) (mw) (ew) read/write, recycle
 *        \   |    |   /
 *   e0 e1 e2 e3 e4 e5           pool[0..5]: always epoll fds
 *     \  |  ...  |  /   \       any pool fd may be ADDed to any eN,
 *   s6 s7 ........ s23   eN     epoll fds too (nesting, ELOOP)
 *                               pool[6..23]: (p)ipe end, (e)ventfd,
 *                               (E)poll, (u)nix dgram, (l)isten TCP,
 *                               /dev/null (no poll: EPERM)
 *   tN: own E1 <-> own E2       per thread, named by tN only:
 *        \    /                 pipe ends, eventfd, the other own
 *   p0 p1 ev null               instance, /dev/null
 *      main: tgkill(SIGUSR1) -> t0..t3, every 2 ms
 *
 * Pointers come from a fixed set of classes: valid, NULL, unmapped,
 * read-only, straddling the end of a mapping, misaligned and kernel
 * addresses (epoll_mod_wait()'s events and sigmask go in 64-bit fields,
 * EPOLL_MOD_PTR(); the _32 binary uses the same structures and the same
 * syscall entry).  Counts include 0, 1, limits, limit + 1, negative
 * values, INT_MAX, values whose byte size wraps and, for ncmds, the
 * edges of the kernel's groups of 8 commands.  The spec's size is
 * mostly 48, sometimes below, above a page, or in between with a tail
 * that is zero, has a non-zero byte, or runs into a guard page.
 *
 * Stable fds.  Every pool slot has a generation, odd while its recycler
 * runs: a call records it with the number it reads and compares it
 * after the call.  Only the slot's recycler closes that number, so an
 * unchanged even generation means the fd was open, and of the recorded
 * kind, for the whole call.  Negative numbers and 1000 and up are never
 * open (the fuzzer never holds more than a few hundred fds), own fds
 * always are.  An fd that was recycled around the call is "unstable".
 *
 * What is checked, for every call:
 *  - the return is a success or -1 with an errno from the set the man
 *    page allows for that call (epoll_ctl(2), epoll_mod_wait(2));
 *  - epoll_ctl(), and each command that an epoll_mod_wait() ran, get
 *    exactly the errno of the first check they fail, in the order both
 *    series make them, whenever the fds it depends on are stable: a bad
 *    event pointer (not for DEL) EFAULT; an fd that is not open EBADF;
 *    a target without poll EPERM; fd == epfd, or an epfd that is not an
 *    epoll instance, EINVAL; EPOLLROUNDROBIN without EPOLLEXCLUSIVE,
 *    EPOLLEXCLUSIVE with an op other than ADD, with an epoll target or
 *    with bits outside EPOLLIN|OUT|ERR|HUP|WAKEUP|ET|EXCLUSIVE|
 *    ROUNDROBIN, EINVAL; an invalid op EINVAL; a command with flags or
 *    __reserved non-zero EINVAL (before all else).  Past those checks
 *    the result depends on the interest list: on a pool instance it
 *    must be one that the op can give (ADD: EEXIST, ELOOP for an epoll
 *    target, EINVAL, ENOMEM, ENOSPC; DEL: ENOENT; MOD: ENOENT, EINVAL),
 *    on an own instance the one the model predicts (MOD of an exclusive
 *    item EINVAL, EEXIST, ENOENT, ELOOP, or success; ENOMEM or ENOSPC is
 *    tolerated for an ADD);
 *  - epoll_mod_wait()'s own checks are exact, in the documented order:
 *    flags (EINVAL); ncmds (EINVAL; with ncmds 0 any cmds is accepted);
 *    access_ok() of cmds only (EFAULT for a kernel address on x86_64; a
 *    NULL, unmapped, half-mapped or read-only array passes); epfd
 *    (EBADF, EINVAL) when it is stable; then the spec, when the spec
 *    pointer is not NULL: size (EINVAL below 48, E2BIG above a page),
 *    its bytes (E2BIG for a non-zero byte past 48, EFAULT for one that
 *    cannot be read; either when a tail has both), maxevents, spec flags
 *    (unknown bits, or ABSTIME with FOREVER), clockid, timeout (FOREVER:
 *    {0, 0} only), access_ok() of events only (EFAULT for a kernel
 *    address on x86_64; a NULL, unmapped or read-only buffer passes),
 *    sigsetsize and sigmask.  When the epfd is unstable, the error must
 *    be EBADF, EINVAL or the spec's;
 *  - what the batch did, past those checks.  Every error field is
 *    preset to a sentinel, and a command that did not run must keep it.
 *    The commands run in order, read 8 at a time, and stop at the first
 *    failure: a failed command has -errno in its field and is the
 *    call's errno, the commands before it 0, the ones after it the
 *    sentinel.  A batch whose first group cannot be read (NULL,
 *    unmapped, a kernel address access_ok() let through, the group of a
 *    half-mapped last command) fails with EFAULT, nothing written; a
 *    half-mapped array that runs its whole groups before that one
 *    without a failure fails with EFAULT after them, every one 0.  A
 *    read-only array fails with EFAULT, nothing written, and on an own
 *    instance the model applies its first group up to the first failure
 *    and the instances are probed to show that exactly that ran.  A
 *    success, or a failed wait, has 0 in every field.  A batch on an own
 *    instance that was refused or failed has, at random times, the
 *    instances probed to show that it applied exactly the commands its
 *    fields say;
 *  - the wait: EINTR, or EFAULT only when the events buffer's first slot
 *    cannot be written (NULL, unmapped, read-only; a kernel address on
 *    the _32 and _x32 binaries); no events without a spec, and no more
 *    than the buffer can hold (one for a buffer whose second slot is
 *    unmapped);
 *  - epoll_wait() on a number that is never open gives EBADF, on a
 *    stable fd that is not an epoll instance EINVAL;
 *  - a wait returns at most maxevents events, and no reported event has
 *    a bit other than poll bits (never EPOLLEXCLUSIVE, EPOLLROUNDROBIN,
 *    EPOLLET, EPOLLONESHOT or EPOLLWAKEUP).
 * Crashes, splats and hangs are the harness' job: the guest fails on any
 * console splat and on a missing exit status; an alarm here ends a hung
 * run with a message.
 *
 * Caveats.  The seed fixes every thread's sequence of calls, not how the
 * threads interleave, so a replay (-s SEED) repeats the inputs but not
 * always the race; -t 1 makes a replay exact up to timing, and with one
 * thread every fd is stable.  So that the run stays bounded, valid
 * relative timeouts are at most 1 ms, valid deadlines (EPOLL_WAIT_ABSTIME)
 * in the past or at most 1 ms ahead, and a call with EPOLL_WAIT_FOREVER
 * always has a signal mask that lets SIGUSR1 in (when the mask can be
 * read), with a SIGUSR1 raised just before the call: its wait returns at
 * once.  Invalid timeouts are tried freely.  The oracle assumes that the
 * _32 and _x32 binaries run under a 64-bit kernel (as the guest does),
 * where access_ok() lets their kernel-address class through.
 *
 * Options:
 *   -s SEED   seed (default: time and pid); printed in the output
 *   -d SECS   run time (default 6, or $FUZZ_SECS)
 *   -n CALLS  stop each thread after CALLS calls (default: no limit)
 *   -t N      worker threads (default 4, at most 16)
 *   -v        print every violation (default: the first 20)
 *
 * Output: TAP 13; "# fuzz: ..." is the one machine-readable summary, and
 * "# fuzz-class: NAME calls=N exact=M" says how many calls (or, for the
 * cmd_ classes, commands that ran) carried each bad input, and how many
 * of them had their result checked against one exact expected result.
 * A command counts as run only when the error fields, or for a read-only
 * array the model (own instance) or its certain first command (pool),
 * say that it ran.
 */
#define _GNU_SOURCE
#include <assert.h>
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
#define NEVER_OPEN_MIN	1000	/* pick_fd()'s "not open" numbers start here */

/* Bits a wait may report: poll bits only, never epoll's own flags. */
#define REPORTABLE_BITS	0x3fffU

/* EPOLLEXCLUSIVE_OK_BITS, the same in both series. */
#define EXCLUSIVE_OK_BITS (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | \
			   EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE | \
			   EPOLLROUNDROBIN)

/*
 * The kernel's EP_MAX_EVENTS, the bound on maxevents: INT_MAX over the
 * size of its struct epoll_event, which is the C library's on every ABI
 * (packed, 12 bytes, on x86; 16 on arm64).
 */
#ifdef __x86_64__	/* and x32; i386's is packed the same way */
static_assert(sizeof(struct epoll_event) == 12, "the kernel's layout");
#endif
#define EP_MAX_EVENTS	((int)(INT_MAX / sizeof(struct epoll_event)))

/*
 * access_ok() takes an events array that ends at or below this address
 * on every configuration; above it, up to the task size, it may or may
 * not (5-level paging, and on 6.12 USER_PTR_MAX, move the limit).  The
 * 32-bit build runs under the 64-bit kernels of both bases, whose limit
 * for a compat task is the same 47-bit one: no 32-bit array ends that
 * high.  arm64's user space is at least 39 bits (VA_BITS_39; the guest's
 * kernel has 48 for user space), so 1 << 38 is sure there.
 */
#ifdef __x86_64__
#define USER_SURE_TOP	0x7fff00000000ULL
#elif defined(__aarch64__)
#define USER_SURE_TOP	(1ULL << 38)
#else
#define USER_SURE_TOP	(1ULL << 40)
#endif

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

/* What the oracle may assume about an fd that a call names. */
enum fd_state {
	FS_UNSTABLE,	/* its slot was recycled around the call */
	FS_CLOSED,	/* a number that is never open */
	FS_NO_POLL,	/* /dev/null: epoll_ctl() refuses it with EPERM */
	FS_POLL,	/* pollable, not an epoll instance */
	FS_EPOLL,
};

static const char *const state_name[] = {
	[FS_UNSTABLE] = "recycled meanwhile", [FS_CLOSED] = "never open",
	[FS_NO_POLL] = "no poll", [FS_POLL] = "pollable",
	[FS_EPOLL] = "epoll",
};

static const enum fd_state kind_state[NR_KINDS] = {
	[K_PIPE_RD] = FS_POLL, [K_PIPE_WR] = FS_POLL, [K_EVENTFD] = FS_POLL,
	[K_EPOLL] = FS_EPOLL, [K_UNIX] = FS_POLL, [K_TCP_LISTEN] = FS_POLL,
	[K_DEVNULL] = FS_NO_POLL,
};

/*
 * Each slot holds an fd and, for pipes and socket pairs, the other end.
 * @gen is a sequence count: odd while one thread recycles the slot, which
 * also makes that thread the only one to do so, so every fd the fuzzer
 * opens is closed exactly once.  Other threads may still hold the old
 * number while it is closed and reused, which is the point; the count
 * tells them afterwards that it happened.
 */
struct slot {
	atomic_int fd;
	atomic_int peer;
	atomic_int kind;
	atomic_uint gen;
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
	/* drawn first, so that a busy slot does not shift the sequence */
	enum fd_kind kind = i < POOL_EPOLLS ? K_EPOLL : below(r, NR_KINDS);
	struct slot *s = &pool[i];
	unsigned int gen = atomic_load(&s->gen);
	int old, old_peer, fd, peer;

	if ((gen & 1) || !atomic_compare_exchange_strong(&s->gen, &gen, gen + 1))
		return;		/* another thread is recycling it */
	old = atomic_exchange(&s->fd, -1);
	old_peer = atomic_exchange(&s->peer, -1);
	if (old >= 0)
		close(old);
	if (old_peer >= 0)
		close(old_peer);
	fd = open_kind(kind, &peer);
	if (fd < 0)
		atomic_fetch_add(&open_failures, 1);
	atomic_store(&s->kind, kind);
	atomic_store(&s->peer, peer);
	atomic_store(&s->fd, fd);
	atomic_store(&s->gen, gen + 2);
}

/* An fd that a call names, and what may be assumed about it. */
struct fd_ref {
	int fd;
	int slot;		/* pool slot it was read from, or -1 */
	unsigned int gen;	/* the slot's generation before the read */
	enum fd_state state;
};

static void ref_fixed(struct fd_ref *ref, int fd, enum fd_state state)
{
	ref->fd = fd;
	ref->slot = -1;
	ref->gen = 0;
	ref->state = state;
}

static void read_slot(struct fd_ref *ref, unsigned int i, bool peer)
{
	struct slot *s = &pool[i];

	ref->slot = i;
	ref->gen = atomic_load(&s->gen);
	ref->fd = atomic_load(peer ? &s->peer : &s->fd);
	if (ref->fd < 0)
		ref->state = FS_CLOSED;		/* whatever the generation */
	else if (ref->gen & 1)
		ref->state = FS_UNSTABLE;
	else if (peer)
		ref->state = FS_POLL;	/* the other end of a pipe or socket */
	else
		ref->state = kind_state[atomic_load(&s->kind)];
}

/* After the call: a slot recycled meanwhile makes its fd prove nothing. */
static void settle(struct fd_ref *ref)
{
	if (ref->slot >= 0 && ref->fd >= 0 &&
	    atomic_load(&pool[ref->slot].gen) != ref->gen)
		ref->state = FS_UNSTABLE;
}

/* Any fd a call may name: a pool entry, a peer, or a bad number. */
static void pick_fd(struct rng *r, struct fd_ref *ref)
{
	switch (below(r, 24)) {
	case 0:
		ref_fixed(ref, -1, FS_CLOSED);
		return;
	case 1:
		ref_fixed(ref, INT_MAX, FS_CLOSED);
		return;
	case 2:		/* not open */
		ref_fixed(ref, NEVER_OPEN_MIN + below(r, 100), FS_CLOSED);
		return;
	case 3:
		read_slot(ref, below(r, POOL_SIZE), true);
		return;
	default:
		read_slot(ref, below(r, POOL_SIZE), false);
		return;
	}
}

/* An epoll fd, most of the time. */
static void pick_epfd(struct rng *r, struct fd_ref *ref)
{
	if (chance(r, 85))
		read_slot(ref, below(r, POOL_EPOLLS), false);
	else
		pick_fd(r, ref);
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
#ifdef __LP64__	/* x32's pointers are 32 bits: it gets the top page */
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

/*
 * Reading a whole object from a class_ptr() pointer faults: a straddling
 * one has only half of it mapped.  (Read-only and misaligned are fine.)
 */
static bool read_faults(enum ptr_class c)
{
	return class_faults(c) || c == P_STRADDLE;
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

static bool op_valid(int op)
{
	return op >= EPOLL_CTL_ADD && op <= EPOLL_CTL_MOD;
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

/* epoll_wait_spec.flags: mostly valid, sometimes not. */
static uint32_t pick_spec_flags(struct rng *r)
{
	switch (below(r, 40)) {
	case 0:
		return (uint32_t)rnd(r);
	case 1:
		return 1U << (2 + below(r, 30));	/* one unknown bit */
	case 2:
		return EPOLL_WAIT_ABSTIME | EPOLL_WAIT_FOREVER;
	case 3:
	case 4:
	case 5:
	case 6:
		return EPOLL_WAIT_ABSTIME;
	case 7:
	case 8:
	case 9:
		return EPOLL_WAIT_FOREVER;
	default:
		return 0;
	}
}

static bool spec_flags_valid(uint32_t flags)
{
	const uint32_t both = EPOLL_WAIT_ABSTIME | EPOLL_WAIT_FOREVER;

	return !(flags & ~both) && flags != both;
}

/*
 * The timeout for spec flags @flags on clock @clk, so that no valid wait
 * blocks for long: relative ones as pick_timeout(); deadlines
 * (EPOLL_WAIT_ABSTIME) near the clock's epoch, a second past, or at most
 * 1 ms ahead; with EPOLL_WAIT_FOREVER mostly the {0, 0} it requires
 * (forever_safe() keeps that wait short).
 */
static void pick_wait_timeout(struct rng *r, uint32_t flags, int clk,
			      struct epoll_mod_timespec *ts)
{
	struct timespec now;

	if (flags == EPOLL_WAIT_FOREVER) {
		if (chance(r, 75)) {
			ts->tv_sec = 0;
			ts->tv_nsec = 0;
		} else {
			pick_timeout(r, ts);
		}
		return;
	}
	if (flags != EPOLL_WAIT_ABSTIME || chance(r, 30) ||
	    !clock_valid(clk) || clock_gettime(clk, &now)) {
		pick_timeout(r, ts);	/* a deadline: long past */
		return;
	}
	ts->tv_sec = now.tv_sec;
	ts->tv_nsec = now.tv_nsec;
	if (chance(r, 30)) {
		ts->tv_sec--;		/* just past */
		return;
	}
	ts->tv_nsec += below(r, 1000000);
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* The spec's timeout, given spec flags that are valid. */
static bool timeout_valid(uint32_t flags, const struct epoll_mod_timespec *ts)
{
	if (flags & EPOLL_WAIT_FOREVER)
		return !ts->tv_sec && !ts->tv_nsec;
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000;
}

/* --- errno sets, from the man pages ---------------------------------- */

#define E(x) (1ULL << (x))

static const uint64_t ctl_errnos = E(EBADF) | E(EEXIST) | E(EFAULT) |
	E(EINVAL) | E(ELOOP) | E(ENOENT) | E(ENOMEM) | E(ENOSPC) | E(EPERM);
/*
 * the call's own checks, before any command runs (E2BIG: the spec's
 * size, or bytes past what the kernel knows); EFAULT also for a batch
 * that cannot be read, or whose error fields cannot be written, after
 * the commands before that point ran
 */
static const uint64_t mw_arg_errnos = E(E2BIG) | E(EBADF) | E(EFAULT) |
	E(EINVAL);
/* a failing command: what epoll_ctl() would return for it */
static const uint64_t mw_cmd_errnos = E(EBADF) | E(EEXIST) | E(EINVAL) |
	E(ELOOP) | E(ENOENT) | E(ENOMEM) | E(ENOSPC) | E(EPERM);
/* the wait, after every command ran (EFAULT: storing an event) */
static const uint64_t mw_wait_errnos = E(EFAULT) | E(EINTR);
static const uint64_t wait_errnos = E(EBADF) | E(EFAULT) | E(EINTR) |
	E(EINVAL);

static bool in_set(uint64_t set, int err)
{
	return err > 0 && err < 64 && (set & E(err));
}

static const char *const errno_names[64] = {
	[E2BIG] = "E2BIG", [EBADF] = "EBADF", [EEXIST] = "EEXIST",
	[EFAULT] = "EFAULT",
	[EINTR] = "EINTR", [EINVAL] = "EINVAL", [ELOOP] = "ELOOP",
	[ENOENT] = "ENOENT", [ENOMEM] = "ENOMEM", [ENOSPC] = "ENOSPC",
	[EPERM] = "EPERM",
};

/* "EINVAL", "success", or "errno 42": @err is an errno, 0 a success. */
static const char *err_name(int err, char *buf, size_t len)
{
	if (!err)
		return "success";
	if (err > 0 && err < 64 && errno_names[err])
		return errno_names[err];
	snprintf(buf, len, "errno %d", err);
	return buf;
}

/* "EBADF|EINVAL"; bit 0 stands for a success. */
static char *set_names(uint64_t set, char *buf, size_t len)
{
	size_t n = 0;
	int e;

	buf[0] = '\0';
	for (e = 0; e < 64 && n < len; e++)
		if (set & E(e))
			n += snprintf(buf + n, len - n, "%s%s", n ? "|" : "",
				      !e ? "success" :
				      errno_names[e] ? errno_names[e] : "?");
	return buf;
}

/* --- the rules of both series, for one epoll_ctl() operation ---------- */

/*
 * Returned by the expectations below when the result depends on an fd
 * that was recycled around the call: only the errno set is checked.
 */
#define EXPECT_UNSURE	1

/*
 * ep_wake_mode_valid() of v3.19 ("epoll: introduce EPOLLEXCLUSIVE and
 * EPOLLROUNDROBIN"), and the checks of mainline's do_epoll_ctl() plus
 * 6.12's "epoll: add EPOLLROUNDROBIN": the same verdict on both bases for
 * every op that takes an event (all but DEL).  For an op that is not
 * ADD, DEL or MOD, v3.19 refuses the flags here and 6.12 refuses the op
 * a little later: EINVAL either way.
 */
static bool wake_mode_valid(int op, uint32_t events, bool target_is_epoll)
{
	uint32_t mode = events & (EPOLLEXCLUSIVE | EPOLLROUNDROBIN);

	if (!mode)
		return true;
	if (!(mode & EPOLLEXCLUSIVE))
		return false;		/* round-robin is for exclusive items */
	if (op != EPOLL_CTL_ADD)
		return false;		/* the queue entry is set up at ADD */
	if (target_is_epoll)
		return false;		/* no nested exclusive wakeups */
	return !(events & ~EXCLUSIVE_OK_BITS);
}

/*
 * What epoll_ctl(@ep, @op, @fd, event) must give, in the order that both
 * bases check (v3.19: sys_epoll_ctl() and ep_ctl_do(); 6.12:
 * sys_epoll_ctl(), do_epoll_ctl() and ep_ctl_file()), up to the
 * lookup of the item: -errno for the first check that fails; 0 if it
 * passes them all, so that the interest list decides; EXPECT_UNSURE if
 * an fd it depends on was recycled around the call.  @ev_fault: the
 * event cannot be read; @events: what it holds otherwise.
 */
static int ctl_expect(const struct fd_ref *ep, const struct fd_ref *fd,
		      int op, bool ev_fault, uint32_t events)
{
	bool has_event = op != EPOLL_CTL_DEL;

	if (has_event && ev_fault)
		return -EFAULT;		/* copied in before any lookup */
	if (ep->state == FS_CLOSED || fd->state == FS_CLOSED)
		return -EBADF;		/* whichever the kernel looks at */
	if (ep->state == FS_UNSTABLE || fd->state == FS_UNSTABLE)
		return EXPECT_UNSURE;
	if (fd->state == FS_NO_POLL)
		return -EPERM;
	if (fd->fd == ep->fd || ep->state != FS_EPOLL)
		return -EINVAL;		/* no fd is dup()ed: same number, same file */
	if (has_event && !wake_mode_valid(op, events, fd->state == FS_EPOLL))
		return -EINVAL;
	if (!op_valid(op))
		return -EINVAL;
	return 0;
}

/*
 * What an op that passed ctl_expect() may still fail with, depending on
 * the interest list of an instance that other threads change.
 */
static uint64_t ctl_list_errnos(int op, bool target_is_epoll)
{
	switch (op) {
	case EPOLL_CTL_ADD:
		/* EINVAL: too many wakeup paths (reverse_path_check()) */
		return E(EEXIST) | E(EINVAL) | E(ENOMEM) | E(ENOSPC) |
		       (target_is_epoll ? E(ELOOP) : 0);
	case EPOLL_CTL_DEL:
		return E(ENOENT);
	default:
		return E(ENOENT) | E(EINVAL);	/* EINVAL: exclusive item */
	}
}

/* An ADD the model expects to succeed may still run out of memory. */
static bool add_starved(int op, int want, int got)
{
	return op == EPOLL_CTL_ADD && !want &&
	       (got == -ENOMEM || got == -ENOSPC);
}

/* --- each thread's own instances, and their model ---------------------- */

/* The two instances come first: they index own.item[][]. */
enum own_fd { O_EP, O_EP2, O_RD, O_WR, O_EFD, O_NULL, NR_OWN };

static const enum fd_state own_state[NR_OWN] = {
	[O_EP] = FS_EPOLL, [O_EP2] = FS_EPOLL, [O_RD] = FS_POLL,
	[O_WR] = FS_POLL, [O_EFD] = FS_POLL, [O_NULL] = FS_NO_POLL,
};

static const char *const own_name[NR_OWN] = {
	"own epoll", "own epoll 2", "own pipe rd", "own pipe wr",
	"own eventfd", "own /dev/null",
};

enum item { IT_NONE, IT_PLAIN, IT_EXCL };

static const char *const item_name[] = {
	"no item", "a plain item", "an exclusive item",
};

struct own {
	int fd[NR_OWN];
	unsigned char item[2][NR_OWN];	/* what O_EP, O_EP2 hold for each */
};

/* Mostly the first instance; sometimes no instance at all. */
static const signed char own_epfds[] = {
	O_EP, O_EP, O_EP, O_EP, O_EP, O_EP, O_EP, O_EP, O_EP2, O_EP2,
	O_EFD, -1,
};

/* Targets: -1 is a number that is never open. */
static const signed char own_targets[] = {
	-1, O_NULL, O_EP, O_EP2, O_EP2, O_RD, O_RD, O_RD, O_WR, O_WR,
	O_EFD, O_EFD, O_EFD,
};

static int open_own(struct own *o)
{
	int i;

	o->fd[O_EP] = epoll_create1(EPOLL_CLOEXEC);
	o->fd[O_EP2] = epoll_create1(EPOLL_CLOEXEC);
	o->fd[O_EFD] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	o->fd[O_NULL] = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (open_pipe(&o->fd[O_RD], &o->fd[O_WR]))
		return -1;
	for (i = 0; i < NR_OWN; i++)
		if (o->fd[i] < 0)
			return -1;
	memset(o->item, IT_NONE, sizeof(o->item));
	return 0;
}

/*
 * The expected result of an operation on own fds @e and @t (indices, -1
 * for a number that is never open): exact, success included, because
 * no other thread names them.
 */
static int own_expect(const struct own *o, int e, int t,
		      const struct fd_ref *ep, const struct fd_ref *fd, int op,
		      bool ev_fault, uint32_t events)
{
	int want = ctl_expect(ep, fd, op, ev_fault, events);
	unsigned char item;

	if (want)
		return want;
	/* here @e is O_EP or O_EP2, @t a pollable own fd other than @e */
	item = o->item[e][t];
	switch (op) {
	case EPOLL_CTL_ADD:
		/* ep_loop_check() runs before the lookup of the item */
		if (fd->state == FS_EPOLL && o->item[t][e] != IT_NONE)
			return -ELOOP;
		return item ? -EEXIST : 0;
	case EPOLL_CTL_DEL:
		return item ? 0 : -ENOENT;
	default:
		if (!item)
			return -ENOENT;
		/* an exclusive item's wait queue entry cannot change */
		return item == IT_EXCL ? -EINVAL : 0;
	}
}

static void own_apply(struct own *o, int e, int t, int op, uint32_t events)
{
	if (op == EPOLL_CTL_ADD)
		o->item[e][t] = events & EPOLLEXCLUSIVE ? IT_EXCL : IT_PLAIN;
	else if (op == EPOLL_CTL_DEL)
		o->item[e][t] = IT_NONE;
}

/* --- per-thread state and reporting ------------------------------------ */

enum call_kind { C_CTL, C_MODWAIT, C_WAIT, C_IO, C_RECYCLE, NR_CALLS };

/*
 * The bad-input classes, counted per call that carried one (the cmd_
 * classes: per command that ran), so that the summary shows what was
 * tried (results/stress.md's table comes from these), and how often the result
 * was checked exactly.
 */
enum bad_class {
	B_CTL_FD_NUMBER, B_CTL_FD_IS_EPFD, B_CTL_OP, B_CTL_EVENT_PTR,
	B_CTL_WAKE_FLAGS, B_CTL_RANDOM_BITS,
	B_MW_EPFD_NUMBER, B_MW_FLAGS, B_MW_NCMDS_NEGATIVE, B_MW_NCMDS_HUGE,
	B_MW_NCMDS_ZERO_CMDS, B_MW_NCMDS_MAX, B_MW_CMDS_NOT_USER,
	B_MW_CMDS_UNREADABLE, B_MW_CMDS_READONLY, B_MW_CMD_FLAGS,
	B_MW_CMD_RESERVED, B_MW_CMD_OP, B_MW_SPEC_PTR, B_MW_SPEC_SIZE_SMALL,
	B_MW_SPEC_SIZE_BIG, B_MW_SPEC_TAIL_ZERO, B_MW_SPEC_TAIL_NONZERO,
	B_MW_SPEC_TAIL_UNMAPPED, B_MW_MAXEVENTS, B_MW_EVENTS_PTR,
	B_MW_SPEC_FLAGS, B_MW_CLOCKID, B_MW_TIMEOUT, B_MW_FOREVER_TIMEOUT,
	B_MW_FOREVER, B_MW_ABSTIME, B_MW_SIGMASK_PTR, B_MW_SIGSETSIZE,
	B_MW_SIGMASK_RANDOM, B_SIGNAL_SENT, NR_BAD
};

static_assert(NR_BAD <= 64, "worker.call_bad has a bit per class");

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
	[B_MW_CMDS_NOT_USER] = "epoll_mod_wait.cmds_ptr_not_user",
	[B_MW_CMDS_UNREADABLE] = "epoll_mod_wait.cmds_unreadable",
	[B_MW_CMDS_READONLY] = "epoll_mod_wait.cmds_readonly",
	[B_MW_CMD_FLAGS] = "epoll_mod_wait.cmd_flags_nonzero",
	[B_MW_CMD_RESERVED] = "epoll_mod_wait.cmd_reserved_nonzero",
	[B_MW_CMD_OP] = "epoll_mod_wait.cmd_op_invalid",
	[B_MW_SPEC_PTR] = "epoll_mod_wait.spec_ptr_bad",
	[B_MW_SPEC_SIZE_SMALL] = "epoll_mod_wait.spec_size_below_ver0",
	[B_MW_SPEC_SIZE_BIG] = "epoll_mod_wait.spec_size_over_page",
	[B_MW_SPEC_TAIL_ZERO] = "epoll_mod_wait.spec_size_larger_tail_zero",
	[B_MW_SPEC_TAIL_NONZERO] = "epoll_mod_wait.spec_tail_nonzero",
	[B_MW_SPEC_TAIL_UNMAPPED] = "epoll_mod_wait.spec_tail_unmapped",
	[B_MW_MAXEVENTS] = "epoll_mod_wait.maxevents_bad",
	[B_MW_EVENTS_PTR] = "epoll_mod_wait.events_ptr_bad",
	[B_MW_SPEC_FLAGS] = "epoll_mod_wait.spec_flags_bad",
	[B_MW_CLOCKID] = "epoll_mod_wait.clockid_bad",
	[B_MW_TIMEOUT] = "epoll_mod_wait.timeout_bad",
	[B_MW_FOREVER_TIMEOUT] = "epoll_mod_wait.forever_with_timeout",
	[B_MW_FOREVER] = "epoll_mod_wait.forever",
	[B_MW_ABSTIME] = "epoll_mod_wait.abstime",
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
	struct region spec;		/* a wait spec and its tail */
	struct region misc;		/* an epoll_event, a sigset */
	struct own own;
	struct fd_ref refs[EPOLL_MOD_MAX_CMDS];	/* each command's fd */
	signed char own_t[EPOLL_MOD_MAX_CMDS];	/* its own target, if own */
	unsigned long calls[NR_CALLS];
	unsigned long errnos[64];
	unsigned long budget;		/* calls, 0 for no limit */
	unsigned long bad[NR_BAD];
	unsigned long exact[NR_BAD];	/* ... of them checked exactly */
	uint64_t call_bad;		/* the classes the current call carries */
	unsigned long successes, events_seen, cmds_run, eintr, wait_efault;
	unsigned long exact_calls, unsure_calls, own_calls;
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
	if (!cond)
		return;
	w->bad[b]++;
	w->call_bad |= 1ULL << b;
}

/* The current call's result was checked against one exact expectation. */
static void checked_exactly(struct worker *w)
{
	unsigned int b;

	w->exact_calls++;
	for (b = 0; b < NR_BAD; b++)
		if (w->call_bad & (1ULL << b))
			w->exact[b]++;
}

static bool bad_ptr(enum ptr_class c)
{
	return c != P_VALID && c != P_MISALIGNED;
}

static bool fd_not_open(int fd)
{
	return fd < 0 || fd >= NEVER_OPEN_MIN;
}

enum violation {
	V_ERRNO,	/* errno outside the documented set */
	V_EXACT,	/* not the one result the arguments call for */
	V_FIELDS,	/* error fields (or own instances) inconsistent with it */
	V_EVENTS,	/* too many events or non-poll bits reported */
};

static __printf(3, 4) void violation(struct worker *w, enum violation v,
				     const char *fmt, ...)
{
	unsigned long n = atomic_fetch_add(&violations, 1);
	char buf[768];
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

/* --- own fds: picking and probing --------------------------------------- */

/* Pick from @set; *@idx is the own fd, or -1 for a never-open number. */
static void own_pick(struct worker *w, const signed char *set, size_t n,
		     int *idx, struct fd_ref *ref)
{
	struct rng *r = &w->rng;

	*idx = set[below(r, n)];
	if (*idx < 0)
		ref_fixed(ref, chance(r, 50) ? -1 : NEVER_OPEN_MIN + (int)below(r, 100),
			  FS_CLOSED);
	else
		ref_fixed(ref, w->own.fd[*idx], own_state[*idx]);
}

/*
 * Ask the kernel what each own instance holds, without changing
 * membership: EPOLL_CTL_MOD to EPOLLIN fails with ENOENT without an item
 * and with EINVAL for an exclusive one, and only rewrites a plain one's
 * events, which the model does not track.  With @after, a difference is
 * a violation (that call changed the lists other than its result says);
 * either way the model then takes the kernel's word, so that one bug
 * is reported once.
 */
static void own_verify(struct worker *w, const char *after)
{
	static const int targets[] = { O_EP, O_EP2, O_RD, O_WR, O_EFD };
	struct own *o = &w->own;
	char b1[24];
	unsigned int i;
	int e;

	for (e = O_EP; e <= O_EP2; e++)
		for (i = 0; i < ARRAY_SIZE(targets); i++) {
			struct epoll_event ev = { .events = EPOLLIN };
			int t = targets[i], got, seen;

			if (t == e)
				continue;
			got = epoll_ctl(o->fd[e], EPOLL_CTL_MOD, o->fd[t], &ev) ?
			      errno : 0;
			seen = got == ENOENT ? IT_NONE : got == EINVAL ? IT_EXCL :
			       got == 0 ? IT_PLAIN : -1;
			if (seen == o->item[e][t])
				continue;
			if (after || seen < 0)
				violation(w, V_FIELDS, "after %s: %s should hold %s for %s, but MOD of it gives %s",
					  after ? after : "a resync", own_name[e],
					  item_name[o->item[e][t]], own_name[t],
					  err_name(got, b1, sizeof(b1)));
			if (seen >= 0)
				o->item[e][t] = seen;
		}
}

/* --- epoll_ctl -------------------------------------------------------- */

struct ctl_call {
	bool own;
	int e, t;		/* own: the own fds named (-1: never open) */
	struct fd_ref ep, fd;
	int op;
	enum ptr_class pc;
	bool ev_fault;		/* the kernel cannot read the event */
	uint32_t events;	/* what it reads otherwise */
	struct epoll_event *ev;
};

static void pick_ctl(struct worker *w, struct ctl_call *c)
{
	struct rng *r = &w->rng;

	c->e = -1;
	c->t = -1;
	c->own = chance(r, 30);
	c->pc = pick_class(r, 10);
	c->ev = class_ptr(c->pc, &w->misc, sizeof(*c->ev));
	if (c->own)
		own_pick(w, own_epfds, ARRAY_SIZE(own_epfds), &c->e, &c->ep);
	else
		pick_epfd(r, &c->ep);
	c->op = pick_op(r);
	if (c->own)
		own_pick(w, own_targets, ARRAY_SIZE(own_targets), &c->t, &c->fd);
	else
		pick_fd(r, &c->fd);
	if (chance(r, 5)) {
		c->fd = c->ep;
		c->t = c->e;
	}
	if (c->pc == P_VALID || c->pc == P_MISALIGNED || c->pc == P_STRADDLE) {
		/* a straddling event is half writable: fill what can be */
		uint32_t e = pick_events(r);

		memcpy(c->ev, &e, sizeof(e));
	}
	c->ev_fault = read_faults(c->pc);
	c->events = 0;
	if (!c->ev_fault)	/* read-only: the zeroes of ro_page */
		memcpy(&c->events, c->ev, sizeof(c->events));
}

static void note_ctl(struct worker *w, const struct ctl_call *c)
{
	bool has_event = c->op != EPOLL_CTL_DEL;

	w->call_bad = 0;
	note(w, B_CTL_FD_NUMBER, fd_not_open(c->fd.fd) || fd_not_open(c->ep.fd));
	note(w, B_CTL_FD_IS_EPFD, c->fd.fd == c->ep.fd);
	note(w, B_CTL_OP, !op_valid(c->op));
	note(w, B_CTL_EVENT_PTR, has_event && c->ev_fault);
	if (!has_event || c->ev_fault)
		return;
	note(w, B_CTL_WAKE_FLAGS, !wake_mode_valid(c->op, c->events,
						   c->fd.state == FS_EPOLL));
	note(w, B_CTL_RANDOM_BITS, c->events & ~(REPORTABLE_BITS | EPOLLET |
		EPOLLONESHOT | EPOLLWAKEUP | EPOLLEXCLUSIVE | EPOLLROUNDROBIN));
}

/* What the model says own instance @e holds for @t, for a message. */
static const char *own_model(const struct worker *w, bool own, int e, int t)
{
	static __thread char buf[64];

	if (!own || e < O_EP || e > O_EP2 || t < 0)
		return "";
	snprintf(buf, sizeof(buf), "; model: %s holds %s for it", own_name[e],
		 item_name[w->own.item[e][t]]);
	return buf;
}

static void ctl_violation(struct worker *w, enum violation v,
			  const struct ctl_call *c, int got, const char *want)
{
	char b1[24];

	violation(w, v, "%sepoll_ctl(epfd %d [%s], op %d, fd %d [%s], event %s {events %#x}) = %s, want %s%s",
		  c->own ? "own: " : "", c->ep.fd, state_name[c->ep.state],
		  c->op, c->fd.fd, state_name[c->fd.state], ptr_name[c->pc],
		  c->events, err_name(-got, b1, sizeof(b1)), want,
		  own_model(w, c->own, c->e, c->t));
}

/* @got: 0 or -errno. */
static void check_ctl(struct worker *w, const struct ctl_call *c, int got,
		      bool verify)
{
	char b1[24], set[128];
	int want;

	if (c->own)
		want = own_expect(&w->own, c->e, c->t, &c->ep, &c->fd, c->op,
				  c->ev_fault, c->events);
	else
		want = ctl_expect(&c->ep, &c->fd, c->op, c->ev_fault, c->events);

	if (want == EXPECT_UNSURE) {
		w->unsure_calls++;
		if (got && !in_set(ctl_errnos, -got))
			ctl_violation(w, V_ERRNO, c, got,
				      set_names(ctl_errnos, set, sizeof(set)));
		return;
	}
	if (want < 0 || c->own) {
		if (got == want || add_starved(c->op, want, got)) {
			checked_exactly(w);
			if (c->own && !got)
				own_apply(&w->own, c->e, c->t, c->op, c->events);
			if (c->own && got && verify)
				own_verify(w, "a failed own epoll_ctl()");
			return;
		}
		ctl_violation(w, V_EXACT, c, got, err_name(-want, b1, sizeof(b1)));
		if (c->own)
			own_verify(w, NULL);
		return;
	}
	/* every argument check passed: the interest list decides */
	if (got && !in_set(ctl_list_errnos(c->op, c->fd.state == FS_EPOLL), -got))
		ctl_violation(w, V_ERRNO, c, got,
			      set_names(ctl_list_errnos(c->op, c->fd.state == FS_EPOLL) |
					E(0), set, sizeof(set)));
}

static void fuzz_ctl(struct worker *w)
{
	struct ctl_call c;
	bool verify;
	int ret, err;

	pick_ctl(w, &c);
	verify = chance(&w->rng, 10);	/* drawn always: replays stay aligned */
	w->calls[C_CTL]++;
	w->own_calls += c.own;
	note_ctl(w, &c);
	ret = epoll_ctl(c.ep.fd, c.op, c.fd.fd, c.ev);
	err = errno;
	count_errno(w, ret, err);
	settle(&c.ep);
	settle(&c.fd);
	if (ret != 0 && ret != -1) {
		violation(w, V_ERRNO, "epoll_ctl(%d, %d, %d, %s) returned %d",
			  c.ep.fd, c.op, c.fd.fd, ptr_name[c.pc], ret);
		return;
	}
	check_ctl(w, &c, ret ? -err : 0, verify);
}

/* --- epoll_mod_wait ----------------------------------------------------- */

/* The kernel reads the commands this many at a time, as they run. */
#define EP_MOD_CHUNK	8

/* What an own or pool command array looks like, seen from the kernel. */
struct mw_call {
	bool own;		/* epfd and every command on own fds */
	int own_e;		/* the own epfd, or -1 */
	struct fd_ref ep;
	int epfd, flags, ncmds;
	int cmds_n;		/* commands we filled and can inspect */
	enum ptr_class cmds_class, spec_class, events_class, mask_class;
	bool cmds_protect;	/* read-only: filled, then mprotect()ed for the call */
	bool raise_usr1;	/* raise SIGUSR1 (blocked) just before the call */
	struct epoll_mod_cmd *cmds;
	/* the spec: the pointer and size passed, and what the kernel reads */
	char *spec;
	size_t spec_size;
	bool spec_used;		/* size in range, all bytes readable, tail zero */
	int spec_err, spec_alt;	/* otherwise: -errno of the copy, and another */
	bool tail_zero, tail_nonzero, tail_fault;	/* size > 48, head readable */
	char *tail_dirty;	/* a tail byte made non-zero, cleared after */
	struct epoll_wait_spec sv;	/* the 48 bytes at @spec, if spec_used */
};

static void fill_cmds(struct worker *w, struct mw_call *m)
{
	struct epoll_mod_cmd *c = m->cmds;
	struct rng *r = &w->rng;
	int i, t;

	for (i = 0; i < m->cmds_n; i++) {
		c[i].flags = chance(r, 2) ? (uint32_t)rnd(r) : 0;
		c[i].op = pick_op(r);
		if (m->own) {
			own_pick(w, own_targets, ARRAY_SIZE(own_targets), &t,
				 &w->refs[i]);
			w->own_t[i] = t;
		} else {
			pick_fd(r, &w->refs[i]);
		}
		c[i].fd = w->refs[i].fd;
		c[i].events = pick_events(r);
		c[i].data = rnd(r);
		c[i].error = SENTINEL;	/* a command that did not run keeps it */
		c[i].__reserved = chance(r, 2) ? (uint32_t)rnd(r) | 1 : 0;
	}
}

static const uint32_t bad_sigsetsize[] = { 0, 4, 16, 128, UINT32_MAX };

/*
 * A valid EPOLL_WAIT_FOREVER wait must not block the run: its mask lets
 * SIGUSR1 in, and the thread raises one (blocked until the wait installs
 * the mask) just before the call, so that the wait returns events or
 * EINTR at once.  A mask that cannot be read fails the call anyway.
 */
static void forever_safe(struct worker *w, struct mw_call *m)
{
	struct epoll_wait_spec *s = &m->sv;
	uint64_t *mask = (uint64_t *)(w->misc.base + 256), v;
	char *p;

	m->raise_usr1 = true;
	if (!s->sigmask) {
		m->mask_class = P_VALID;
		*mask = rnd(&w->rng);
		s->sigmask = EPOLL_MOD_PTR(mask);
	}
	if (m->mask_class == P_VALID || m->mask_class == P_MISALIGNED) {
		p = (char *)(uintptr_t)s->sigmask;
		memcpy(&v, p, sizeof(v));
		v &= ~(1ULL << (SIGUSR1 - 1));
		memcpy(p, &v, sizeof(v));
	}
	/* read-only: the zeroes of ro_page block nothing */
}

/* The wait part: filled in m->sv, then copied to where the spec lives. */
static void fill_spec(struct worker *w, struct mw_call *m)
{
	struct rng *r = &w->rng;
	struct epoll_wait_spec *s = &m->sv;
	uint64_t *mask = (uint64_t *)(w->misc.base + 256);
	void *ev;

	memset(s, 0, sizeof(*s));
	s->maxevents = chance(r, 80) ? 1 + (int)below(r, NR_EVENTS) :
				       pick_count(r, EP_MAX_EVENTS);
	m->events_class = pick_class(r, 10);
	ev = class_ptr(m->events_class, &w->events,
		       NR_EVENTS * sizeof(struct epoll_event));
	if (m->events_class == P_STRADDLE)	/* first slot only writable */
		ev = w->events.base + w->events.size - sizeof(struct epoll_event);
	s->events = EPOLL_MOD_PTR(ev);
	s->clockid = pick_clock(r);
	s->flags = pick_spec_flags(r);
	pick_wait_timeout(r, s->flags, s->clockid, &s->timeout);
	s->sigsetsize = EPOLL_MOD_SIGSETSIZE;
	m->mask_class = P_NULL;
	s->sigmask = 0;
	if (chance(r, 40)) {
		void *p;

		m->mask_class = pick_class(r, 10);
		*mask = rnd(r);
		p = class_ptr(m->mask_class, &w->misc, 8);
		if (m->mask_class == P_VALID)
			p = mask;
		s->sigmask = EPOLL_MOD_PTR(p);
		if (chance(r, 10))
			s->sigsetsize = bad_sigsetsize[below(r, ARRAY_SIZE(bad_sigsetsize))];
	}
	if (s->flags == EPOLL_WAIT_FOREVER)
		forever_safe(w, m);
}

/* The size argument: mostly the structure's, sometimes anything. */
static size_t pick_spec_size(struct rng *r)
{
	if (chance(r, 75))
		return sizeof(struct epoll_wait_spec);
	switch (below(r, 12)) {
	case 0:
		return 0;
	case 1:
		return 1 + below(r, EPOLL_WAIT_SPEC_SIZE_VER0 - 1);
	case 2:
		return EPOLL_WAIT_SPEC_SIZE_VER0 - 1;
	case 3:
		return page_size;
	case 4:
		return page_size + 1;
	case 5:
		return SIZE_MAX;
	case 6:
		return (size_t)INT_MAX + 1;
	case 7:
		return EPOLL_WAIT_SPEC_SIZE_VER0 + 8;
	default:	/* 49 .. page_size */
		return EPOLL_WAIT_SPEC_SIZE_VER0 + 1 +
		       below(r, page_size - EPOLL_WAIT_SPEC_SIZE_VER0);
	}
}

/*
 * Where the spec lives.  Its region is two pages before a guard page: a
 * valid spec sits at the start, or ends flush with the guard, or has its
 * tail (the bytes past 48 that the size claims) run into the guard; a
 * read-only one is ro_page (zeroes), or its last 48 bytes.
 */
static char *spec_place(struct worker *w, struct mw_call *m)
{
	struct rng *r = &w->rng;
	char *end = w->spec.base + w->spec.size;
	size_t sz = m->spec_size, room;

	switch (m->spec_class) {
	case P_VALID:
		if (sz < EPOLL_WAIT_SPEC_SIZE_VER0 || sz > (size_t)page_size)
			return w->spec.base;
		switch (below(r, 8)) {
		case 0:
			return end - sz;
		case 1:
			room = sz - EPOLL_WAIT_SPEC_SIZE_VER0;
			return end - EPOLL_WAIT_SPEC_SIZE_VER0 -
			       (room ? below(r, room) : 0);
		default:
			return w->spec.base;
		}
	case P_MISALIGNED:
		return w->spec.base + 1;
	case P_STRADDLE:
		return end - EPOLL_WAIT_SPEC_SIZE_VER0 / 2;
	case P_READONLY:
		return chance(r, 30) ? ro_page + page_size - EPOLL_WAIT_SPEC_SIZE_VER0 :
				       ro_page;
	default:	/* NULL (no spec), unmapped, kernel */
		return class_ptr(m->spec_class, &w->spec, EPOLL_WAIT_SPEC_SIZE_VER0);
	}
}

/* The end of the readable bytes that a spec of class @c starts in. */
static uintptr_t readable_end(const struct worker *w, enum ptr_class c)
{
	switch (c) {
	case P_VALID:
	case P_MISALIGNED:
	case P_STRADDLE:
		return (uintptr_t)(w->spec.base + w->spec.size);
	case P_READONLY:
		return (uintptr_t)(ro_page + page_size);
	default:
		return 0;
	}
}

/*
 * What copy_struct_from_user() (6.12; v3.19's local equivalent) makes of
 * the spec's bytes as they are in memory now: the size is checked first
 * (EINVAL below EPOLL_WAIT_SPEC_SIZE_VER0, E2BIG above a page), then the
 * bytes past the structure must be zero (E2BIG) and all of it readable
 * (EFAULT).  6.12 scans the tail first and so gives E2BIG for a non-zero
 * byte that comes before the fault; the order of the two is not part of
 * the contract, so a tail with both allows either.
 */
static void spec_read_expect(const struct worker *w, struct mw_call *m)
{
	const size_t ver0 = EPOLL_WAIT_SPEC_SIZE_VER0;
	uintptr_t p = (uintptr_t)m->spec, end;
	size_t i, avail, sz = m->spec_size;
	bool nonzero = false, fault;

	m->spec_used = false;
	m->spec_err = 0;
	m->spec_alt = 0;
	if (!m->spec)
		return;			/* no wait; the size is ignored */
	if (sz < ver0) {
		m->spec_err = -EINVAL;
		return;
	}
	if (sz > (size_t)page_size) {
		m->spec_err = -E2BIG;
		return;
	}
	end = readable_end(w, m->spec_class);
	avail = end > p ? end - p : 0;
	for (i = ver0; i < sz && i < avail; i++)
		if (m->spec[i])
			nonzero = true;
	fault = avail < sz;
	if (sz > ver0 && avail >= ver0) {
		m->tail_nonzero = nonzero;
		m->tail_fault = fault;
		m->tail_zero = !nonzero && !fault;
	}
	if (fault) {
		m->spec_err = -EFAULT;
		m->spec_alt = nonzero ? -E2BIG : 0;
	} else if (nonzero) {
		m->spec_err = -E2BIG;
	} else {
		memcpy(&m->sv, m->spec, sizeof(m->sv));
		m->spec_used = true;
	}
}

/* ncmds around the boundaries of the kernel's groups of 8. */
static int pick_chunky(struct rng *r)
{
	static const int counts[] = { 7, 8, 9, 15, 16, 17, 24, 25, 33 };

	if (chance(r, 50))
		return counts[below(r, ARRAY_SIZE(counts))];
	return 1 + below(r, 64);
}

static void pick_modwait(struct worker *w, struct mw_call *m)
{
	struct rng *r = &w->rng;
	int n;

	m->own = chance(r, 30);
	if (m->own)
		own_pick(w, own_epfds, ARRAY_SIZE(own_epfds), &m->own_e, &m->ep);
	else
		pick_epfd(r, &m->ep);
	m->epfd = m->ep.fd;
	m->flags = chance(r, 3) ? (int)rnd(r) | 1 : 0;
	m->ncmds = chance(r, 3) ? EPOLL_MOD_MAX_CMDS :
		   chance(r, 12) ? pick_chunky(r) :
		   pick_count(r, EPOLL_MOD_MAX_CMDS);
	/* the commands the kernel may run */
	n = m->ncmds > 0 && m->ncmds <= EPOLL_MOD_MAX_CMDS ? m->ncmds : 0;
	m->cmds_class = pick_class(r, 8);
	m->cmds = class_ptr(m->cmds_class, &w->cmds, (n ? n : 1) * sizeof(*m->cmds));
	if (m->ncmds == 0 && chance(r, 70))
		m->cmds = NULL;
	switch (m->cmds_class) {
	case P_VALID:
	case P_MISALIGNED:
		if (m->cmds)	/* with ncmds out of range: one, never read */
			m->cmds_n = n ? n : 1;
		break;
	case P_STRADDLE:	/* the last command half mapped */
		if (n) {
			m->cmds = (void *)(w->cmds.base + w->cmds.size -
					   n * sizeof(*m->cmds) + sizeof(*m->cmds) / 2);
			m->cmds_n = n - 1;
		}
		break;
	case P_READONLY:	/* ro_page's zeroes, or a filled batch */
		if (n && chance(r, 50)) {
			m->cmds = (void *)w->cmds.base;
			m->cmds_protect = true;
			m->cmds_n = n;
		}
		break;
	default:
		break;
	}
	fill_cmds(w, m);

	m->spec_class = chance(r, 30) ? P_NULL : pick_class(r, 6);
	m->spec_size = pick_spec_size(r);
	m->events_class = P_NULL;
	m->mask_class = P_NULL;
	m->spec = spec_place(w, m);
	if (m->spec_class == P_VALID || m->spec_class == P_MISALIGNED) {
		size_t avail = readable_end(w, m->spec_class) - (uintptr_t)m->spec;

		fill_spec(w, m);
		memcpy(m->spec, &m->sv, sizeof(m->sv));
		/* sometimes a non-zero byte in the readable part of the tail */
		if (m->spec_size > EPOLL_WAIT_SPEC_SIZE_VER0 &&
		    m->spec_size <= (size_t)page_size &&
		    avail > EPOLL_WAIT_SPEC_SIZE_VER0 && chance(r, 30)) {
			size_t lim = m->spec_size < avail ? m->spec_size : avail;

			m->tail_dirty = m->spec + EPOLL_WAIT_SPEC_SIZE_VER0 +
					below(r, lim - EPOLL_WAIT_SPEC_SIZE_VER0);
			*m->tail_dirty = (char)(1 + below(r, 255));
		}
	}
	spec_read_expect(w, m);
}

/* Leave the spec region zeroed for the next call's tails. */
static void spec_clean(const struct worker *w, const struct mw_call *m)
{
	if (m->spec_class == P_VALID || m->spec_class == P_MISALIGNED)
		memset(m->spec, 0, sizeof(struct epoll_wait_spec));
	if (m->tail_dirty)
		*m->tail_dirty = 0;
}

/*
 * Whether access_ok() refuses a pointer of class @c (for any size the
 * fuzzer passes).  The x86_64 build's kernel address is refused; the
 * i386 and x32 builds', 0xfffff000, is below the 47-bit limit that the
 * 64-bit kernels of both bases apply to a compat task too (the 32-bit
 * builds never run under a 32-bit kernel), so only reading or writing
 * it faults.  Every other class is a user address.
 */
static bool access_refused(enum ptr_class c)
{
#ifdef __LP64__
	return c == P_KERNEL;
#else
	return false;
#endif
}

/* The first check that fails among flags, ncmds and cmds, or 0. */
static int mw_expected(const struct mw_call *m)
{
	if (m->flags)
		return -EINVAL;
	if (m->ncmds < 0 || m->ncmds > EPOLL_MOD_MAX_CMDS)
		return -EINVAL;
	/* ncmds == 0: cmds is not looked at; else access_ok() only */
	if (m->ncmds > 0 && access_refused(m->cmds_class))
		return -EFAULT;
	return 0;
}

/*
 * What reading and checking the wait spec must give: -errno or 0, in the
 * order of ep_get_wait_spec(), the same on both bases (the _32 binary
 * uses the same entry): size and copy, maxevents, spec flags, clockid, timeout, then
 * access_ok() of the events (no read or write of them), then the signal
 * mask.  *@alt is another errno the spec may give: E2BIG or EFAULT for
 * a tail both non-zero and faulting, EFAULT for an events array that
 * ends so high that access_ok() may refuse it whatever its class (see
 * USER_SURE_TOP).
 */
static int spec_expect(const struct mw_call *m, int *alt)
{
	const struct epoll_wait_spec *s = &m->sv;
	uint64_t end;

	*alt = 0;
	if (!m->spec)
		return 0;			/* no wait */
	if (!m->spec_used) {
		*alt = m->spec_alt;
		return m->spec_err;
	}
	if (s->maxevents <= 0 || s->maxevents > EP_MAX_EVENTS)
		return -EINVAL;
	if (!spec_flags_valid(s->flags))
		return -EINVAL;
	if (!clock_valid(s->clockid))
		return -EINVAL;
	if (!timeout_valid(s->flags, &s->timeout))
		return -EINVAL;
	if (access_refused(m->events_class))
		return -EFAULT;
	end = s->events + (uint64_t)s->maxevents * sizeof(struct epoll_event);
	if (end > USER_SURE_TOP)
		*alt = -EFAULT;
	if (!s->sigmask)
		return 0;
	if (s->sigsetsize != EPOLL_MOD_SIGSETSIZE)
		return -EINVAL;
	return read_faults(m->mask_class) ? -EFAULT : 0;
}

/* How an epoll_mod_wait() call may end before running any command. */
struct mw_verdict {
	uint64_t refuse;	/* errnos it may be refused with */
	bool may_run;		/* false: it must be refused */
	bool exact;		/* it must be refused with one errno */
};

/*
 * The documented order: flags, ncmds, access_ok() of cmds; then epfd, if
 * it was stable (otherwise EBADF or EINVAL may come first); then the
 * spec.  Nothing else is checked before the first command runs.
 */
static void mw_verdict(const struct mw_call *m, struct mw_verdict *v)
{
	int want = mw_expected(m), alt, spec;

	v->refuse = 0;
	v->may_run = false;
	v->exact = true;
	if (want) {
		v->refuse = E(-want);
		return;
	}
	switch (m->ep.state) {
	case FS_CLOSED:
		v->refuse = E(EBADF);
		return;
	case FS_POLL:
	case FS_NO_POLL:
		v->refuse = E(EINVAL);		/* not an epoll instance */
		return;
	case FS_UNSTABLE:
		v->refuse = E(EBADF) | E(EINVAL);
		v->exact = false;
		break;
	case FS_EPOLL:
		break;
	}
	spec = spec_expect(m, &alt);
	if (alt) {
		v->refuse |= E(-alt);
		v->exact = false;
	}
	if (spec)
		v->refuse |= E(-spec);
	else
		v->may_run = true;
	v->exact = v->exact && !v->may_run;
}

static void mw_violation(struct worker *w, enum violation v,
			 const struct mw_call *m, int ret, int err,
			 const char *want)
{
	const struct epoll_wait_spec *s = m->spec_used ? &m->sv : NULL;
	char b1[24];

	violation(w, v, "%sepoll_mod_wait(epfd %d [%s], flags %#x, ncmds %d, cmds %s%s, spec %s size %zu%s {maxevents %d, events %s, flags %#x, clock %d, timeout {%lld, %lld}, sigmask %s, sigsetsize %lld}) = %d %s, want %s",
		  m->own ? "own: " : "", m->epfd, state_name[m->ep.state],
		  m->flags, m->ncmds, ptr_name[m->cmds_class],
		  !m->cmds && m->cmds_class != P_NULL ? " (NULL)" :
		  m->cmds_protect ? " (filled, mprotect()ed)" : "",
		  ptr_name[m->spec_class], m->spec_size,
		  !m->spec || m->spec_used ? "" :
		  m->tail_nonzero ? " (tail non-zero)" :
		  m->tail_fault ? " (tail unmapped)" : " (unread)",
		  s ? s->maxevents : 0, s ? ptr_name[m->events_class] : "-",
		  s ? s->flags : 0, s ? s->clockid : 0,
		  s ? (long long)s->timeout.tv_sec : 0,
		  s ? (long long)s->timeout.tv_nsec : 0,
		  s && s->sigmask ? ptr_name[m->mask_class] : "NULL",
		  s ? (long long)s->sigsetsize : 0, ret,
		  ret < 0 ? err_name(err, b1, sizeof(b1)) : "", want);
}

/* A command that did not run must keep its preset error field. */
static void untouched(struct worker *w, const struct mw_call *m,
		      const char *what)
{
	int i;

	for (i = 0; i < m->cmds_n; i++)
		if (m->cmds[i].error != SENTINEL) {
			violation(w, V_FIELDS, "%s (epfd %d, flags %#x, ncmds %d, cmds %s) wrote command %d's error (%d): no command ran",
				  what, m->epfd, m->flags, m->ncmds,
				  ptr_name[m->cmds_class], i, m->cmds[i].error);
			return;
		}
}

static void cmd_violation(struct worker *w, enum violation v,
			  const struct mw_call *m, int i, const char *want)
{
	const struct epoll_mod_cmd *c = &m->cmds[i];
	const struct fd_ref *ref = &w->refs[i];

	violation(w, v, "%sepoll_mod_wait(epfd %d [%s], ncmds %d): command %d {flags %#x, op %d, fd %d [%s], events %#x, __reserved %#x} error %d, want %s%s",
		  m->own ? "own: " : "", m->epfd, state_name[m->ep.state],
		  m->ncmds, i, c->flags, c->op, c->fd, state_name[ref->state],
		  c->events, c->__reserved, c->error, want,
		  own_model(w, m->own, m->own_e, w->own_t[i]));
}

/* A command ran: count it, and the bad inputs it carried. */
static void count_cmd(struct worker *w, const struct epoll_mod_cmd *c)
{
	w->cmds_run++;
	w->bad[B_MW_CMD_FLAGS] += !!c->flags;
	w->bad[B_MW_CMD_RESERVED] += !!c->__reserved;
	w->bad[B_MW_CMD_OP] += !op_valid(c->op);
}

/*
 * The result command @i must have: its flags and __reserved are checked
 * before the operation, then what epoll_ctl() checks, on the epoll file
 * looked up for epfd (an epoll file, since the command ran).
 */
static int cmd_want(struct worker *w, const struct mw_call *m, int i)
{
	const struct epoll_mod_cmd *c = &m->cmds[i];
	struct fd_ref ep = { .fd = m->epfd, .slot = -1, .state = FS_EPOLL };

	if (c->flags || c->__reserved)
		return -EINVAL;
	if (m->own)
		return own_expect(&w->own, m->own_e, w->own_t[i], &ep,
				  &w->refs[i], c->op, false, c->events);
	return ctl_expect(&ep, &w->refs[i], c->op, false, c->events);
}

/*
 * Command @i ran: count it and, with @check, its error must be the one
 * its arguments call for, or on an own instance the one the model
 * predicts, which the model then applies.  Returns false when the own
 * model can no longer be trusted.
 */
static bool check_cmd(struct worker *w, const struct mw_call *m, int i,
		      bool check)
{
	const struct epoll_mod_cmd *c = &m->cmds[i];
	int want, got = c->error;
	char b1[24], set[128];

	count_cmd(w, c);
	if (!check)
		return false;
	want = cmd_want(w, m, i);
	if (want == EXPECT_UNSURE) {
		if (got && !in_set(mw_cmd_errnos, -got))
			cmd_violation(w, V_ERRNO, m, i,
				      set_names(mw_cmd_errnos, set, sizeof(set)));
		return true;
	}
	if (want == 0 && !m->own) {
		uint64_t list = ctl_list_errnos(c->op, w->refs[i].state == FS_EPOLL);

		if (got && !in_set(list, -got))
			cmd_violation(w, V_ERRNO, m, i,
				      set_names(list | E(0), set, sizeof(set)));
		return true;
	}
	if (got != want && !add_starved(c->op, want, got)) {
		cmd_violation(w, V_EXACT, m, i, err_name(-want, b1, sizeof(b1)));
		return !m->own;
	}
	w->exact[B_MW_CMD_FLAGS] += !!c->flags;
	w->exact[B_MW_CMD_RESERVED] += !!c->__reserved;
	w->exact[B_MW_CMD_OP] += !op_valid(c->op);
	if (m->own && !got)
		own_apply(&w->own, m->own_e, w->own_t[i], c->op, c->events);
	return true;
}

/*
 * The commands in the groups of 8 that the kernel can read whole, before
 * the first it cannot: all of a valid or misaligned array; none of an
 * unmapped, NULL or (past access_ok()) kernel one; those before the
 * group of the half-mapped last command of a straddling one.  A
 * read-only array is readable (ro_page has a page of zeroes after it;
 * the kernel stops at its first command anyway, see check_readonly()).
 */
static int cmds_readable(const struct mw_call *m)
{
	switch (m->cmds_class) {
	case P_VALID:
	case P_MISALIGNED:
	case P_READONLY:
		return m->ncmds;
	case P_STRADDLE:
		return (m->ncmds - 1) / EP_MOD_CHUNK * EP_MOD_CHUNK;
	default:
		return 0;
	}
}

/* Events the wait can store: it stops at the first slot that faults. */
static int events_room(const struct mw_call *m)
{
	switch (m->events_class) {
	case P_VALID:
	case P_MISALIGNED:
		return INT_MAX;		/* more than any instance holds */
	case P_STRADDLE:
		return 1;
	default:
		return 0;		/* NULL, unmapped, read-only, kernel */
	}
}

/*
 * A read-only batch past the checks: the kernel reads the first group,
 * runs it up to its first failure, and cannot write the error fields:
 * EFAULT, the commands having run.  ro_page's zeroes are op 0 on fd 0,
 * which always fails, so only that command ran; a filled batch ran the
 * first group up to its first failure, which the own model predicts and
 * applies (and then checks), and of which only the first command is sure
 * on a pool instance.
 */
static void check_readonly(struct worker *w, const struct mw_call *m,
			   const struct mw_verdict *v, int ret, int err)
{
	int i, n = m->ncmds < EP_MOD_CHUNK ? m->ncmds : EP_MOD_CHUNK;
	char set[128];

	untouched(w, m, "a read-only batch");
	if (ret == -1 && err != EFAULT && in_set(v->refuse, err))
		return;			/* refused after all: nothing ran */
	if (ret != -1 || err != EFAULT) {
		mw_violation(w, V_EXACT, m, ret, err,
			     set_names(v->refuse | E(EFAULT), set, sizeof(set)));
		if (m->own && m->cmds_n)
			own_verify(w, NULL);
		return;
	}
	if (!m->own && m->ep.state == FS_EPOLL)
		checked_exactly(w);
	if (in_set(v->refuse, EFAULT)) {
		/* it may have been refused: no command is sure to have run */
		if (m->own && m->cmds_n)
			own_verify(w, NULL);	/* resync the model */
		return;
	}
	if (!m->own || !m->cmds_n) {
		count_cmd(w, &m->cmds[0]);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct epoll_mod_cmd *c = &m->cmds[i];
		int want = cmd_want(w, m, i);

		count_cmd(w, c);
		if (want)
			break;
		own_apply(&w->own, m->own_e, w->own_t[i], c->op, c->events);
	}
	own_verify(w, "a read-only own batch (the first group ran, up to its first failure)");
}

/*
 * A batch whose first group cannot be read, past the checks: EFAULT,
 * nothing run.
 */
static void check_unreadable(struct worker *w, const struct mw_call *m,
			     const struct mw_verdict *v, int ret, int err,
			     bool verify)
{
	char set[128];

	untouched(w, m, "a batch whose first group cannot be read");
	if (ret == -1 && (err == EFAULT || in_set(v->refuse, err))) {
		if (err == EFAULT && !m->own && m->ep.state == FS_EPOLL)
			checked_exactly(w);
	} else {
		mw_violation(w, V_EXACT, m, ret, err,
			     set_names(v->refuse | E(EFAULT), set, sizeof(set)));
	}
	if (m->own && m->cmds_n && verify)
		own_verify(w, "an own batch that could not be read");
}

/*
 * A writable batch past the checks (or that may be, when epfd was
 * unstable): the error fields must say exactly how far it ran.  The
 * commands run in array order, 8 at a time, and stop at the first
 * failure; a group that cannot be read stops the batch with EFAULT.
 */
static void check_fields(struct worker *w, const struct mw_call *m,
			 const struct mw_verdict *v, int ret, int err)
{
	int i, ran = 0, failed = -1, n = m->ncmds, readable = cmds_readable(m);
	bool model_ok = true;
	char set[128];

	for (i = 0; i < m->cmds_n; i++) {
		int e = m->cmds[i].error;

		if (e == SENTINEL)
			break;
		if (i >= readable) {
			violation(w, V_FIELDS, "epoll_mod_wait(ncmds %d, cmds %s) wrote command %d's error (%d), which %s",
				  n, ptr_name[m->cmds_class], i, e,
				  i >= n ? "is past ncmds" :
				  "is in a group of 8 that cannot be read");
			if (m->own)
				own_verify(w, NULL);
			return;
		}
		if (e != 0) {
			failed = i;
			i++;
			break;
		}
		ran++;
	}
	for (; i < m->cmds_n; i++)
		if (m->cmds[i].error != SENTINEL) {
			violation(w, V_FIELDS, "command %d written (%d) after the batch stopped at command %d",
				  i, m->cmds[i].error, ran);
			if (m->own)
				own_verify(w, NULL);
			return;
		}
	/* only the commands that ran count, and each is checked */
	for (i = 0; i < ran + (failed >= 0); i++)
		model_ok = check_cmd(w, m, i, model_ok) && model_ok;
	if (!model_ok)
		own_verify(w, NULL);

	if (ret >= 0) {
		if (ran != n)
			violation(w, V_FIELDS, "success but %d of %d commands ran",
				  ran, n);
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
	if (ran && ran == readable && readable < n) {
		/* the next group could not be read */
		if (err != EFAULT)
			violation(w, V_FIELDS, "errno %d (%s) with %d of %d commands run, none failed; want EFAULT (command %d's group of 8 is half mapped)",
				  err, strerror(err), ran, n, n - 1);
		return;
	}
	if (ran == n && m->spec && (err == EINTR ||
				    (err == EFAULT && !events_room(m)))) {
		w->wait_efault += err == EFAULT;
		return;		/* every command ran, then the wait failed */
	}
	if (ran == 0 && in_set(v->refuse, err))
		return;		/* refused before any command ran */
	if (ran == 0)
		mw_violation(w, V_EXACT, m, ret, err,
			     set_names(v->refuse | E(0), set, sizeof(set)));
	else
		violation(w, V_FIELDS, "errno %d (%s) with %d of %d commands run (%d readable), none failed",
			  err, strerror(err), ran, n, readable);
}

static void note_modwait(struct worker *w, const struct mw_call *m)
{
	const struct epoll_wait_spec *sp = &m->sv;
	enum ptr_class cc = m->cmds_class;

	w->call_bad = 0;
	note(w, B_MW_EPFD_NUMBER, fd_not_open(m->epfd));
	note(w, B_MW_FLAGS, m->flags);
	note(w, B_MW_NCMDS_NEGATIVE, m->ncmds < 0);
	note(w, B_MW_NCMDS_HUGE, m->ncmds > EPOLL_MOD_MAX_CMDS);
	note(w, B_MW_NCMDS_ZERO_CMDS, !m->ncmds && m->cmds);
	note(w, B_MW_NCMDS_MAX, m->ncmds == EPOLL_MOD_MAX_CMDS);
	note(w, B_MW_CMDS_NOT_USER, m->ncmds > 0 && access_refused(cc));
	note(w, B_MW_CMDS_UNREADABLE, m->ncmds > 0 && !access_refused(cc) &&
				      (class_faults(cc) || cc == P_STRADDLE));
	note(w, B_MW_CMDS_READONLY, m->ncmds > 0 && cc == P_READONLY);
	/* the per-command classes are counted once we know what ran */
	if (!m->spec)
		return;
	note(w, B_MW_SPEC_PTR, bad_ptr(m->spec_class));
	note(w, B_MW_SPEC_SIZE_SMALL, m->spec_size < EPOLL_WAIT_SPEC_SIZE_VER0);
	note(w, B_MW_SPEC_SIZE_BIG, m->spec_size > (size_t)page_size);
	note(w, B_MW_SPEC_TAIL_ZERO, m->tail_zero);
	note(w, B_MW_SPEC_TAIL_NONZERO, m->tail_nonzero);
	note(w, B_MW_SPEC_TAIL_UNMAPPED, m->tail_fault);
	if (!m->spec_used)
		return;
	note(w, B_MW_MAXEVENTS, sp->maxevents <= 0 ||
				sp->maxevents > EP_MAX_EVENTS);
	note(w, B_MW_EVENTS_PTR, bad_ptr(m->events_class));
	note(w, B_MW_SPEC_FLAGS, !spec_flags_valid(sp->flags));
	note(w, B_MW_CLOCKID, !clock_valid(sp->clockid));
	note(w, B_MW_TIMEOUT, !timeout_valid(sp->flags, &sp->timeout));
	note(w, B_MW_FOREVER_TIMEOUT, sp->flags == EPOLL_WAIT_FOREVER &&
				      !timeout_valid(sp->flags, &sp->timeout));
	note(w, B_MW_FOREVER, sp->flags == EPOLL_WAIT_FOREVER);
	note(w, B_MW_ABSTIME, sp->flags == EPOLL_WAIT_ABSTIME);
	note(w, B_MW_SIGMASK_PTR, sp->sigmask && bad_ptr(m->mask_class));
	note(w, B_MW_SIGSETSIZE, sp->sigmask &&
				 sp->sigsetsize != EPOLL_MOD_SIGSETSIZE);
	note(w, B_MW_SIGMASK_RANDOM, sp->sigmask && !bad_ptr(m->mask_class));
}

static void check_modwait(struct worker *w, const struct mw_call *m, int ret,
			  int err, bool verify)
{
	struct mw_verdict v;
	char set[128];

	mw_verdict(m, &v);
	if (m->ep.state == FS_UNSTABLE)
		w->unsure_calls++;
	if (!v.may_run) {
		if (ret == -1 && in_set(v.refuse, err)) {
			if (v.exact)
				checked_exactly(w);
		} else {
			mw_violation(w, V_EXACT, m, ret, err,
				     set_names(v.refuse, set, sizeof(set)));
		}
		untouched(w, m, "a refused call");
		/* "nothing run" also means nothing applied */
		if (m->own && m->cmds_n && verify)
			own_verify(w, "a refused own epoll_mod_wait()");
		return;
	}
	if (m->own)
		checked_exactly(w);	/* every command's result is predicted */
	if (m->ncmds && m->cmds_class == P_READONLY) {
		check_readonly(w, m, &v, ret, err);
		return;
	}
	if (m->ncmds && !cmds_readable(m)) {
		check_unreadable(w, m, &v, ret, err, verify);
		return;
	}
	check_fields(w, m, &v, ret, err);
	if (m->own && ret == -1 && verify)
		own_verify(w, "a failed own epoll_mod_wait()");
}

static void fuzz_modwait(struct worker *w)
{
	struct mw_call m = { 0 };
	struct epoll_event *ev;
	bool verify;
	int ret, err, i;

	pick_modwait(w, &m);
	verify = chance(&w->rng, 25);	/* drawn always: replays stay aligned */
	w->calls[C_MODWAIT]++;
	w->own_calls += m.own;
	note_modwait(w, &m);
	if (m.cmds_protect && mprotect(w->cmds.base, w->cmds.size, PROT_READ))
		ksft_exit_fail_msg("mprotect: %s\n", strerror(errno));
	if (m.raise_usr1)
		syscall(SYS_tgkill, getpid(), w->tid, SIGUSR1);
	ret = epoll_mod_wait_sized(m.epfd, m.flags, m.ncmds, m.cmds, m.spec,
				   m.spec_size);
	err = errno;
	if (m.raise_usr1) {
		/* take back the signal if the wait did not let it in */
		struct timespec zero = { 0 };
		sigset_t usr1;

		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigtimedwait(&usr1, NULL, &zero);
	}
	if (m.cmds_protect &&
	    mprotect(w->cmds.base, w->cmds.size, PROT_READ | PROT_WRITE))
		ksft_exit_fail_msg("mprotect: %s\n", strerror(errno));
	count_errno(w, ret, err);
	if (ret < 0 && err == EINTR)
		w->eintr++;
	settle(&m.ep);
	for (i = 0; i < m.cmds_n; i++)
		settle(&w->refs[i]);

	if (ret < -1 || (ret == -1 && !in_set(mw_arg_errnos | mw_cmd_errnos |
					      mw_wait_errnos, err))) {
		mw_violation(w, V_ERRNO, &m, ret, err, "a documented errno");
		if (m.own)
			own_verify(w, NULL);
		spec_clean(w, &m);
		return;
	}
	check_modwait(w, &m, ret, err, verify);
	ev = (struct epoll_event *)(uintptr_t)m.sv.events;
	if (ret > 0 && !m.spec)
		violation(w, V_EVENTS, "epoll_mod_wait without a spec returned %d", ret);
	else if (ret > 0 && ret > events_room(&m))
		violation(w, V_EVENTS, "epoll_mod_wait returned %d events into a %s events buffer with room for %d",
			  ret, ptr_name[m.events_class], events_room(&m));
	else if (ret > 0 && m.events_class == P_VALID)
		check_events(w, "epoll_mod_wait", ev, ret, m.sv.maxevents);
	spec_clean(w, &m);
}

/* --- the rest: plain waits, I/O, recycling ------------------------------ */

static void fuzz_wait(struct worker *w)
{
	struct epoll_event *ev = (struct epoll_event *)w->events.base;
	struct fd_ref ep;
	int ret, err, want = 0;

	pick_epfd(&w->rng, &ep);
	w->calls[C_WAIT]++;
	ret = epoll_wait(ep.fd, ev, NR_EVENTS, 0);
	err = errno;
	count_errno(w, ret, err);
	settle(&ep);
	/* maxevents and the buffer are valid: only the fd can be wrong */
	if (ep.state == FS_CLOSED)
		want = EBADF;
	else if (ep.state == FS_POLL || ep.state == FS_NO_POLL)
		want = EINVAL;
	if (ret < -1 || (ret == -1 && !in_set(wait_errnos, err)))
		violation(w, V_ERRNO, "epoll_wait(%d) = %d errno %d (%s)", ep.fd,
			  ret, err, strerror(err));
	else if (want && !(ret == -1 && err == want))
		violation(w, V_EXACT, "epoll_wait(%d [%s]) = %d errno %d, want %s",
			  ep.fd, state_name[ep.state], ret, ret < 0 ? err : 0,
			  errno_names[want]);
	else if (ret > 0)
		check_events(w, "epoll_wait", ev, ret, NR_EVENTS);
}

static void fuzz_io(struct worker *w)
{
	uint64_t v = 1;
	char buf[256];
	struct fd_ref ref;

	pick_fd(&w->rng, &ref);
	w->calls[C_IO]++;
	if (ref.fd < 0)
		return;
	/* results do not matter: this only makes events come and go */
	if (chance(&w->rng, 55)) {
		if (write(ref.fd, &v, sizeof(v)) < 0)
			errno = 0;
	} else if (read(ref.fd, buf, sizeof(buf)) < 0) {
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

		if (dice < 35) {
			fuzz_ctl(w);
		} else if (dice < 75) {
			fuzz_modwait(w);
		} else if (dice < 82) {
			fuzz_wait(w);
		} else if (dice < 97) {
			fuzz_io(w);
		} else {
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
		    map_region(&w->spec, 2 * page_size) ||
		    map_region(&w->misc, 1024) || open_own(&w->own))
			return -1;
	}
	for (i = 0; i < POOL_SIZE; i++) {
		struct rng r = { seed + i + 1 };

		atomic_init(&pool[i].fd, -1);
		atomic_init(&pool[i].peer, -1);
		atomic_init(&pool[i].kind, K_DEVNULL);
		atomic_init(&pool[i].gen, 0);
		recycle(&r, i);
	}
	/* the never-open numbers must really be closed */
	for (i = NEVER_OPEN_MIN; i < NEVER_OPEN_MIN + 100; i++)
		if (fcntl(i, F_GETFD) != -1) {
			errno = EEXIST;
			return -1;
		}
	return 0;
}

static void print_summary(unsigned int nthreads, double secs)
{
	unsigned long calls[NR_CALLS] = { 0 }, errs[64] = { 0 };
	unsigned long ok = 0, evs = 0, cmds = 0, eintr = 0, wait_efault = 0;
	unsigned long exact = 0, unsure = 0, own = 0;
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
		wait_efault += workers[i].wait_efault;
		exact += workers[i].exact_calls;
		unsure += workers[i].unsure_calls;
		own += workers[i].own_calls;
		ksft_print_msg("thread %u: ctl=%lu modwait=%lu wait=%lu io=%lu recycle=%lu\n",
			       i, workers[i].calls[C_CTL], workers[i].calls[C_MODWAIT],
			       workers[i].calls[C_WAIT], workers[i].calls[C_IO],
			       workers[i].calls[C_RECYCLE]);
	}
	len = snprintf(line, sizeof(line),
		       "fuzz: seed=%llu threads=%u secs=%.1f calls=%lu ctl=%lu modwait=%lu wait=%lu io=%lu recycle=%lu open_failures=%lu ok=%lu cmds_run=%lu events=%lu own=%lu exact=%lu unstable=%lu violations=%lu errno:",
		       (unsigned long long)seed, nthreads, secs,
		       calls[C_CTL] + calls[C_MODWAIT] + calls[C_WAIT],
		       calls[C_CTL], calls[C_MODWAIT], calls[C_WAIT],
		       calls[C_IO], calls[C_RECYCLE],
		       atomic_load(&open_failures), ok, cmds, evs, own, exact,
		       unsure, atomic_load(&violations));
	for (e = 1; e < 64 && len < (int)sizeof(line) - 32; e++)
		if (errs[e])
			len += snprintf(line + len, sizeof(line) - len, " %s=%lu",
					errno_names[e] ? errno_names[e] : "other",
					errs[e]);
	ksft_print_msg("%s\n", line);
	for (k = 0; k < NR_BAD; k++) {
		unsigned long n = 0, x = 0;

		for (i = 0; i < nthreads; i++) {
			n += workers[i].bad[k];
			x += workers[i].exact[k];
		}
		if (k == B_SIGNAL_SENT)
			ksft_print_msg("fuzz-class: %s calls=%lu\n", bad_name[k],
				       signals_sent);
		else
			ksft_print_msg("fuzz-class: %s calls=%lu exact=%lu\n",
				       bad_name[k], n, x);
	}
	ksft_print_msg("fuzz-class: epoll_mod_wait.eintr calls=%lu\n", eintr);
	ksft_print_msg("fuzz-class: epoll_mod_wait.events_store_efault calls=%lu\n",
		       wait_efault);
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
