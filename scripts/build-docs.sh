#!/usr/bin/env bash
# Builds the DocC documentation of every public module as static HTML into .build/docs, from the
# symbol graphs of the debug build's modules (no plugin). Any DocC warning — an unresolved link
# included — fails it.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
DOCC=${DOCC:-$(dirname "$(readlink -f "$(command -v "$SWIFT")")")/docc}
MODULES=(Lode LodeInspection LodeSync ModelStorage LMDB LodeTesting LodeMacros)
BUILD_FLAGS=${BUILD_FLAGS:-}
WORK=.build/docs-work
OUT=.build/docs

rm -rf "$WORK" "$OUT"
mkdir -p "$WORK/catalogs" "$OUT"

# The symbol graphs are read from the modules of the package's debug build (`make test` has just
# built them; `swift build` here is then a no-op, so run this with the environment the build had,
# `LODE_INTERNAL_CHECKS` included): no second compilation of the package. A module's graph includes
# what it re-exports (`@_exported import`), as the compiler's own graphs do.
"$SWIFT" build $BUILD_FLAGS
BIN=$("$SWIFT" build --show-bin-path)
TRIPLE=$(basename "$(dirname "$(readlink -f "$BIN")")")
EXTRACT=$(dirname "$(readlink -f "$(command -v "$SWIFT")")")/swift-symbolgraph-extract
C_MODULES=()
for folder in Sources/C*; do C_MODULES+=(-I "$folder"); done
# The system libraries' header folders, from the pkg-config names Package.swift gives them.
for name in $(sed -nE 's/.*pkgConfig: "([^"]+)".*/\1/p' Package.swift); do
    for flag in $(pkg-config --cflags-only-I "$name"); do C_MODULES+=(-Xcc "$flag"); done
done
for module in "${MODULES[@]}"; do
    reexported=$( (grep -rhE --include='*.swift' '^@_exported import' "Sources/$module" || true) \
        | sed -E 's/^@_exported import ([a-z]+ )?([A-Za-z]+).*/\2/' | sort -u | paste -sd, -)
    mkdir -p "$WORK/graphs/$module"
    "$EXTRACT" -module-name "$module" -target "$TRIPLE" -I "$BIN/Modules" "${C_MODULES[@]}" \
        -minimum-access-level public -emit-extension-block-symbols -skip-inherited-docs \
        ${reexported:+-experimental-allowed-reexported-modules="$reexported"} \
        -output-dir "$WORK/graphs/$module"
done

for module in "${MODULES[@]}"; do
    catalog="$WORK/catalogs/$module.docc"
    cp -r "Sources/$module/$module.docc" "$catalog"
    if [ "$module" = Lode ]; then
        # One source for each: the format and the benchmark figures stay in docs/.
        cp docs/FORMAT.md "$catalog/TheFileFormat.md"
        cp docs/BENCHMARKS.md "$catalog/Performance.md"
    fi
    lower=$(echo "$module" | tr '[:upper:]' '[:lower:]')
    "$DOCC" convert "$catalog" \
        --additional-symbol-graph-dir "$WORK/graphs/$module" \
        --output-dir "$OUT/$module" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.lode.$lower" \
        --transform-for-static-hosting --hosting-base-path "$module" \
        --warnings-as-errors 2>&1 | tee "$WORK/$module.log"
    if grep -qE "^(warning|error):" "$WORK/$module.log"; then
        echo "docs: $module has DocC warnings (above)" >&2
        exit 1
    fi
    echo "docs: $module → $OUT/$module/documentation/$lower"
done

{
    echo '<!doctype html><meta charset="utf-8"><title>Lode documentation</title>'
    echo '<h1>Lode documentation</h1><ul>'
    for module in "${MODULES[@]}"; do
        lower=$(echo "$module" | tr '[:upper:]' '[:lower:]')
        echo "<li><a href=\"$module/documentation/$lower/\">$module</a></li>"
    done
    echo '</ul>'
} > "$OUT/index.html"
echo "docs: $OUT/index.html"
