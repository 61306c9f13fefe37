#!/usr/bin/env bash
# Builds the DocC documentation of every public module as static HTML into .build/docs, from symbol
# graphs the compiler emits (no plugin). Any DocC warning — an unresolved link included — fails it.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
DOCC=${DOCC:-$(dirname "$(readlink -f "$(command -v "$SWIFT")")")/docc}
MODULES=(Lode LodeInspection LodeSync ModelStorage LMDB LodeTesting LodeMacros)
WORK=.build-docs
GRAPHS=$WORK/symbol-graphs
OUT=.build/docs

rm -rf "$WORK/graphs" "$WORK/catalogs" "$OUT"
mkdir -p "$GRAPHS" "$OUT"

# LodeTesting depends on every other documented module but LodeInspection, LodeSync and LodeMacros,
# so building the four emits all their graphs. A module is compiled (and its graph written) only when it changed: the graphs of
# the last build stay.
emit_graphs() {
    for target in LodeTesting LodeInspection LodeSync LodeMacros; do
        "$SWIFT" build --scratch-path "$WORK" --target "$target" \
            -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$GRAPHS" \
            -Xswiftc -emit-extension-block-symbols
    done
}
emit_graphs
for module in "${MODULES[@]}"; do
    if [ ! -f "$GRAPHS/$module.symbols.json" ]; then
        echo "docs: no symbol graph for $module; building again from scratch"
        rm -rf "$WORK"
        mkdir -p "$GRAPHS"
        emit_graphs
        break
    fi
done

for module in "${MODULES[@]}"; do
    mkdir -p "$WORK/graphs/$module" "$WORK/catalogs"
    cp "$GRAPHS/$module.symbols.json" "$WORK/graphs/$module/"
    cp "$GRAPHS/$module"@*.symbols.json "$WORK/graphs/$module/" 2>/dev/null || true
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
