#!/usr/bin/env bash
# The second demo: two stores of the demo's task list kept in step by two lode-sync processes through a
# private PostgreSQL cluster in .build/demo-sync (started here, stopped at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
"$SWIFT" build --product lode-sync --product lode-demo >/dev/null
BIN=$("$SWIFT" build --show-bin-path)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
WORK=$PWD/.build/demo-sync
rm -rf "$WORK"
mkdir -p "$WORK"
# PostgreSQL refuses to run as root: as root, the server runs as the postgres user.
as_server() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$WORK"
as_server "$PGBIN/initdb" -D "$WORK/data" -U lode -A trust --no-sync -E UTF8 --locale=C >/dev/null
PORT=$((20000 + RANDOM % 20000))
as_server "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w \
    -o "-k $WORK -p $PORT -c listen_addresses=''" start >/dev/null
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    as_server "$PGBIN/pg_ctl" -D "$WORK/data" -m fast stop >/dev/null || true
}
trap cleanup EXIT
export LODE_SYNC_SERVER="host=$WORK port=$PORT dbname=postgres user=lode"

echo "▸ a private PostgreSQL on $WORK (port $PORT); lode-sync setup"
"$BIN/lode-sync" setup
for store in laptop phone; do
    "$BIN/lode-sync" run "$WORK/$store.store" >"$WORK/$store.sync.log" 2>&1 &
    PIDS+=($!)
done
echo "▸ the phone's list, live, while the laptop adds and completes tasks:"
"$BIN/lode-demo" watch --path "$WORK/phone.store" --for 8 &
PIDS+=($!)
sleep 2
"$BIN/lode-demo" write --path "$WORK/laptop.store" add "Water the plants"
sleep 1
"$BIN/lode-demo" write --path "$WORK/laptop.store" add "Call the plumber" --status doing
sleep 1
"$BIN/lode-demo" write --path "$WORK/laptop.store" complete 1
sleep 4
echo "▸ the server's table, as any SQL client sees it:"
"$PGBIN/psql" -X -q -h "$WORK" -p "$PORT" -U lode -d postgres \
    -c 'SELECT key, data->>'"'"'title'"'"' AS title, data->>'"'"'status'"'"' AS status, version FROM lode."DemoTask" ORDER BY key'
echo "▸ lode-sync's status lines (laptop):"
cat "$WORK/laptop.sync.log"
