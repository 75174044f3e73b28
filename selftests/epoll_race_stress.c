// SPDX-License-Identifier: GPL-2.0
/*
 * epoll_race_stress - exclusive and round-robin epoll items under churn.
 *
 * Threads concurrently ADD, DEL, MOD and close fds, and wait with
 * exclusive and round-robin items on shared pipes, eventfds and unix
 * datagram sockets.  Every token written must be read exactly once, or be
 * accounted for by a close that is known to have happened, and no thread
 * may hang.
 *
 * The model
 * ---------
 *  - C channels (-c, default 6), kinds in turn: (p)ipe, (e)ventfd,
 *    (u)nix SOCK_DGRAM socketpair, all O_NONBLOCK.
 *  - W waiter threads (-w, default 4), each with its own epoll instance:
 *    epoll_wait() with a random timeout of 1..WAIT_MS ms (one call in 16
 *    a non-blocking poll) and a random maxevents of 1..16, then
 *    non-blocking reads of each reported channel until EAGAIN.  Now and
 *    then, while churn runs, a waiter closes its own epoll instance and
 *    builds a new one: ep_free() unhooks its entries from the sources'
 *    wait queues while producers are waking them.
 *  - Each channel's read end is in a random non-empty subset of the
 *    instances, with random events: mostly EPOLLIN|EPOLLEXCLUSIVE or
 *    EPOLLIN|EPOLLEXCLUSIVE|EPOLLROUNDROBIN, a quarter of them with
 *    EPOLLET, and one in eight plain EPOLLIN, so that exclusive entries
 *    share the wait queue with non-exclusive ones, as they do in real
 *    servers.  data.u64 = generation << 8 | channel.
 *  - P producer threads (-p, default 4) write unique 64-bit tokens,
 *    producer << 40 | sequence, one 8-byte write() per token (atomic for
 *    pipes, one datagram for sockets), or 1 to an eventfd (counted only),
 *    in bursts of 1..8 writes, only while the main thread's gate is open.
 *  - J churn threads (-j, default 2) pick a random channel and either
 *    flip its membership in a random instance (DEL, ADD with new random
 *    events), MOD it (allowed for plain items, EINVAL for exclusive ones),
 *    try an ADD that must fail with EINVAL, or close and replace the whole
 *    channel: drain what it holds ("drained at close"), close both ends,
 *    so the kernel removes every epoll item through the close path, open
 *    a new channel of the same kind and ADD it to random instances.  The
 *    channel's generation is bumped, so waiters recognise stale events.
 *
 * Locking (user space only; the kernel paths stay concurrent):
 *  - chan->topo: held by whoever changes the channel's membership or fds
 *    (churn; a waiter replacing its instance takes all of them, in index
 *    order; the main thread after churn stopped).  This makes the
 *    bookkeeping of which instance holds which item exact, so every
 *    epoll_ctl() has exactly one expected result and any other is a
 *    failure (no tolerated ENOENT/EEXIST).
 *  - chan->life: a writer-preferring rwlock.  Producers and readers hold
 *    it shared around each write()/read() syscall; close and replace holds
 *    it exclusively, so no syscall can hit a reused fd number.  ADD, DEL,
 *    MOD and epoll_wait() run without it, concurrently with I/O.
 *
 * Phases (the main thread; a gate lets the producers write or not):
 *  1. churn: everything runs, for -d SECS less the time of phase 3;
 *  2. settle: close the gate, stop and join churn; give the waiters
 *     STRANDED_MS to read what is left (what they cannot is reported as
 *     "unread_after_churn=": lost by design, see the caveats), then
 *     re-arm each channel once (DEL and ADD of one of its items: ADD polls
 *     the file and queues it if readable) and wait until everything
 *     written was read or drained at close;
 *  3. no churn: for -q SECS the topology stays as phase 2 left it (no
 *     ADD, DEL, MOD, close, epoll instance replaced or re-arm) while the
 *     producers write in rounds of 1..128 ms.  After each round the gate
 *     closes and every token and eventfd count written must be read
 *     within -t SECS by the waiters' own epoll_wait()s.  What is not is
 *     "stranded=" and fails the run: with nothing deleted a lost wakeup
 *     is a bug.  Only then is the phase cut short and one re-arm tried,
 *     to tell a lost wakeup from lost data.  Each round ends in silence,
 *     so its last wakeups cannot be covered by later writes;
 *  4. stop and join the producers, then the waiters.
 *
 * Checks (TAP, one line each, always in this order; the words before the
 * colon name the check):
 *  1 "syscalls:"                no syscall result the bookkeeping did not
 *                               predict;
 *  2 "settle:"                  phase 2 ended with everything accounted;
 *  3 "no-churn: stranded=N"     phase 3: N == 0, and tokens did flow;
 *  4 "tokens exactly once:"     each token seen at most once (an atomic
 *                               test-and-set in a bitmap), every written
 *                               token seen, none that was never written;
 *  5 "eventfd counts balance:"  writes == reads + drained at close;
 *  6 "watchdog: no thread hung" every thread showed progress at least
 *                               every min(HANG_MS, -t) and joined within
 *                               min(JOIN_MS, -t) of its stop.
 * 3 to 5 are skipped once a thread hung.  An alarm() prints "Bail out!"
 * and exits 1 if even the main thread gets stuck.
 *
 * Caveats
 * -------
 *  - Lost by design: an exclusive wakeup consumed by instance eN is not
 *    passed on to the other instances, so if the item is deleted from eN
 *    (or its fd closed) before eN's waiter harvests it, the data stays in
 *    the channel and no instance has the item on its ready list.  The
 *    bounded epoll_wait() alone does not find it: a level-triggered item
 *    is only re-polled once it is on the ready list.  While producers run
 *    the next write wakes again; after churn stopped phase 2 re-arms each
 *    channel once.  That is why phase 3 exists: only there is a missing
 *    wakeup a failure.
 *  - -s SEED replays every thread's random choices, not the interleaving.
 *  - Pipes and datagram sockets can fill up (EAGAIN, counted as full=):
 *    the producer ends its burst and picks another channel; only
 *    successful writes are tokens.  A producer stops after -T tokens (the
 *    bitmap size) and says so.
 *  - The waiters use no timeout-driven sweep of the channels: a read only
 *    ever follows an event, so a lost wakeup cannot be papered over.
 *
 * Options: -d SECS   tokens flow for SECS, phases 1 and 3 together
 *                    (default STRESS_SECS if set, else 8); phase 1 gets at
 *                    least 1 s
 *          -q SECS   phase 3 (default a quarter of -d, at least 1)
 *          -t SECS   patience (default 30): deadline of phase 2 and of
 *                    each phase 3 round, and the watchdog's bounds above
 *          -s SEED -w WAITERS -p PRODUCERS -c CHANNELS -j CHURNERS
 *          -T TOKENS (cap per producer, default 16M; 2 MiB of bitmap each)
 *          -F FAULT  inject a fault to prove that the checks can fail
 *
 * Faults.  Each fires once, at its first chance in phase 3 (so in a run
 * of any length), and makes the binary exit 1 with, among the TAP lines:
 *   drop  a waiter reads a token and forgets it; after its round's -t:
 *           not ok 3 no-churn: stranded=1 of written=...
 *           not ok 4 tokens exactly once: ... missing=1 bogus=0
 *   dup   a waiter reports a token twice; only:
 *           not ok 4 tokens exactly once: ... dup=1 missing=0 bogus=0
 *   hang  a waiter stops in pause(), found by its heartbeat or by its
 *         join, at most -q plus -t SECS after phase 3 started:
 *           not ok 6 watchdog: no thread hung ...
 *         and 3 to 5 are skipped.
 * "-d 2 -t 3" is a short run: 1 s of each of phases 1 and 3; about 2 s
 * with no fault or with dup, 5 with hang, 7 with drop (two waits of -t:
 * the round's and the diagnostic re-arm's).
 *
 * Output: the seed first ("replay with -s"), the initial topology, then
 * per instance what reached it, and one summary line:
 *   # stress: seed= secs= quiet_secs= ... tokens= (pipe and socket tokens
 *     written) eventfd= (eventfd counts written) drained_at_close= full=
 *     (EAGAIN writes) closes= (channels replaced) epoll_closes=
 *     (instances replaced) adds= (x= rr=) dels= mods= bad_adds= rearms=
 *     unread_after_churn= (phase 2, before its re-arm) quiet_rounds=
 *     quiet_written= (tokens and eventfd counts written in phase 3)
 *     stranded= (of them never read) wakeups= (epoll_wait() > 0) events=
 *     stale= (old generation) empty= (event, nothing to read) timeouts=
 *     run_ms= (phase 1) quiet_ms= (phase 3, its waits included)
 *     total_ms=
 *
 * The binary skips itself (exit 4) on a kernel without EPOLLROUNDROBIN.
 * Set EPOLL_WAKE_NOPROBE=1 in the environment to bypass that probe, e.g.
 * on an unpatched kernel: then no item is round-robin and no ADD that
 * relies on the series to fail is tried; EPOLLEXCLUSIVE alone has been
 * upstream since v4.5.
 *
 * Diagram legend (style of filesystems/epoll/epoll_wakeup_test.c):
 *   tN   waiter thread, (ew) epoll_wait() on its own eN
 *   eN   epoll instance of tN
 *   sN   source: (p)ipe, (e)ventfd, (u)nix dgram socketpair, read end
 *   x EPOLLEXCLUSIVE, rr EPOLLROUNDROBIN, (lt)/(et) level/edge triggered
 *   P    producer threads, K churn threads, ==> write()
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Generated per kernel base: EPOLLEXCLUSIVE and EPOLLROUNDROBIN */
#include "epoll_uapi.h"

