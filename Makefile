# Lode — the commands a user runs. `make test` is the one test command (CI runs it too).

SWIFT ?= swift
# The model macro's plug-in builds against the toolchain's SwiftSyntax libraries here: the machines
# this is developed and tested on cannot fetch the swift-syntax package (Package.swift, README).
LODE_SWIFT_SYNTAX ?= toolchain
export LODE_SWIFT_SYNTAX
SHELL := /bin/bash
# libsodium for encryption at rest (sealed records, Argon2id key derivation).
APT_PACKAGES := liblmdb-dev lmdb-utils libsqlite3-dev libsodium-dev pkg-config
# PostgreSQL for the sync layer's tests: the client library (libpq-dev) and a server the tests start
# in a temporary directory of their own (postgresql; its default cluster is not used); iproute2 for
# the network namespace of the convergence test's cut-off client.
PG_PACKAGES := libpq-dev postgresql iproute2
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)
FORMAT_PATHS := Package.swift Sources Tests $(wildcard Tools) Fuzz

.PHONY: all deps build lint format test test-steps test-tsan studio fuzz-build fuzz-quick fuzz soak bench bench-instructions demo demo-sync docs docs-check clean powercut

# libFuzzer targets (Fuzz/README.md): each harness is compiled with the library sources it exercises.
FUZZ_TARGETS := cbor keys expression loader
# The harnesses compile the sources they exercise into one module (copies without their `import Lode…`
# lines, in .build-fuzz/src): the codec layer, and for the loader a few files of the store and
# inspection layers and of lode-dump.
CODEC_SOURCES := $(wildcard Sources/LodeCodec/CBOR/*.swift) $(wildcard Sources/LodeCodec/Keys/*.swift) \
	$(wildcard Sources/LodeCodec/Record/*.swift)
LOADER_SOURCES := $(addprefix Sources/LodeStore/Records/,UntypedRecord.swift StoredType.swift StoredIndex.swift \
	StoredLink.swift StoredTextIndex.swift FieldHistoryEntry.swift) Sources/LodeStore/Model/DeleteRule.swift \
	Sources/LodeInspection/RawDatabaseKind.swift
FUZZ_SOURCES = $(addprefix .build-fuzz/src/,$(notdir $(CODEC_SOURCES)))
FUZZ_LOADER_SOURCES = $(addprefix .build-fuzz/src/,$(notdir $(LOADER_SOURCES)))
FUZZ_SWIFTC := swiftc -O -sanitize=fuzzer,address -parse-as-library -package-name LodeFuzz
FUZZ_SECONDS ?= 10
FUZZ_LONG_SECONDS ?= 600

# The sync suites start PostgreSQL servers, client processes and network namespaces: `make test` runs
# them on their own after the main suite, whose stress suites have deadlines they would compete with.
SYNC_SUITES := LodeSyncTests

# The suites that exercise locks, queues and delivery across threads: `make test` runs them under
# ThreadSanitizer too (in their own build directory), and any report fails the run.
TSAN_SUITES := LiveObservationTests|EncryptedConcurrencyTests|DecryptedCacheTests|CodecReuseTests|SyncServerVersionTests|SyncVersionsTests|SyncManyClientsTests|SyncUploadCursorTests|TextSearchLiveTests|StudioSearchTests|ObjectObservationTests|HTTPServerTests|StudioServerTests|SyncTests|SyncFaultTests|SyncLifecycleTests|LiveDeliveryTests|LiveLinkTests|LinkedSectionsStorageTests|LiveStressTests|LiveResultsTests|LiveResultsStorageTests|SectionedResultsTests|KeyPathFilterTests|LiveGroupTests|CrossProcessLiveResultsTests|ChangeLogTests|WriteGrowthTests|MemoryStorageTests|TransactionTests|MapGrowthTests|HeldVersionTests|PageCheckTests|FilesFromElsewhereTests|GroupCommitTests|HistoryFollowTests|UndoLiveTests|UndoTimeTravelTests

all: build

# Installs LMDB's headers and library (liblmdb-dev) and its command-line tools (lmdb-utils)
# when they are missing. Needs root or sudo.
deps:
	@if pkg-config --exists lmdb 2>/dev/null && pkg-config --exists sqlite3 2>/dev/null \
		&& pkg-config --exists libsodium 2>/dev/null \
		&& command -v mdb_dump >/dev/null 2>&1 \
		&& command -v mdb_load >/dev/null 2>&1 && command -v mdb_stat >/dev/null 2>&1; then \
		echo "deps: liblmdb-dev, lmdb-utils, libsqlite3-dev and libsodium-dev present"; \
	else \
		echo "deps: installing $(APT_PACKAGES)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(APT_PACKAGES); \
	fi

	@if pkg-config --exists libpq 2>/dev/null && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		&& command -v psql >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then \
		echo "deps: libpq-dev, postgresql and iproute2 present"; \
	else \
		echo "deps: installing $(PG_PACKAGES)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(PG_PACKAGES); \
	fi

	@if pkg-config --exists libmicrohttpd 2>/dev/null; then \
		echo "deps: libmicrohttpd-dev present (Lode Studio's HTTP server)"; \
	else \
		echo "deps: installing libmicrohttpd-dev"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libmicrohttpd-dev; \
	fi

	@if command -v chromium >/dev/null 2>&1; then \
		echo "deps: chromium present (the browser checks of the docs and of Lode Studio)"; \
	else \
		echo "deps: installing chromium"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; \
	fi

	@if command -v cc >/dev/null 2>&1; then \
		echo "deps: a C compiler present (for the power-cut layer)"; \
	else \
		echo "deps: installing gcc"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends gcc libc6-dev; \
	fi

	@if [ -r /usr/share/dict/words ]; then \
		echo "deps: a word list present (the full-text benchmark's corpus)"; \
	else \
		echo "deps: installing wamerican (the full-text benchmark's corpus)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends wamerican; \
	fi

	@if python3 -c 'import cbor2' 2>/dev/null; then \
		echo "deps: python cbor2 present (an independent CBOR decoder for the format tests)"; \
	else \
		echo "deps: installing python cbor2"; \
		python3 -m pip install --quiet --disable-pip-version-check cbor2; \
	fi

# Every target may import only the targets it declares: an upward import between Lode's layers is
# a cycle the compiler refuses, and this check refuses an import of an undeclared one.
BUILD_FLAGS := --explicit-target-dependency-import-check error

build: deps
	$(SWIFT) build $(BUILD_FLAGS)

lint:
	$(SWIFT) format lint --strict --recursive $(FORMAT_PATHS)

format:
	$(SWIFT) format --in-place --recursive $(FORMAT_PATHS)

# The power-cut layer (docs/POWERCUT.md): an LD_PRELOAD library that records what a process writes
# to a store's files, so the tests can build every state a power cut could leave.
powercut: .build/powercut/libpowercut.so

.build/powercut/libpowercut.so: Tools/powercut/powercut.c
	mkdir -p .build/powercut
	cc -O2 -Wall -Wextra -Werror -shared -fPIC -o $@ $< -ldl

# The power-cut tests run their writers and checker from a release build (LODE_POWERCUT_HELPER).
POWERCUT_HELPER := LODE_POWERCUT_HELPER=$(CURDIR)/.build/release/lode-test-helper

# The test build checks the invariants of RankedKeys, EntryTable, the change types and ListMirror
# after every mutation (Package.swift, `internalChecks`); the release and ThreadSanitizer builds
# leave the checks out.
CHECKS := LODE_INTERNAL_CHECKS=1

# Everything runs with a temporary folder of its own, removed at the end even when a step fails
# (scripts/in-private-tmp.sh).
test: deps lint powercut
	scripts/in-private-tmp.sh $(MAKE) --no-print-directory test-steps

test-steps:
	$(CHECKS) $(SWIFT) build --build-tests $(BUILD_FLAGS)
	$(SWIFT) build -c release $(BUILD_FLAGS)
	$(CHECKS) $(POWERCUT_HELPER) $(SWIFT) test --skip-build --skip '$(SYNC_SUITES)'
	$(CHECKS) $(SWIFT) test --skip-build --filter '$(SYNC_SUITES)'
	$(MAKE) docs-check
	$(MAKE) test-tsan
	$(MAKE) fuzz-quick
	$(SWIFT) run -c release lode-bench --quick

# DocC documentation of every public module, as static HTML in .build/docs; any warning fails it. It
# reads the symbol graphs from the debug build's modules, built with `make test`'s settings.
docs:
	$(CHECKS) SWIFT=$(SWIFT) BUILD_FLAGS="$(BUILD_FLAGS)" scripts/build-docs.sh

# The built documentation opened in headless Chromium (installed when missing): each landing page and
# an article must render with its title and known symbols.
docs-check: docs
	scripts/check-docs-in-browser.sh

# Without the internal checks: under ThreadSanitizer their cost per mutation starved the stress
# suite's slowest consumers past its deadlines, and the checks run in `make test`'s main suite.
test-tsan:
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS="halt_on_error=0 exitcode=66" $(SWIFT) test --skip-build --sanitize=thread \
		--scratch-path .build-tsan --filter '$(TSAN_SUITES)'

fuzz-build:
	rm -rf .build-fuzz/src
	mkdir -p .build-fuzz/src
	for file in $(CODEC_SOURCES) $(LOADER_SOURCES) Tools/StoredQuery/Expression.swift \
		$(addprefix Tools/lode-dump/,Input.swift ExportFormat.swift RawFormat.swift); do \
		sed -E '/^import (Lode[A-Za-z]*|LMDB|StoredQuery)$$/d' $$file > .build-fuzz/src/$$(basename $$file); done
	$(FUZZ_SWIFTC) -module-name FuzzCBOR $(FUZZ_SOURCES) Fuzz/cbor.swift Fuzz/generated-record.swift \
		-o .build-fuzz/fuzz-cbor
	$(FUZZ_SWIFTC) -module-name FuzzKeys $(FUZZ_SOURCES) Fuzz/keys.swift -o .build-fuzz/fuzz-keys
	$(FUZZ_SWIFTC) -module-name FuzzExpression $(FUZZ_SOURCES) .build-fuzz/src/Expression.swift \
		Fuzz/expression.swift -o .build-fuzz/fuzz-expression
	$(FUZZ_SWIFTC) -module-name FuzzLoader $(FUZZ_SOURCES) $(FUZZ_LOADER_SOURCES) .build-fuzz/src/Input.swift \
		.build-fuzz/src/ExportFormat.swift .build-fuzz/src/RawFormat.swift Fuzz/loader.swift \
		-o .build-fuzz/fuzz-loader

# Each target for FUZZ_SECONDS on its seed corpus (what make test runs); a crash fails the run.
fuzz-quick: fuzz-build
	for target in $(FUZZ_TARGETS); do \
		mkdir -p .build-fuzz/corpus/$$target && \
		.build-fuzz/fuzz-$$target -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
			-artifact_prefix=.build-fuzz/crash-$$target- .build-fuzz/corpus/$$target Fuzz/corpus/$$target \
			2>&1 | grep -E "^Done|ERROR|SUMMARY" | sed "s/^/fuzz $$target: /"; \
		test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	done

# The long run: FUZZ_LONG_SECONDS per target, keeping the corpus it grows.
fuzz:
	$(MAKE) fuzz-quick FUZZ_SECONDS=$(FUZZ_LONG_SECONDS)

# The long runs: 1,000 kills of the crash-durability writer, 10,000 power cuts per durability mode,
# the corruption sweep over 1,000 copies, the two-versions suite six times per change with random
# timing and longer runs, the concurrency suites under ThreadSanitizer, and every fuzz target for
# FUZZ_LONG_SECONDS.
soak: deps powercut
	$(CHECKS) $(SWIFT) build --build-tests $(BUILD_FLAGS)
	$(CHECKS) LODE_CRASH_KILLS=1000 $(SWIFT) test --skip-build --filter CrashDurabilityTests
	$(SWIFT) build -c release $(BUILD_FLAGS)
	$(CHECKS) LODE_POWERCUT_CUTS=10000 $(POWERCUT_HELPER) $(SWIFT) test --skip-build --filter PowerCutTests
	$(CHECKS) LODE_SWEEP_COPIES=1000 $(SWIFT) test --skip-build --filter CorruptionSweepTests
	$(CHECKS) LODE_VERSIONS_ROUNDS=6 $(SWIFT) test --skip-build --filter TwoVersionsTests
	$(MAKE) test-tsan
	$(MAKE) fuzz

# Two stores of the task list kept in step through a private PostgreSQL (scripts/demo-sync.sh).
demo-sync: deps
	SWIFT=$(SWIFT) scripts/demo-sync.sh

# The live task list, end to end, on lode-demo.store in the working directory.
demo: deps
	$(SWIFT) run lode-demo

# Lode Studio on the demo's store, made first by the demo when missing.
studio: deps
	[ -d lode-demo.store ] || $(SWIFT) run lode-demo
	$(SWIFT) run lode-dump serve lode-demo.store

# The full benchmark suite (minutes); docs/BENCHMARKS.md keeps the latest run.
bench: deps
	$(SWIFT) run -c release lode-bench

# Instructions per object for the read and write workloads, each system counted by callgrind in a
# process of its own (about two minutes): the figure that does not drift between runs.
bench-instructions: deps
	@command -v valgrind >/dev/null 2>&1 || { $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends valgrind; }
	$(SWIFT) build -c release --product lode-bench
	.build/release/lode-bench --instructions

clean:
	rm -rf .build .build-tsan .build-fuzz
