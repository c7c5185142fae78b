#!/usr/bin/env bash
# What relocation instead of suppression keeps (docs/experiments.md): the university demo,
# TPC-H at one scale factor and UCI Adult (where ../shared/data/adult holds it), each
# anonymized at k = 10 by the clustering algorithms with `relocate = 0` and `relocate = 1`,
# three runs each under /usr/bin/time -v. Prints one Markdown row per setting: entities
# suppressed, entities kept by relocation, untruthful QI cells against the budget, LM with
# suppression, rows suppressed, the median wall time and peak RSS, and whether it verified.
#
# Usage: scripts/relocate-table.sh [--sf 0.01] [--runs 3]
# Needs: /usr/bin/time (Debian package "time"), jq. Data goes to out/perf/.
# RELANON=path/to/relanon skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."

sf=0.01
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
    --sf) sf="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1'; see --help" >&2; exit 2 ;;
    esac
done
. "$(dirname "$0")/bench-setup.sh"
university="$out/university.sqlite"
[ -e "$university" ] || "$RELANON" generate university --out "$university" --quiet
tpch="$out/tpch-$sf.sqlite"
[ -e "$tpch" ] || "$RELANON" generate tpch --sf "$sf" --out "$tpch" --quiet

# The university's declarations without MiRaCleX's own options (ClusTree refuses them),
# their hierarchy files named from here.
uni_decl="$out/university.sql"
sed -e "s#'../fixtures/#'$PWD/fixtures/#g" \
    -e "s/^ANONYMIZE student WITH (.*/ANONYMIZE student WITH (k = 10);/" sql/university.sql >"$uni_decl"

seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One setting: data name, declarations, source, algorithm, relocate.
row() {
    local name="$1" decl="$2" source="$3" a="$4" r="$5"
    local target="$out/relocate.sqlite" log="$out/time.txt" walls="" rss=0
    for _ in $(seq "$runs"); do
        if ! /usr/bin/time -v -o "$log" "$RELANON" anonymize "$decl" --source "$source" \
            --target "$target" --with "k = 10, algorithm = '$a', relocate = $r, seed = 1" \
            --overwrite --quiet; then
            echo "| $name | $a | $r | failed: see the error above | | | | | | |"
            return
        fi
        walls="$walls $(grep 'Elapsed (wall clock)' "$log" | sed 's/.*): //' | seconds)"
        rss=$(grep 'Maximum resident set size' "$log" | awk '{ print $NF }')
    done
    local wall
    wall=$(echo "$walls" | tr ' ' '\n' | grep . | median)
    jq -r --arg n "$name" --arg a "$a" --arg r "$r" --arg wall "$wall" --arg rss "$rss" '
        "| \($n) | \($a) | \($r)% | \(.suppressed_entities) of \(.entities)"
        + " | \(.relocation.relocated_entities // 0)"
        + " | \(if .relocation then "\(.relocation.relocated_cells) of \(.relocation.budget_cells)" else "-" end)"
        + " | \(.lm_with_suppression * 10000 | round / 10000)"
        + " | \(.rows_suppressed_share * 1000 | round / 10)%"
        + " | \($wall) s | \(($rss | tonumber) / 1024 | round) MiB | \(.verified) |"' \
        "${target%.*}.report.json"
}

echo "| data | algorithm | relocate | entities suppressed | kept by relocation | untruthful cells of budget | LM with suppression | rows suppressed | wall (median) | peak RSS | verified |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for a in miracle miraclex clustree; do
    for r in 0 1; do row university "$uni_decl" "$university" "$a" "$r"; done
done
for a in miracle miraclex; do
    for r in 0 1; do row "TPC-H SF $sf" sql/tpch.sql "$tpch" "$a" "$r"; done
done
adult=../shared/data/adult/adult.csv
if [ -e "$adult" ]; then
    for a in topdown miraclex; do
        for r in 0 1; do row Adult sql/adult.sql "$adult" "$a" "$r"; done
    done
fi