#include "kselftest.h"
#include "thread_util.h"

#define XRR		(EPOLLEXCLUSIVE | EPOLLROUNDROBIN)
#define MAX_WAITERS	16
#define MAX_PRODUCERS	16
#define MAX_CHANNELS	64	/* data.u64 keeps the channel in 8 bits */
#define MAX_CHURNERS	4
#define MAX_THREADS	(MAX_WAITERS + MAX_PRODUCERS + MAX_CHURNERS)
#define WAIT_MS		50	/* epoll_wait() bound, see "Lost by design" */
#define HANG_MS		30000	/* no sign of life for that long: hung */
#define JOIN_MS		10000	/* a stopped thread must be gone by then */
#define DIAG_MS		5000	/* a re-arm after a failure, to diagnose it */
#define SEQ_BITS	40	/* token = producer << SEQ_BITS | sequence */
#define PIPE_BATCH	512	/* tokens per pipe read() */
#define READ_LOOPS	1024	/* read()s per event while producers run */
#define ROUND_LOG2_MS	7	/* phase 3 rounds: 1 << 0..7 ms of writes */
#define STRANDED_MS	2000	/* phase 2: grace period before the re-arm */
#define MAX_REPORTS	20	/* error lines printed; the rest only counted */
#define BITS_PER_WORD	(8 * sizeof(unsigned long))
#define NOPROBE_ENV	"EPOLL_WAKE_NOPROBE"	/* as in wake_common.h */

enum chan_kind { CH_PIPE, CH_EVENTFD, CH_DGRAM };
static const char kind_letter[] = "peu";

enum fault { F_NONE, F_DROP, F_DUP, F_HANG };
static const char * const fault_name[] = {
	"", " fault=drop", " fault=dup", " fault=hang",
};

struct chan {
	pthread_rwlock_t life;	/* shared: one read/write; excl.: close */
	pthread_mutex_t topo;	/* membership, fds and generation changes */
	enum chan_kind kind;
	int rd, wr;		/* eventfd: rd == wr; -1: channel lost */
	uint64_t gen;		/* bumped by close and replace */
	uint32_t ev[MAX_WAITERS]; /* events it is in eN with; 0: not in eN */
	int nmember;
};

enum role { R_WAITER, R_PRODUCER, R_CHURN };

struct thread {
	pthread_t th;
	enum role role;
	int idx;
	char name[16];
	uint64_t rng;
	long long beat;		/* now_ms() of the last sign of life */
	const char *doing;	/* what it is in, for a hang report */
	bool running;		/* created and not joined yet */
	int exited;		/* returned: no heartbeat expected */
	bool hang_reported;
	void *(*fn)(void *arg);
	/* waiters: what reached this instance */
	uint64_t wakeups, events, tokens, evcount;
};

/* Statistics and accounting, all updated with relaxed atomics. */
static struct {
	uint64_t tok_read, tok_drained;	/* pipe and socket tokens */
	uint64_t ev_written, ev_read, ev_drained; /* eventfd counts */
	uint64_t full;			/* writes refused with EAGAIN */
	uint64_t wakeups, events, stale, empty, timeouts;
	uint64_t adds, adds_x, adds_rr, dels, mods, bad_adds, closes;
	uint64_t ep_closes;
	uint64_t rearms;
	uint64_t errors, dups, bogus;
} st;

static struct {
	int secs, waiters, producers, channels, churners, settle_secs;
	int churn_secs, quiet_secs;	/* phases 1 and 3, from -d and -q */
	int hang_ms, join_ms;		/* watchdog, capped by -t */
	uint64_t seed, cap;
	enum fault fault;
	bool no_rr;			/* probe bypassed: exclusive only */
} cfg = {
	.secs = 8, .waiters = 4, .producers = 4, .channels = 6,
	.churners = 2, .settle_secs = 30, .cap = 1ULL << 24,
};

static int epfd[MAX_WAITERS];
static struct chan chans[MAX_CHANNELS];
static struct thread threads[MAX_THREADS];
static int nthreads;
static unsigned long *seen;		/* producers * cap bits */
static uint64_t written[MAX_PRODUCERS];
static int stop_producers, stop_churn, stop_waiters;
/*
 * The producers' gate: they start a burst only while it is open, and
 * count themselves in writers while in one.  See gate_enter().
 */
static int gate_open = 1, writers;
static int fault_armed;			/* set when phase 3 starts */
static bool hung;
static char alarm_msg[128];

#define ADD(field, n)	__atomic_fetch_add(&st.field, (n), __ATOMIC_RELAXED)
#define GET(field)	__atomic_load_n(&st.field, __ATOMIC_RELAXED)
#define STOPPED(flag)	__atomic_load_n(&(flag), __ATOMIC_ACQUIRE)

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* --- small helpers ----------------------------------------------------- */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* xorshift64*: cheap, per thread, reproducible from the seed */
static uint32_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (uint32_t)((*s * 0x2545f4914f6cdd1dULL) >> 32);
}

static uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return rnd(s) % n;
}

static void beat(struct thread *t, const char *doing)
{
	__atomic_store_n(&t->beat, now_ms(), __ATOMIC_RELAXED);
	__atomic_store_n(&t->doing, doing, __ATOMIC_RELAXED);
}

/*
 * Any syscall result that the bookkeeping does not predict.  The first
 * MAX_REPORTS are printed, all are counted and fail the run.
 */
