#!/usr/bin/env bash
# Hybrid on entity trees against the lattice (docs/experiments.md): the university demo and
# TPC-H at one scale factor (its lineitem columns declared INSENSITIVE, so that the lattice
# of the customer's and the order's QI columns can be searched), at each k, released by the
# lattice, by hybrid with the leftovers suppressed and by hybrid with them embedded, all at
# the same max_suppression; then hybrid (embedding) at a lower max_suppression the lattice
# cannot meet. Each setting runs --runs times under /usr/bin/time -v. Prints one Markdown row
# per setting: entities suppressed, entities embedded, untruthful cells against the budget,
# LM with suppression, rows suppressed, the median wall time and peak RSS, and whether the
# release verified.
#
# Usage: scripts/hybrid-trees.sh [--sf 0.01] [--ks 2,5,10] [--p 1] [--runs 3]
# Needs: /usr/bin/time (Debian package "time"), jq. Data goes to out/perf/.
# RELANON=path/to/relanon skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."

sf=0.01
ks=2,5,10
p=1
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
    --sf) sf="$2"; shift 2 ;;
    --ks) ks="$2"; shift 2 ;;
    --p) p="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1'; see --help" >&2; exit 2 ;;
    esac
done
. "$(dirname "$0")/bench-setup.sh"
university="$out/university.sqlite"
[ -e "$university" ] || "$RELANON" generate university --out "$university" --quiet
tpch="$out/tpch-$sf.sqlite"
[ -e "$tpch" ] || "$RELANON" generate tpch --sf "$sf" --out "$tpch" --quiet

# The university's declarations without MiRaCleX's own options, their hierarchy files named
# from here; TPC-H's with the line items' QI columns insensitive (the whole lattice of nine
# columns is too large to search: 162,000 nodes).
uni_decl="$out/university-trees.sql"
sed -e "s#'../fixtures/#'$PWD/fixtures/#g" \
    -e "s/^ANONYMIZE student WITH (.*/ANONYMIZE student WITH (k = 10);/" sql/university.sql >"$uni_decl"
tpch_decl="$out/tpch-trees.sql"
sed -E 's/^LABEL COLUMN (lineitem\.l_(partkey|suppkey|shipmode|shipdate)) +AS QUASI IDENTIFIER USING [a-z_]+;/LABEL COLUMN \1 AS INSENSITIVE;/' \
    sql/tpch.sql >"$tpch_decl"

seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One setting: data name, declarations, source, k, the label of the row, the options.
row() {
    local name="$1" decl="$2" source="$3" k="$4" label="$5" options="$6"
    local target="$out/hybrid-trees.sqlite" log="$out/time.txt" walls="" rss=0
    for _ in $(seq "$runs"); do
        if ! /usr/bin/time -v -o "$log" "$RELANON" anonymize "$decl" --source "$source" \
            --target "$target" --with "k = $k, $options, seed = 1" --overwrite --quiet 2>/dev/null; then
            echo "| $name | $k | $label | refused: no node within the budgets | | | | | | | |"
            return
        fi
        walls="$walls $(grep 'Elapsed (wall clock)' "$log" | sed 's/.*): //' | seconds)"
        rss=$(grep 'Maximum resident set size' "$log" | awk '{ print $NF }')
    done
    local wall
    wall=$(echo "$walls" | tr ' ' '\n' | grep . | median)
    jq -r --arg n "$name" --arg k "$k" --arg l "$label" --arg wall "$wall" --arg rss "$rss" '
        "| \($n) | \($k) | \($l) | \(.suppressed_entities) of \(.entities)"
        + " | \(.relocation.relocated_entities // "-")"
        + " | \(if .relocation then "\(.relocation.relocated_cells) of \(.relocation.budget_cells)" else "-" end)"
        + " | \(.lm_with_suppression * 10000 | round / 10000)"
        + " | \(.rows_suppressed_share * 1000 | round / 10)%"
        + " | \($wall) s | \(($rss | tonumber) / 1024 | round) MiB | \(.verified) |"' \
        "${target%.*}.report.json"
}

# The settings of one data set at one k: max_suppression for the comparison, and the lower
# one hybrid is tried at alone.
settings() {
    local name="$1" decl="$2" source="$3" k="$4" share="$5" low="$6"
    row "$name" "$decl" "$source" "$k" "lattice, max_suppression = $share" \
        "algorithm = 'lattice', max_suppression = $share"
    row "$name" "$decl" "$source" "$k" "hybrid p = $p, leftovers suppressed, max_suppression = $share" \
        "algorithm = 'hybrid', p = $p, leftovers = 'suppress', max_suppression = $share"
    row "$name" "$decl" "$source" "$k" "hybrid p = $p, leftovers embedded, max_suppression = $share" \
        "algorithm = 'hybrid', p = $p, max_suppression = $share"
    row "$name" "$decl" "$source" "$k" "hybrid p = $p, leftovers embedded, max_suppression = $low" \
        "algorithm = 'hybrid', p = $p, max_suppression = $low"
}

echo "| data | k | release | entities suppressed | embedded | untruthful cells of budget | LM with suppression | rows suppressed | wall (median) | peak RSS | verified |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for k in ${ks//,/ }; do
    settings university "$uni_decl" "$university" "$k" 0.5 0.1
done
for k in ${ks//,/ }; do
    settings "TPC-H SF $sf" "$tpch_decl" "$tpch" "$k" 0.8 0.1
done
