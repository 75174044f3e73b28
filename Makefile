# SPDX-License-Identifier: GPL-2.0
#
# make test           build, boot and selftest every base on every arch it
#                     supports, and check the series (README.md)
# make bench          the wake, batching, timeout and nginx benchmarks on a
#                     bench kernel per base (build/<base>-bench; results/)
# make test DEBUG=1   make test on the debug kernels (kmemleak, lockdep, ...)
# make stress         the fuzzer and the race stress on the debug kernels
# make coverage       which of the series' added lines the selftests run
# make mutants        planted bugs the selftests must catch; reruns the
#                     mutants without a current row (results/mutants/)
# make check-patches  the series are postable (also part of make test)
# make check-bases    the bases are data: no code names one, and a copied
#                     base .conf is picked up by make test's job loop
# make postings       generate posting/<base>/<topic>/*.patch (not tracked)
# make status         every result under results/: its job, the commit it
#                     ran at, and whether what it measured changed since
# make clean          drop build/ (keeps the download cache and ccache)
# make distclean      also drop the download cache and ccache
# make help           this text
#
# Variables:
#   BASES="..."       bases to run (default: every scripts/bases/*.conf)
#   ARCHES="..."      guest arches (default x86_64 arm64; each base runs
#                     those its .conf lists)
#   KSRC=...          v3.19 tree or tarball; KSRC_612=... the 6.12 one
#   ACCEL=tcg|kvm     QEMU accelerator (default: kvm if a probe boot works)
#   JOBS=N            parallel make jobs (default: nproc)
#   DEBUG=1           make test on the debug kernels
#   STRESS_SECS=N     make stress's length per base (default 600)
#   MUTANTS="glob"    make mutants: these mutants only ('*': all)
#   STATUS_CHECK=1    make status exits 1 unless every result is current
# Every script under scripts/ also answers --help.

SHELL := /bin/bash
export BASES ARCHES KSRC KSRC_612 ACCEL JOBS DEBUG STRESS_SECS

.PHONY: test bench stress check-patches check-bases postings clean distclean mutants coverage status help

# BASES_ORIGIN tells test.sh whether BASES was narrowed on purpose (on
# this command line) or inherited from the environment.
test:
	@BASES_ORIGIN="$(origin BASES)" scripts/test.sh

bench:
	@scripts/bench.sh

stress:
	@scripts/stress.sh

# Headers, checkpatch and "git am == quilt push" for every base; also run by
# make test.  CHECK_BISECT=1 also builds every prefix of each series (slow).
check-patches:
	@scripts/check-patches.sh $(BASES)

# Generate posting/<base>/<topic>/*.patch (build output, not tracked) from
# the series and covers/<base>/cover-*.txt, and patches/man-pages/
# (check-patches fails when the postings do not generate or the man-pages
# patches are out of date).
postings:
	@scripts/posting.sh $(BASES) && scripts/man-pages-patches.sh

# Mutation testing of the selftests: selftests/mutants/<base>/*.patch, each
# applied, built, booted and reversed in turn (build/mutants); writes
# results/mutants.md.  MUTANTS="glob ..." selects mutants (e.g. "05-*").
mutants:
	@MUTANTS="$(MUTANTS)" scripts/mutants.sh

# Coverage of the lines the series adds: one gcov kernel per base
# (build/<base>-coverage), the selftests, results/coverage.md.
coverage:
	@scripts/coverage.sh

check-bases:
	@scripts/check-bases.sh

status:
	@scripts/status.py $(if $(filter 1,$(STATUS_CHECK)),--check)

help:
	@sed -n '3,/^$$/s/^# \{0,1\}//p' Makefile

# Drops build trees; keeps the download cache and ccache.
clean:
	rm -rf build

# Also drops the download cache and ccache; never results/ (tracked).
distclean: clean
	rm -rf "$${EPOLL_SERIES_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/epoll-series}"