static __printf(1, 2) void report(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (ADD(errors, 1) >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ksft_print_msg("error: %s\n", buf);
}

static const char *events_str(uint32_t ev, char *buf, size_t len)
{
	snprintf(buf, len, "in%s%s%s", ev & EPOLLEXCLUSIVE ? "|x" : "",
		 ev & EPOLLROUNDROBIN ? "|rr" : "", ev & EPOLLET ? "|et" : "");
	return buf;
}

/* epoll_ctl() as 0 or -errno */
static int ctl(int ep, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return epoll_ctl(ep, op, fd, &ev) ? -errno : 0;
}

/* --- tokens ------------------------------------------------------------ */

static uint64_t make_token(unsigned int producer, uint64_t seq)
{
	return (uint64_t)producer << SEQ_BITS | seq;
}

/*
 * Test-and-set @tok in the bitmap.  A token seen twice, or one no producer
 * could have written, is reported with the channel it came from.
 */
static void see_token(uint64_t tok, int c, bool at_close)
{
	uint64_t p = tok >> SEQ_BITS, seq = tok & ((1ULL << SEQ_BITS) - 1);
	unsigned long bit, old;
	uint64_t idx;

	if (p >= (uint64_t)cfg.producers || seq >= cfg.cap) {
		if (ADD(bogus, 1) < MAX_REPORTS)
			ksft_print_msg("bogus token %#llx from s%d%s\n",
				       (unsigned long long)tok, c,
				       at_close ? " (drained at close)" : "");
		return;
	}
	idx = p * cfg.cap + seq;
	bit = 1UL << (idx % BITS_PER_WORD);
	old = __atomic_fetch_or(&seen[idx / BITS_PER_WORD], bit,
				__ATOMIC_RELAXED);
	if ((old & bit) && ADD(dups, 1) < MAX_REPORTS)
		ksft_print_msg("token p%llu:%llu seen twice, again from s%d%s\n",
			       (unsigned long long)p, (unsigned long long)seq,
			       c, at_close ? " (drained at close)" : "");
}

/*
 * -F: the first waiter to get the chance misbehaves, once.  Armed only in
 * phase 3, which every run reaches and which is where a lost token must
 * be caught without help.
 */
static bool fault_fires(enum fault f)
{
	int armed = 1;

	if (cfg.fault != f)
		return false;
	return __atomic_compare_exchange_n(&fault_armed, &armed, 0, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* A batch of tokens read by a waiter (@t) or drained at close (!@t). */
static void account_tokens(struct thread *t, const uint64_t *tok, int n,
			   int c)
{
	int i;

	for (i = 0; i < n; i++) {
		if (t && fault_fires(F_DROP)) {
			ksft_print_msg("fault: dropping token %#llx\n",
				       (unsigned long long)tok[i]);
			continue;
		}
		see_token(tok[i], c, !t);
		if (t && fault_fires(F_DUP)) {
			ksft_print_msg("fault: reporting token %#llx twice\n",
				       (unsigned long long)tok[i]);
			see_token(tok[i], c, false);
		}
		if (t) {
			ADD(tok_read, 1);
			t->tokens++;
		} else {
			ADD(tok_drained, 1);
		}
	}
}

/* --- channels ---------------------------------------------------------- */

static int chan_open(struct chan *ch)
{
	int sv[2], fd;

	switch (ch->kind) {
	case CH_PIPE:
		return open_pipe(&ch->rd, &ch->wr);
	case CH_EVENTFD:
		fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		ch->rd = fd;
		ch->wr = fd;
		return 0;
	case CH_DGRAM:
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, 0, sv))
			return -errno;
		ch->rd = sv[0];
		ch->wr = sv[1];
		return 0;
	}
	return -EINVAL;
}

/*
 * Read one batch from @ch (shared or exclusive ch->life held).  Returns
 * the number of tokens or eventfd reads, 0 at EAGAIN, -1 at EOF (allowed
 * only when @eof_ok: the closer shut the write end first), -2 on error.
 */
static int chan_read_once(struct thread *t, struct chan *ch, int c,
			  bool eof_ok)
{
	uint64_t buf[PIPE_BATCH];
	ssize_t n;

	switch (ch->kind) {
	case CH_PIPE:
		n = read(ch->rd, buf, sizeof(buf));
		break;
	case CH_DGRAM:
		/* room for two tokens: a longer datagram must show up */
		n = read(ch->rd, buf, 2 * sizeof(buf[0]));
		if (n > 0 && n != sizeof(buf[0])) {
			report("s%d: datagram of %zd bytes", c, n);
			return -2;
		}
		break;
	default:
		n = read(ch->rd, buf, sizeof(buf[0]));
		if (n == sizeof(buf[0])) {
			if (t) {
				ADD(ev_read, buf[0]);
				t->evcount += buf[0];
			} else {
				ADD(ev_drained, buf[0]);
			}
			return 1;
		}
		break;
	}
	if (n < 0) {
		if (errno == EAGAIN)
			return 0;
		report("s%d: read: %s", c, strerror(errno));
		return -2;
	}
	if (n == 0) {
		if (eof_ok)
			return -1;
		report("s%d: unexpected EOF", c);
		return -2;
	}
	if (n % sizeof(buf[0])) {
		report("s%d: torn read of %zd bytes", c, n);
		return -2;
	}
	account_tokens(t, buf, n / sizeof(buf[0]), c);
	return n / sizeof(buf[0]);
}

/*
 * Read until EAGAIN (or EOF), at most @max_loops read()s.  A waiter is
 * bounded while producers run so that it does not starve in one channel;
 * what it leaves is reported again (level triggered) or on the next write.
 */
static int chan_drain(struct thread *t, struct chan *ch, int c, bool eof_ok,
		      unsigned int max_loops)
{
	unsigned int i;
	int n, total = 0;

	for (i = 0; i < max_loops; i++) {
		n = chan_read_once(t, ch, c, eof_ok);
		if (n <= 0)
			break;
		total += n;
	}
	return total;
}

static void chan_close(struct chan *ch)
{
	if (ch->wr != ch->rd)
		close_fd(&ch->wr);
	ch->wr = -1;
	close_fd(&ch->rd);
}

/* --- membership, under ch->topo ---------------------------------------- */

static uint64_t chan_data(struct chan *ch, int c)
{
	return ch->gen << 8 | (uint64_t)c;
}

/* Mostly exclusive and round-robin; plain items share the queue. */
static uint32_t random_events(uint64_t *rng)
{
	uint32_t r = rnd_below(rng, 16), ev = EPOLLIN;

	if (r >= 2)
		ev |= EPOLLEXCLUSIVE;
	if (r >= 9 && !cfg.no_rr)
		ev |= EPOLLROUNDROBIN;
	if (!rnd_below(rng, 4))
		ev |= EPOLLET;
	return ev;
}

static void item_add(struct chan *ch, int c, int w, uint32_t events)
{
	char buf[32];
	int ret;

	ret = ctl(epfd[w], EPOLL_CTL_ADD, ch->rd, events, chan_data(ch, c));
	if (ret) {
		report("ADD s%d to e%d (%s): %s", c, w,
		       events_str(events, buf, sizeof(buf)), strerror(-ret));
		return;
	}
	ch->ev[w] = events;
	ch->nmember++;
	ADD(adds, 1);
	if (events & EPOLLROUNDROBIN)
		ADD(adds_rr, 1);
	else if (events & EPOLLEXCLUSIVE)
		ADD(adds_x, 1);
}

static void item_del(struct chan *ch, int c, int w)
{
	int ret;

	ret = ctl(epfd[w], EPOLL_CTL_DEL, ch->rd, 0, 0);
	if (ret) {
		report("DEL s%d from e%d: %s", c, w, strerror(-ret));
		return;
	}
	ch->ev[w] = 0;
	ch->nmember--;
	ADD(dels, 1);
}

/* Add a fresh channel to a random non-empty subset of the instances. */
static void chan_add_random(struct chan *ch, int c, uint64_t *rng)
{
	int w, first = rnd_below(rng, cfg.waiters);

	for (w = 0; w < cfg.waiters; w++)
		if (w == first || !rnd_below(rng, 2))
			item_add(ch, c, w, random_events(rng));
}

/*
 * MOD is refused for an exclusive item whatever the new mask, and for any
 * item when it carries a wake mode flag; a plain item can change EPOLLET.
 * A failed MOD must leave the item as it was, which later DEL/ADDs check.
 */
static void item_mod(struct chan *ch, int c, int w, uint64_t *rng)
{
	uint32_t old = ch->ev[w], ev = EPOLLIN;
	bool bad = (old & EPOLLEXCLUSIVE) || !rnd_below(rng, 4);
	char buf[32];
	int ret;

	if (rnd_below(rng, 2))
		ev |= EPOLLET;
	if (bad && !(old & EPOLLEXCLUSIVE))
		ev |= rnd_below(rng, 2) ? EPOLLEXCLUSIVE : XRR;
	ret = ctl(epfd[w], EPOLL_CTL_MOD, ch->rd, ev, chan_data(ch, c));
	if (ret != (bad ? -EINVAL : 0)) {
		report("MOD s%d in e%d (%s) to %s: %s", c, w,
		       events_str(old, buf, sizeof(buf)),
		       ev & EPOLLEXCLUSIVE ? "in|x" : "in",
		       ret ? strerror(-ret) : "succeeded");
		return;
	}
	if (!bad)
		ch->ev[w] = ev;
	ADD(mods, 1);
}

/* An ADD that must fail with EINVAL and leave nothing behind. */
static void item_bad_add(struct chan *ch, int c, int w, uint64_t *rng)
{
	static const uint32_t bad[] = {
		EPOLLIN | EPOLLROUNDROBIN,		/* rr needs x */
		EPOLLIN | EPOLLEXCLUSIVE | EPOLLPRI,
		EPOLLIN | XRR | EPOLLONESHOT,
		EPOLLIN | XRR | EPOLLRDHUP,
	};
	/* without the series a lone EPOLLROUNDROBIN is ignored, not refused */
	int first = cfg.no_rr ? 1 : 0;
	uint32_t ev = bad[first + rnd_below(rng, 4 - first)];
	int ret;

	ret = ctl(epfd[w], EPOLL_CTL_ADD, ch->rd, ev, chan_data(ch, c));
	if (ret != -EINVAL) {
		report("bad ADD %#x of s%d to e%d: %s", ev, c, w,
		       ret ? strerror(-ret) : "succeeded");
		/* keep the bookkeeping exact if the kernel took it */
		if (!ret) {
			ch->ev[w] = ev;
			ch->nmember++;
		}
		return;
	}
	ADD(bad_adds, 1);
}

/* --- churn ------------------------------------------------------------- */

/* One membership change of channel @c in a random instance. */
static void churn_item(struct thread *t, int c)
{
	struct chan *ch = &chans[c];
	int w = rnd_below(&t->rng, cfg.waiters), w2;
	uint32_t op = rnd_below(&t->rng, 8);

	if (!ch->ev[w]) {
		if (!op)
			item_bad_add(ch, c, w, &t->rng);
		item_add(ch, c, w, random_events(&t->rng));
		return;
	}
	if (op < 2) {
		item_mod(ch, c, w, &t->rng);
		return;
	}
	item_del(ch, c, w);
	/* Never leave a live channel without an item: re-add somewhere. */
	if (ch->nmember && rnd_below(&t->rng, 2))
		return;
	w2 = rnd_below(&t->rng, cfg.waiters);
	if (ch->ev[w2])
		w2 = w;
	item_add(ch, c, w2, random_events(&t->rng));
}

/*
 * Close and replace channel @c.  Both ends are closed with ch->life held
 * exclusively, so no producer or reader is inside a syscall on them and
 * no fd number can be reused under them.  The epoll items go away in the
 * close path (eventpoll_release), concurrently with waiters that may have
 * them on their ready lists or be woken for them.  Sometimes the write end
 * goes first, while the items are still hooked: a pipe's release then
 * wakes every entry of its wait queue (3.19: a POLLIN|POLLOUT|POLLHUP key,
 * which no exclusive item consumes; 6.12: wake_up_interruptible_all(),
 * which walks past every round-robin entry it rotates), and the drain
 * reads up to EOF.
 */
static void churn_replace(struct thread *t, int c)
{
	struct chan *ch = &chans[c];
	bool wr_first = ch->kind != CH_EVENTFD && rnd_below(&t->rng, 2);
	int w, ret;

	beat(t, "close: life lock");
	pthread_rwlock_wrlock(&ch->life);
	beat(t, "close");
	if (wr_first)
		close_fd(&ch->wr);
	chan_drain(NULL, ch, c, wr_first, UINT32_MAX);
	chan_close(ch);
	for (w = 0; w < cfg.waiters; w++)
		ch->ev[w] = 0;
	ch->nmember = 0;
	ch->gen++;
	ret = chan_open(ch);
	if (ret) {
		report("s%d: reopen: %s", c, strerror(-ret));
		ch->rd = -1;
		ch->wr = -1;
	}
	pthread_rwlock_unlock(&ch->life);
	ADD(closes, 1);
	/* producers may write before the ADDs: ADD polls, nothing is lost */
	if (!ret)
		chan_add_random(ch, c, &t->rng);
}

static void *churn_main(void *arg)
{
	struct thread *t = arg;
	struct chan *ch;
	int c;

	while (!STOPPED(stop_churn)) {
		c = rnd_below(&t->rng, cfg.channels);
		ch = &chans[c];
		beat(t, "topo lock");
		pthread_mutex_lock(&ch->topo);
		beat(t, "epoll_ctl");
		if (ch->rd >= 0) {
			if (!rnd_below(&t->rng, 16))
				churn_replace(t, c);
			else
				churn_item(t, c);
		}
		pthread_mutex_unlock(&ch->topo);
		beat(t, "sleep");
		usleep(rnd_below(&t->rng, 300));
	}
	return NULL;
}

/* --- producers --------------------------------------------------------- */

/*
 * Write one token (or eventfd count) to @ch, ch->life held shared.
 * Returns 1 for a token, 2 for an eventfd count, 0 if the channel is
 * full, -1 on error.
 */
static int write_token(struct chan *ch, int c, unsigned int p, uint64_t seq)
{
	uint64_t v = ch->kind == CH_EVENTFD ? 1 : make_token(p, seq);
	ssize_t n;

	n = write(ch->wr, &v, sizeof(v));
	if (n == sizeof(v)) {
		if (ch->kind == CH_EVENTFD)
			ADD(ev_written, 1);
		return ch->kind == CH_EVENTFD ? 2 : 1;
	}
	if (n < 0 && errno == EAGAIN) {
		ADD(full, 1);
		return 0;
	}
	report("s%d: write: %s", c, n < 0 ? strerror(errno) : "short");
	return -1;
}

/*
 * Start a burst if the gate is open.  Both sides are sequentially
 * consistent: a producer counts itself in writers, then reads gate_open;
 * gate_close() clears gate_open, then reads writers.  So once the main
 * thread saw no writer, no burst can start until it opens the gate again,
 * and written[] and ev_written stay put.
 */
static bool gate_enter(void)
{
	__atomic_fetch_add(&writers, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&gate_open, __ATOMIC_SEQ_CST))
		return true;
	__atomic_fetch_sub(&writers, 1, __ATOMIC_SEQ_CST);
	return false;
}

