# Lode — the commands a user runs. `make test` is the one test command (CI runs it too).

SWIFT ?= swift
APT_PACKAGES := liblmdb-dev lmdb-utils libsqlite3-dev pkg-config
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)
FORMAT_PATHS := Package.swift Sources Tests $(wildcard Tools)

.PHONY: all deps build lint format test bench demo clean

all: build

# Installs LMDB's headers and library (liblmdb-dev) and its command-line tools (lmdb-utils)
# when they are missing. Needs root or sudo.
deps:
	@if pkg-config --exists lmdb 2>/dev/null && pkg-config --exists sqlite3 2>/dev/null \
		&& command -v mdb_dump >/dev/null 2>&1 \
		&& command -v mdb_load >/dev/null 2>&1 && command -v mdb_stat >/dev/null 2>&1; then \
		echo "deps: liblmdb-dev and lmdb-utils present"; \
	else \
		echo "deps: installing $(APT_PACKAGES)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(APT_PACKAGES); \
	fi

	@if python3 -c 'import cbor2' 2>/dev/null; then \
		echo "deps: python cbor2 present (an independent CBOR decoder for the format tests)"; \
	else \
		echo "deps: installing python cbor2"; \
		python3 -m pip install --quiet --disable-pip-version-check cbor2; \
	fi

build: deps
	$(SWIFT) build

lint:
	$(SWIFT) format lint --strict --recursive $(FORMAT_PATHS)

format:
	$(SWIFT) format --in-place --recursive $(FORMAT_PATHS)

test: deps lint
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	$(SWIFT) run -c release lode-bench --quick

# The live task list, end to end, on lode-demo.store in the working directory.
demo: deps
	$(SWIFT) run lode-demo

# The full benchmark suite (minutes); docs/BENCHMARKS.md keeps the latest run.
bench: deps
	$(SWIFT) run -c release lode-bench

clean:
	rm -rf .build
