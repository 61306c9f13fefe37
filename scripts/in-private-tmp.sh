#!/usr/bin/env bash
# Runs a command with TMPDIR pointing at a fresh directory of its own, removed when the command ends,
# however it ends: what a failed or killed test leaves there (stores, PostgreSQL clusters, browser
# profiles) and the build tools' own `TemporaryDirectory.*` folders do not pile up in /tmp.
# The directory is world-writable and sticky like /tmp: the test PostgreSQL servers run as `postgres`.
set -uo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/lode-run.XXXXXX")
chmod 1777 "$dir"
trap 'rm -rf "$dir"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
TMPDIR="$dir" "$@"