static void gate_leave(void)
{
	__atomic_fetch_sub(&writers, 1, __ATOMIC_SEQ_CST);
}

/* A burst of 1..8 writes to one random channel. */
static bool produce_burst(struct thread *t, uint64_t *seq)
{
	int c = rnd_below(&t->rng, cfg.channels), i, n = 0;
	int burst = 1 + rnd_below(&t->rng, 8);
	struct chan *ch = &chans[c];

	beat(t, "life lock");
	pthread_rwlock_rdlock(&ch->life);
	beat(t, "write");
	for (i = 0; i < burst && ch->wr >= 0 && *seq < cfg.cap; i++) {
		n = write_token(ch, c, t->idx, *seq);
		if (n <= 0)
			break;
		if (n == 1) {
			++*seq;
			__atomic_store_n(&written[t->idx], *seq,
					 __ATOMIC_RELAXED);
		}
	}
	pthread_rwlock_unlock(&ch->life);
	return *seq < cfg.cap;
}

static void *producer_main(void *arg)
{
	struct thread *t = arg;
	uint64_t seq = 0;
	bool more;

	while (!STOPPED(stop_producers)) {
		if (!gate_enter()) {
			beat(t, "gate closed");
			usleep(1000);
			continue;
		}
		more = produce_burst(t, &seq);
		gate_leave();
		if (!more) {
			ksft_print_msg("%s: token cap %llu reached\n", t->name,
				       (unsigned long long)cfg.cap);
			break;
		}
		/* vary the pace, so waiters are caught in every state */
		if (!rnd_below(&t->rng, 4)) {
			beat(t, "sleep");
			usleep(rnd_below(&t->rng, 200));
		}
	}
	beat(t, "done");
	return NULL;
}

