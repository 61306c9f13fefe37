#!/usr/bin/env bash
# Serves .build/docs on the loopback address and opens pages in headless Chromium: DocC pages render
# with JavaScript, so the check reads the DOM Chromium built (--dump-dom), not the HTML files. Each
# module's landing page must show its title and a known symbol, and an article its title and text.
# Screenshots of the landing pages go to .build/docs-screenshots.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    echo "docs-check: installing chromium"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
    CHROMIUM=$(command -v chromium)
fi
[ -f .build/docs/index.html ] || { echo "docs-check: run make docs first" >&2; exit 1; }

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory .build/docs "$PORT" >/dev/null 2>&1 &
SERVER=$!
PROFILE=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null; rm -rf "$PROFILE"' EXIT
for _ in $(seq 50); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/index.html')" \
        2>/dev/null && break
    sleep 0.1
done

browse() {
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$PROFILE" --virtual-time-budget=15000 "$@" 2>/dev/null
}

failures=0
check() {
    local path=$1
    shift
    local dom text
    dom=$(browse --dump-dom "http://127.0.0.1:$PORT/$path") || true
    # The page's text without markup (DocC breaks long symbol names with <wbr> tags).
    text=$(sed -e 's/<[^>]*>//g' <<<"$dom")
    for needle in "$@"; do
        if ! grep -qF -- "$needle" <<<"$dom" && ! grep -qF -- "$needle" <<<"$text"; then
            echo "docs-check: $path does not show \"$needle\"" >&2
            failures=$((failures + 1))
        fi
    done
    echo "docs-check: $path rendered ($(wc -c <<<"$dom") bytes of DOM)"
}

check Lode/documentation/lode/ "<h1" ">Lode<" "Store" "Persistable" "Getting started"
check Lode/documentation/lode/gettingstarted "Getting started" "store.write" "The object store"
check Lode/documentation/lode/store "Store" "write(_:)"
check Lode/documentation/lode/linksbetweenobjects "Relationships" "Live across links" "DeleteRule"
check LodeInspection/documentation/lodeinspection/ ">LodeInspection<" "RawDumpLoader" "CBOREncoder"
check LodeSync/documentation/lodesync/ ">LodeSync<" "SyncClient" "SyncFilter"
check LodeSync/documentation/lodesync/beyondonemachine "Beyond one machine" "decides, per object" "SyncClient"
check LodeMacros/documentation/lodemacros/ ">LodeMacros<" "PrimaryKey()" "Depending on the macro"
check ModelStorage/documentation/modelstorage/ ">ModelStorage<" "MemoryStorage" "ListMirror"
check ModelStorage/documentation/modelstorage/comingfromdtmodelstorage "DTTableViewManager" "moveItemWithoutAnimation"
check LMDB/documentation/lmdb/ ">LMDB<" "Environment" "A tour of the LMDB layer"
check LodeTesting/documentation/lodetesting/ ">LodeTesting<" "LodeTestingError" "Testing with Lode"
check LodeTesting/documentation/lodetesting/testingwithlode "Testing with Lode" "Store.temporary"

mkdir -p .build/docs-screenshots
for page in Lode/documentation/lode ModelStorage/documentation/modelstorage LMDB/documentation/lmdb \
    LodeTesting/documentation/lodetesting Lode/documentation/lode/gettingstarted; do
    name=$(echo "$page" | tr '/' '-')
    browse --window-size=1280,1000 --screenshot="$PWD/.build/docs-screenshots/$name.png" \
        "http://127.0.0.1:$PORT/$page/" >/dev/null || true
done
echo "docs-check: screenshots in .build/docs-screenshots"

if [ "$failures" -gt 0 ]; then
    echo "docs-check: $failures failed" >&2
    exit 1
fi
echo "docs-check: every page rendered with its title and symbols"
