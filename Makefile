# SPDX-License-Identifier: GPL-2.0
#
# make test   build, boot and selftest every base (see README.md)
# make bench  the wake, batching and timeout benchmarks, on a third kernel
#             per base configured like a distribution's (build/<base>-bench)
# make check-patches  the series are postable (also part of make test)
# make stress the fuzzer and the race stress on the debug kernels, 10 min
#             per base (STRESS_SECS=600)
# make test DEBUG=1   make test on the debug kernels
# make coverage  which of the series' added lines the selftests run
# make status    for every result under results/: its job, the commit it
#                ran at, and whether what it measured changed since
#                (STATUS_CHECK=1: exit 1 unless everything is current)
# make help      this text
#
# Variables: BASES="v3.19 6.12", ARCHES="x86_64 arm64" (make test: 6.12 is
# also cross-built and booted on arm64), KSRC=<v3.19 tree or tarball>,
# KSRC_612=<6.12 tree or tarball>, ACCEL=tcg|kvm, JOBS=N.

SHELL := /bin/bash
export BASES ARCHES KSRC KSRC_612 ACCEL JOBS DEBUG STRESS_SECS

.PHONY: test bench stress check-patches postings clean distclean mutants coverage status help

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

# Regenerate posting/<base>/<topic>/ and patches/man-pages/ (check-patches
# fails when they are out of date).
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