/* --- waiters ----------------------------------------------------------- */

static void handle_event(struct thread *t, const struct epoll_event *ev)
{
	uint64_t gen = ev->data.u64 >> 8;
	int c = ev->data.u64 & 0xff, n;
	unsigned int loops;
	struct chan *ch;

	if (c >= cfg.channels) {
		report("e%d: event with data %#llx", t->idx,
		       (unsigned long long)ev->data.u64);
		return;
	}
	ch = &chans[c];
	beat(t, "life lock");
	pthread_rwlock_rdlock(&ch->life);
	beat(t, "read");
	/* a closed and replaced channel: its items are gone, or going */
	if (ch->gen != gen || ch->rd < 0) {
		pthread_rwlock_unlock(&ch->life);
		ADD(stale, 1);
		return;
	}
	/*
	 * Once churn stopped, read to EAGAIN: an edge-triggered item left
	 * with data is not reported again before the next write, and the
	 * end of a phase 3 round has none.
	 */
	loops = STOPPED(stop_churn) ? UINT32_MAX : READ_LOOPS;
	n = chan_drain(t, ch, c, false, loops);
	pthread_rwlock_unlock(&ch->life);
	if (!n)
		ADD(empty, 1);
}

/*
 * Close this waiter's own epoll instance and build a new one holding items
 * for the same channels, with new random events.  The old instance's
 * entries leave every source's wait queue in ep_free() while producers go
 * on waking them.  The waiter does it itself, so no epoll_wait() can run
 * on a reused fd number; holding every topo lock (in index order) keeps
 * churn's epoll_ctl()s off the instance.  Only while churn runs: phases 2
 * and 3 need a fixed topology, and rearm_all() takes every topo lock after
 * stop_churn is set, so a replacement is either over by then or sees it.
 */
static void waiter_replace_epoll(struct thread *t)
{
	int w = t->idx, c, ep;

	beat(t, "topo locks");
	for (c = 0; c < cfg.channels; c++)
		pthread_mutex_lock(&chans[c].topo);
	beat(t, "replace epoll");
	if (STOPPED(stop_churn))
		goto unlock;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		report("e%d: epoll_create1: %s", w, strerror(errno));
		goto unlock;
	}
	close(epfd[w]);
	epfd[w] = ep;
	ADD(ep_closes, 1);
	for (c = 0; c < cfg.channels; c++) {
		struct chan *ch = &chans[c];

		if (!ch->ev[w])
			continue;
		/* the item went away with the instance */
		ch->ev[w] = 0;
		ch->nmember--;
		if (ch->rd >= 0)
			item_add(ch, c, w, random_events(&t->rng));
	}
unlock:
	for (c = cfg.channels - 1; c >= 0; c--)
		pthread_mutex_unlock(&chans[c].topo);
}

/* -F hang: stop for good, beating no more and never returning. */
static void __noreturn waiter_hang(struct thread *t)
{
	ksft_print_msg("fault: %s stops\n", t->name);
	beat(t, "fault: hang");
	for (;;)
		pause();
}

static void *waiter_main(void *arg)
{
	struct thread *t = arg;
	struct epoll_event ev[16];
	int i, n, max, timeout;

	while (!STOPPED(stop_waiters)) {
		/* before any event: it must not depend on this instance's items */
		if (fault_fires(F_HANG))
			waiter_hang(t);
		/*
		 * Mostly a bounded sleep; sometimes a non-blocking poll, which
		 * never consumes an exclusive wakeup.  A short array leaves
		 * ready items behind for the next call.
		 */
		max = 1 + rnd_below(&t->rng, 16);
		timeout = rnd_below(&t->rng, 16) ?
			  1 + (int)rnd_below(&t->rng, WAIT_MS) : 0;
		beat(t, "epoll_wait");
		n = epoll_wait(epfd[t->idx], ev, max, timeout);
		beat(t, "events");
		if (n < 0) {
			if (errno != EINTR)
				report("e%d: epoll_wait: %s", t->idx,
				       strerror(errno));
			continue;
		}
		if (!n) {
			ADD(timeouts, 1);
			continue;
		}
		ADD(wakeups, 1);
		ADD(events, n);
		t->wakeups++;
		t->events += n;
		for (i = 0; i < n; i++)
			handle_event(t, &ev[i]);
		if (cfg.churners && !rnd_below(&t->rng, 512) &&
		    !STOPPED(stop_churn))
			waiter_replace_epoll(t);
	}
	return NULL;
}

/* --- threads and watchdog ---------------------------------------------- */

static void *thread_entry(void *arg)
{
	struct thread *t = arg;
	void *ret = t->fn(t);

	__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	return ret;
}

static void start_thread(enum role role, int idx, void *(*fn)(void *))
{
	static const char * const prefix[] = { "t", "P", "K" };
	struct thread *t = &threads[nthreads++];
	int ret;

	t->role = role;
	t->idx = idx;
	t->fn = fn;
	snprintf(t->name, sizeof(t->name), "%s%d", prefix[role], idx);
	t->rng = splitmix64(cfg.seed ^ ((uint64_t)role << 32 | idx)) | 1;
	beat(t, "start");
	ret = pthread_create(&t->th, NULL, thread_entry, t);
	if (ret)
		ksft_exit_fail_msg("pthread_create %s: %s\n", t->name,
				   strerror(ret));
	t->running = true;
}

/* Every running thread must show a sign of life every cfg.hang_ms. */
static bool check_heartbeats(void)
{
	long long now = now_ms(), age;
	int i;

	for (i = 0; i < nthreads; i++) {
		struct thread *t = &threads[i];

		if (!t->running || __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE))
			continue;
		age = now - __atomic_load_n(&t->beat, __ATOMIC_RELAXED);
		if (age > cfg.hang_ms && !t->hang_reported) {
			t->hang_reported = true;
			ksft_print_msg("hang: %s no progress for %lld ms, in %s\n",
				       t->name, age,
				       __atomic_load_n(&t->doing,
						       __ATOMIC_RELAXED));
			hung = true;
		}
	}
	return !hung;
}

/*
 * Wait until @done() or @ms elapsed; false on timeout or hang.  Polls
 * after 1 ms, then backs off to 20 ms: a phase 3 round that delivers at
 * once costs no more than it takes.
 */
static bool watch(long long ms, bool (*done)(void))
{
	long long end = now_ms() + ms, left;
	long long nap_us = 1000;

	for (;;) {
		if (done && done())
			return true;
		if (!check_heartbeats())
			return false;
		left = end - now_ms();
		if (left <= 0)
			return !done;
		usleep(nap_us < left * 1000 ? nap_us : left * 1000);
		if (nap_us < 20000)
			nap_us *= 2;
	}
}

static bool join_role(enum role role)
{
	struct timespec dl;
	int i, ret;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += cfg.join_ms / 1000;
	dl.tv_nsec += cfg.join_ms % 1000 * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	for (i = 0; i < nthreads; i++) {
		struct thread *t = &threads[i];

		if (t->role != role || !t->running)
			continue;
		ret = pthread_timedjoin_np(t->th, NULL, &dl);
		if (ret) {
			ksft_print_msg("hang: %s not finished %d ms after stop, in %s\n",
				       t->name, cfg.join_ms,
				       __atomic_load_n(&t->doing,
						       __ATOMIC_RELAXED));
			hung = true;
			continue;
		}
		t->running = false;
	}
	return !hung;
}

static void alarm_handler(int sig)
{
	ssize_t ret = write(STDOUT_FILENO, alarm_msg, strlen(alarm_msg));

	(void)ret;
	_exit(KSFT_FAIL);
}

/* --- accounting -------------------------------------------------------- */

static uint64_t tokens_written(void)
{
	uint64_t sum = 0;
	int p;

	for (p = 0; p < cfg.producers; p++)
		sum += __atomic_load_n(&written[p], __ATOMIC_RELAXED);
	return sum;
}

static bool all_accounted(void)
{
	return GET(tok_read) + GET(tok_drained) == tokens_written() &&
	       GET(ev_read) + GET(ev_drained) == GET(ev_written);
}

/* Tokens plus eventfd counts written and not (yet) read or drained. */
static uint64_t unaccounted(void)
{
	return tokens_written() + GET(ev_written) - GET(tok_read) -
	       GET(tok_drained) - GET(ev_read) - GET(ev_drained);
}

static void print_balance(const char *when)
{
	ksft_print_msg("%s: tokens written=%llu read=%llu drained=%llu, eventfd written=%llu read=%llu drained=%llu\n",
		       when, (unsigned long long)tokens_written(),
		       (unsigned long long)GET(tok_read),
		       (unsigned long long)GET(tok_drained),
		       (unsigned long long)GET(ev_written),
		       (unsigned long long)GET(ev_read),
		       (unsigned long long)GET(ev_drained));
}

/*
 * Count the bits of producer @p: set below written[p] (else missing), and
 * none at or above it (else a token nobody wrote).  cap is a multiple of
 * the word size, so every producer's range starts on a word.
 */
static void scan_producer(int p, uint64_t *missing, uint64_t *unwritten)
{
	const unsigned long *w = seen + p * (cfg.cap / BITS_PER_WORD);
	uint64_t n = written[p], i, reported = 0;
	unsigned long bit;

	for (i = 0; i < cfg.cap; i++) {
		if (!(i % BITS_PER_WORD) && i + BITS_PER_WORD <= n &&
		    w[i / BITS_PER_WORD] == ~0UL) {
			i += BITS_PER_WORD - 1;
			continue;
		}
		if (!(i % BITS_PER_WORD) && i >= n && !w[i / BITS_PER_WORD]) {
			i += BITS_PER_WORD - 1;
			continue;
		}
		bit = w[i / BITS_PER_WORD] & (1UL << (i % BITS_PER_WORD));
		if (i < n && !bit) {
			(*missing)++;
			if (reported++ < 5)
				ksft_print_msg("token p%d:%llu written, never seen\n",
					       p, (unsigned long long)i);
		} else if (i >= n && bit) {
			(*unwritten)++;
			if (reported++ < 5)
				ksft_print_msg("token p%d:%llu seen, never written\n",
					       p, (unsigned long long)i);
		}
	}
}

/* --- main-thread phases ------------------------------------------------ */

/*
 * Re-arm every channel once: DEL and re-ADD one of its items.  ADD polls
 * the file and queues the item if it is readable, which recovers data
 * whose wakeup went to an item that was deleted before it was harvested.
 */
static void rearm_all(void)
{
	struct chan *ch;
	int c, w;

	for (c = 0; c < cfg.channels; c++) {
		ch = &chans[c];
		pthread_mutex_lock(&ch->topo);
		for (w = 0; w < cfg.waiters && ch->rd >= 0; w++) {
			uint32_t ev = ch->ev[w];

			if (!ev)
				continue;
			item_del(ch, c, w);
			item_add(ch, c, w, ev);
			ADD(rearms, 1);
			break;
		}
		pthread_mutex_unlock(&ch->topo);
	}
}

static bool no_writer(void)
{
	return !__atomic_load_n(&writers, __ATOMIC_SEQ_CST);
}

/*
 * Close the producers' gate and wait until none is inside a burst.  A
 * burst is a few non-blocking write()s: one still running after
 * cfg.join_ms is stuck.
 */
static bool gate_close(void)
{
	__atomic_store_n(&gate_open, 0, __ATOMIC_SEQ_CST);
	if (watch(cfg.join_ms, no_writer))
		return true;
	if (!hung)
		ksft_print_msg("hang: a producer still writing %d ms after the gate closed\n",
			       cfg.join_ms);
	hung = true;
	return false;
}

/* Tokens and eventfd counts written so far. */
static uint64_t units_written(void)
{
	return tokens_written() + GET(ev_written);
}

/*
 * Topology.  Every source sN looks like this at any time; churn redraws
 * its edges all the time (legend at the top of the file):
 *
 *      t0         t1         t2         t3        waiters
 *       | (ew)     | (ew)     | (ew)     | (ew)
 *      e0         e1         e2         e3        one epoll instance each
 *        \         |          |         /
 *      (lt,x,rr) (lt,x)    (et,x,rr)  (lt)        items, random events;
 *           \      |          |      /            any subset but the
 *            `-----+-- sN ----+-----'             empty one
 *                      ^
 *        P0..P3 ======>|  one 8-byte token per write(), eventfd += 1
 *        K0, K1 ------>   DEL/ADD/MOD items in eN, close and reopen sN
 *                         (generation + 1), tN: close and rebuild eN
 *
 * with s0..s5 = (p)ipe, (e)ventfd, (u)nix dgram, (p), (e), (u).
 */
static void setup(void)
{
	pthread_rwlockattr_t attr;
	uint64_t rng = splitmix64(cfg.seed) | 1;
	size_t words;
	int c, w, ret;

	words = cfg.producers * (cfg.cap / BITS_PER_WORD);
	seen = calloc(words, sizeof(*seen));
	if (!seen)
		ksft_exit_fail_msg("bitmap of %zu words: out of memory\n",
				   words);
	for (w = 0; w < cfg.waiters; w++) {
		epfd[w] = epoll_create1(EPOLL_CLOEXEC);
		if (epfd[w] < 0)
			ksft_exit_fail_perror("epoll_create1");
	}
	/* writers first: a close must not starve behind a stream of I/O */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (c = 0; c < cfg.channels; c++) {
		struct chan *ch = &chans[c];

		pthread_rwlock_init(&ch->life, &attr);
		pthread_mutex_init(&ch->topo, NULL);
		ch->kind = c % 3;
		ret = chan_open(ch);
		if (ret)
			ksft_exit_fail_msg("s%d: open: %s\n", c,
					   strerror(-ret));
		chan_add_random(ch, c, &rng);
	}
	pthread_rwlockattr_destroy(&attr);
}

/* The initial draw, as "# initial sN(kind): eN(events) ..." lines. */
static void print_topology(void)
{
	char buf[32];
	int c, w;

	for (c = 0; c < cfg.channels; c++) {
		char line[256];
		size_t len;

		len = snprintf(line, sizeof(line), "s%d(%c):", c,
			       kind_letter[chans[c].kind]);
		for (w = 0; w < cfg.waiters && len < sizeof(line); w++)
			if (chans[c].ev[w])
				len += snprintf(line + len, sizeof(line) - len,
						" e%d(%s)", w,
						events_str(chans[c].ev[w], buf,
							   sizeof(buf)));
		ksft_print_msg("initial %s\n", line);
	}
}

/*
 * EINVAL for an exclusive round-robin ADD: this kernel lacks the series.
 * Bypassed on request, to run the exclusive-only stress anywhere.
 */
static void probe_or_skip(void)
{
	int ep, rd = -1, wr = -1, ret;

	if (getenv(NOPROBE_ENV)) {
		cfg.no_rr = true;
		ksft_print_msg("%s set: probe bypassed, no round-robin item\n",
			       NOPROBE_ENV);
		return;
	}

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || open_pipe(&rd, &wr))
		ksft_exit_fail_msg("probe: %s\n", strerror(errno));
	ret = ctl(ep, EPOLL_CTL_ADD, rd, EPOLLIN | XRR, 0);
	close(ep);
	close(rd);
	close(wr);
	if (ret == -EINVAL)
		ksft_exit_skip("EPOLLEXCLUSIVE|EPOLLROUNDROBIN not supported by this kernel\n");
	if (ret)
		ksft_exit_fail_msg("probe: epoll_ctl: %s\n", strerror(-ret));
}

static void bad_args(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-d secs] [-q no_churn_secs] [-t patience_secs]\n"
		"          [-s seed] [-w waiters] [-p producers] [-c channels]\n"
		"          [-j churners] [-T tokens_per_producer]\n"
		"          [-F drop|dup|hang]\n"
		"  STRESS_SECS in the environment sets the default of -d;\n"
		"  a short run, faults included: -d 2 -t 3\n",
		prog);
	exit(KSFT_FAIL);
}

static int arg_int(const char *s, int min, int max, const char *prog)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*end || v < min || v > max)
		bad_args(prog);
	return v;
}

/*
 * -d is shared by phases 1 and 3, so that a time budget (make stress)
 * stays one; -t caps the watchdog too, so that a short run (-d 2 -t 3)
 * finds a hung thread within seconds.
 */
static void split_time(void)
{
	if (cfg.quiet_secs < 0)
		cfg.quiet_secs = cfg.secs / 4 > 1 ? cfg.secs / 4 : 1;
	cfg.churn_secs = cfg.secs - cfg.quiet_secs;
	if (cfg.churn_secs < 1)
		cfg.churn_secs = 1;
	cfg.hang_ms = cfg.settle_secs * 1000 < HANG_MS ?
		      cfg.settle_secs * 1000 : HANG_MS;
	cfg.join_ms = cfg.settle_secs * 1000 < JOIN_MS ?
		      cfg.settle_secs * 1000 : JOIN_MS;
}

static void parse_args(int argc, char **argv)
{
	const char *env = getenv("STRESS_SECS");
	bool have_seed = false;
	char *end;
	int opt;

	cfg.quiet_secs = -1;

	if (env && *env)
		cfg.secs = arg_int(env, 1, 86400, argv[0]);
	while ((opt = getopt(argc, argv, "d:q:s:w:p:c:j:t:T:F:h")) != -1) {
		switch (opt) {
		case 'd':
			cfg.secs = arg_int(optarg, 1, 86400, argv[0]);
			break;
		case 'q':
			cfg.quiet_secs = arg_int(optarg, 1, 86400, argv[0]);
			break;
		case 's':
			cfg.seed = strtoull(optarg, &end, 0);
			if (*end)
				bad_args(argv[0]);
			have_seed = true;
			break;
		case 'w':
			cfg.waiters = arg_int(optarg, 1, MAX_WAITERS, argv[0]);
			break;
		case 'p':
			cfg.producers = arg_int(optarg, 1, MAX_PRODUCERS,
						argv[0]);
			break;
		case 'c':
			cfg.channels = arg_int(optarg, 1, MAX_CHANNELS,
					       argv[0]);
			break;
		case 'j':
			cfg.churners = arg_int(optarg, 0, MAX_CHURNERS,
					       argv[0]);
			break;
		case 't':
			cfg.settle_secs = arg_int(optarg, 1, 3600, argv[0]);
			break;
		case 'T':
			/* whole bitmap words, and at most 2^28 bits total */
			cfg.cap = arg_int(optarg, 1, 1 << 24, argv[0]);
			cfg.cap = (cfg.cap + BITS_PER_WORD - 1) /
				  BITS_PER_WORD * BITS_PER_WORD;
			break;
		case 'F':
			if (!strcmp(optarg, "drop"))
				cfg.fault = F_DROP;
			else if (!strcmp(optarg, "dup"))
				cfg.fault = F_DUP;
			else if (!strcmp(optarg, "hang"))
				cfg.fault = F_HANG;
			else
				bad_args(argv[0]);
			break;
		default:
			bad_args(argv[0]);
		}
	}
	if (optind != argc)
		bad_args(argv[0]);
	if (!have_seed)
		cfg.seed = splitmix64((uint64_t)time(NULL) << 20 ^ getpid());
	split_time();
}

/* What the phases found, for the summary and the TAP lines. */
struct outcome {
	bool reached_settle, settled, reached_quiet;
	uint64_t unread_after_churn;	/* phase 2, before its re-arm */
	uint64_t quiet_written;		/* phase 3: tokens + eventfd counts */
	uint64_t stranded;		/* of them not read: must be 0 */
	int quiet_rounds;
	uint64_t missing, unwritten;
	long long run_ms, quiet_ms;
};

static void print_summary(const struct outcome *o, long long total_ms)
{
	int i;

	for (i = 0; i < nthreads; i++) {
		struct thread *t = &threads[i];

		if (t->role != R_WAITER)
			continue;
		ksft_print_msg("e%d: wakeups=%llu events=%llu tokens=%llu eventfd=%llu\n",
			       t->idx, (unsigned long long)t->wakeups,
			       (unsigned long long)t->events,
			       (unsigned long long)t->tokens,
			       (unsigned long long)t->evcount);
	}
	ksft_print_msg("stress: seed=%llu secs=%d quiet_secs=%d waiters=%d producers=%d channels=%d churners=%d tokens=%llu eventfd=%llu drained_at_close=%llu full=%llu closes=%llu epoll_closes=%llu adds=%llu (x=%llu rr=%llu) dels=%llu mods=%llu bad_adds=%llu rearms=%llu unread_after_churn=%llu quiet_rounds=%d quiet_written=%llu stranded=%llu wakeups=%llu events=%llu stale=%llu empty=%llu timeouts=%llu run_ms=%lld quiet_ms=%lld total_ms=%lld\n",
		       (unsigned long long)cfg.seed, cfg.secs, cfg.quiet_secs,
		       cfg.waiters, cfg.producers, cfg.channels, cfg.churners,
		       (unsigned long long)tokens_written(),
		       (unsigned long long)GET(ev_written),
		       (unsigned long long)(GET(tok_drained) + GET(ev_drained)),
		       (unsigned long long)GET(full),
		       (unsigned long long)GET(closes),
		       (unsigned long long)GET(ep_closes),
		       (unsigned long long)GET(adds),
		       (unsigned long long)GET(adds_x),
		       (unsigned long long)GET(adds_rr),
		       (unsigned long long)GET(dels),
		       (unsigned long long)GET(mods),
		       (unsigned long long)GET(bad_adds),
		       (unsigned long long)GET(rearms),
		       (unsigned long long)o->unread_after_churn,
		       o->quiet_rounds,
		       (unsigned long long)o->quiet_written,
		       (unsigned long long)o->stranded,
		       (unsigned long long)GET(wakeups),
		       (unsigned long long)GET(events),
		       (unsigned long long)GET(stale),
		       (unsigned long long)GET(empty),
		       (unsigned long long)GET(timeouts),
		       o->run_ms, o->quiet_ms, total_ms);
}

/* Phase 2: stop the writes and churn, re-arm once, wait for all data. */
static void phase_settle(struct outcome *o)
{
	gate_close();
	__atomic_store_n(&stop_churn, 1, __ATOMIC_RELEASE);
	if (!hung)
		join_role(R_CHURN);
	if (hung)
		return;
	o->reached_settle = true;
	/*
	 * Whatever is still unread after a grace period waits for the
	 * re-arm: wakeups consumed by items that were deleted before their
	 * waiter harvested them ("Lost by design").
	 */
	if (!watch(STRANDED_MS, all_accounted) && !hung)
		o->unread_after_churn = unaccounted();
	rearm_all();
	o->settled = watch(cfg.settle_secs * 1000LL, all_accounted);
	if (!o->settled)
		print_balance("settle timed out");
}

/*
 * One round of phase 3: the producers write for 1..128 ms, then the gate
 * closes and the waiters must read all of it within -t seconds, woken
 * only by the writes themselves.  False ends the phase: something was
 * stranded, or a thread hung.
 */
static bool quiet_round(struct outcome *o, uint64_t *rng)
{
	long long ms = 1LL << rnd_below(rng, ROUND_LOG2_MS + 1);

	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	watch(ms, NULL);
	if (!gate_close())
		return false;
	o->quiet_rounds++;
	if (watch(cfg.settle_secs * 1000LL, all_accounted))
		return true;
	if (hung)
		return false;
	o->stranded = unaccounted();
	ksft_print_msg("no-churn round %d: stranded=%llu (tokens and eventfd counts) still unread %d s after the writes stopped, with no churn and no re-arm\n",
		       o->quiet_rounds, (unsigned long long)o->stranded,
		       cfg.settle_secs);
	print_balance("no-churn round timed out");
	return false;
}

/*
 * Phase 3: the topology phase 2 left, tokens flowing in rounds.  After
 * the first stranded round, one re-arm: ADD polls the file, so if that
 * delivers the rest, a wakeup was lost; if not, the data was.
 */
static void phase_quiet(struct outcome *o)
{
	uint64_t rng = splitmix64(cfg.seed ^ 0x9e1e7) | 1, before;
	int diag_ms = cfg.settle_secs * 1000 < DIAG_MS ?
		      cfg.settle_secs * 1000 : DIAG_MS;
	long long t0, end;

	if (hung || !o->settled)
		return;
	o->reached_quiet = true;
	before = units_written();
	__atomic_store_n(&fault_armed, 1, __ATOMIC_RELAXED);
	t0 = now_ms();
	end = t0 + cfg.quiet_secs * 1000LL;
	while (now_ms() < end && quiet_round(o, &rng))
		;
	o->quiet_ms = now_ms() - t0;
	o->quiet_written = units_written() - before;
	if (!o->stranded || hung)
		return;
	rearm_all();
	ksft_print_msg("after a re-arm: %s\n",
		       watch(diag_ms, all_accounted) ?
		       "all delivered: a wakeup was lost" :
		       "still missing: data was lost");
}

/* Phase 4: stop everyone; only then can the bitmap be checked. */
static void phase_finish(struct outcome *o)
{
	int p;

	__atomic_store_n(&stop_producers, 1, __ATOMIC_RELEASE);
	if (!hung)
		join_role(R_PRODUCER);
	__atomic_store_n(&stop_waiters, 1, __ATOMIC_RELEASE);
	if (!hung)
		join_role(R_WAITER);
	check_heartbeats();
	if (hung)
		return;
	for (p = 0; p < cfg.producers; p++)
		scan_producer(p, &o->missing, &o->unwritten);
}

static const char not_checked[] = "not checked, a thread is still running";

/* TAP line 3: in a stable topology nothing may be left unread. */
static void report_quiet(const struct outcome *o)
{
	if (!o->reached_quiet)
		ksft_test_result_skip("no-churn: not reached\n");
	else if (hung)
		ksft_test_result_skip("no-churn: %s\n", not_checked);
	else
		ksft_test_result(!o->stranded && o->quiet_written,
				 "no-churn: stranded=%llu of written=%llu (tokens and eventfd counts) in rounds=%d over %lld ms; each must be read within %d s, with no re-arm\n",
				 (unsigned long long)o->stranded,
				 (unsigned long long)o->quiet_written,
				 o->quiet_rounds, o->quiet_ms,
				 cfg.settle_secs);
}

/* TAP lines 4 and 5: the bitmap and the eventfd balance. */
static void report_counts(const struct outcome *o)
{
	uint64_t wr = tokens_written(), rd = GET(tok_read);
	uint64_t dr = GET(tok_drained), bad = GET(bogus) + o->unwritten;

	if (hung)
		ksft_test_result_skip("tokens exactly once: %s\n", not_checked);
	else
		ksft_test_result(!GET(dups) && !bad && !o->missing && rd + dr == wr,
				 "tokens exactly once: %llu written, %llu read, %llu drained at close, dup=%llu missing=%llu bogus=%llu\n",
				 (unsigned long long)wr, (unsigned long long)rd,
				 (unsigned long long)dr,
				 (unsigned long long)GET(dups),
				 (unsigned long long)o->missing,
				 (unsigned long long)bad);
	if (hung)
		ksft_test_result_skip("eventfd counts balance: %s\n", not_checked);
	else
		ksft_test_result(GET(ev_read) + GET(ev_drained) == GET(ev_written),
				 "eventfd counts balance: %llu written, %llu read, %llu drained at close\n",
				 (unsigned long long)GET(ev_written),
				 (unsigned long long)GET(ev_read),
				 (unsigned long long)GET(ev_drained));
}

static void report_results(const struct outcome *o)
{
	ksft_test_result(!GET(errors), "syscalls: no unexpected result (%llu)\n",
			 (unsigned long long)GET(errors));
	if (o->reached_settle)
		ksft_test_result(o->settled, "settle: all data delivered within %d s after churn stopped\n",
				 cfg.settle_secs);
	else
		ksft_test_result_skip("settle: not reached\n");
	report_quiet(o);
	report_counts(o);
	ksft_test_result(!hung, "watchdog: no thread hung (progress every %d ms, joined within %d ms)\n",
			 cfg.hang_ms, cfg.join_ms);
}

/*
 * Arm an alarm() as the last resort if even the main thread gets stuck:
 * phases 1 and 3, phase 2's grace, and every other wait at its bound.
 */
static void arm_alarm(void)
{
	int budget = cfg.churn_secs + cfg.quiet_secs + STRANDED_MS / 1000 +
		     3 * cfg.settle_secs + 5 * (cfg.join_ms / 1000 + 1) + 60;

	snprintf(alarm_msg, sizeof(alarm_msg),
		 "Bail out! hang: still running after %d s (seed=%llu)\n",
		 budget, (unsigned long long)cfg.seed);
	signal(SIGALRM, alarm_handler);
	alarm(budget);
}

static void cleanup(void)
{
	int i;

	/* a hung thread may still use them: leave everything to exit() */
	if (hung)
		return;
	for (i = 0; i < cfg.channels; i++)
		chan_close(&chans[i]);
	for (i = 0; i < cfg.waiters; i++)
		close(epfd[i]);
	free(seen);
}

int main(int argc, char **argv)
{
	struct outcome o = { 0 };
	long long t0;
	int i;

	parse_args(argc, argv);
	ksft_print_header();
	probe_or_skip();
	ksft_set_plan(6);
	ksft_print_msg("seed=%llu (replay with -s %llu) secs=%d (churn %d, no churn %d) patience=%d waiters=%d producers=%d channels=%d churners=%d%s\n",
		       (unsigned long long)cfg.seed,
		       (unsigned long long)cfg.seed, cfg.secs, cfg.churn_secs,
		       cfg.quiet_secs, cfg.settle_secs, cfg.waiters,
		       cfg.producers, cfg.channels, cfg.churners,
		       fault_name[cfg.fault]);
	arm_alarm();
	setup();
	print_topology();

	/* phase 1: everything runs */
	t0 = now_ms();
	for (i = 0; i < cfg.waiters; i++)
		start_thread(R_WAITER, i, waiter_main);
	for (i = 0; i < cfg.churners; i++)
		start_thread(R_CHURN, i, churn_main);
	for (i = 0; i < cfg.producers; i++)
		start_thread(R_PRODUCER, i, producer_main);
	watch(cfg.churn_secs * 1000LL, NULL);
	o.run_ms = now_ms() - t0;

	phase_settle(&o);
	phase_quiet(&o);
	phase_finish(&o);

	print_balance("final");
	print_summary(&o, now_ms() - t0);
	report_results(&o);
	cleanup();
	alarm(0);
	ksft_finished();
}
