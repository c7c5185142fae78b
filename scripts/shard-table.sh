#!/usr/bin/env bash
# What sharding costs (docs/performance.md, docs/scale.md): TPC-H at one scale factor
# anonymized whole and in several shards (`anonymize --shards N`), one run each under
# /usr/bin/time -v. Prints one Markdown row per run: wall time, peak RSS, clustering time,
# LM, LM with suppression, DM, the share of rows suppressed, rows kept per family table
# (released / source) and whether the release verified.
#
# Usage: scripts/shard-table.sh [--sf 1] [--shards "1 4 16"] [--algorithms "miraclex ctoff"]
# Needs: /usr/bin/time (Debian package "time"), jq. Data goes to out/perf/.
# RELANON=path/to/relanon skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."

sf=1
shards="1 4 16"
algorithms="miraclex ctoff"
while [ $# -gt 0 ]; do
    case "$1" in
    --sf) sf="$2"; shift 2 ;;
    --shards) shards="$2"; shift 2 ;;
    --algorithms) algorithms="$2"; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1'; see --help" >&2; exit 2 ;;
    esac
done
. "$(dirname "$0")/bench-setup.sh"
src="$out/tpch-$sf.sqlite"
[ -e "$src" ] || "$RELANON" generate tpch --sf "$sf" --out "$src" --quiet

seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.1f", s }'; }

options() {
    case "$1" in
    miraclex) echo "model = 'k-anonymity', k = 10, algorithm = 'miraclex', seed = 1" ;;
    ctoff) echo "model = 'l-diversity', l = 3, mapping = 'lsap', candidates = 50, algorithm = 'ctoff', seed = 1" ;;
    *) echo "model = 'k-anonymity', k = 10, algorithm = '$1', seed = 1" ;;
    esac
}

echo "| algorithm | shards | wall | peak RSS | cluster | LM | LM with suppression | DM | rows suppressed | rows kept (customer, orders, lineitem) | verified |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for a in $algorithms; do
    for n in $shards; do
        target="$out/shards.sqlite" log="$out/time.txt"
        if ! /usr/bin/time -v -o "$log" "$RELANON" anonymize sql/tpch.sql --source "$src" \
            --target "$target" --with "$(options "$a")" --shards "$n" --overwrite --quiet; then
            echo "| $a | $n | failed: see the error above | | | | | | | | |"
            continue
        fi
        wall=$(grep 'Elapsed (wall clock)' "$log" | sed 's/.*): //' | seconds)
        rss=$(grep 'Maximum resident set size' "$log" | awk '{ print $NF }')
        jq -r --arg a "$a" --arg n "$n" --arg wall "$wall" --arg rss "$rss" '
            "| \($a) | \($n) | \($wall) s | \(($rss | tonumber) / 1048576 * 100 | round / 100) GiB"
            + " | \(.timings_ms.cluster / 1000 | round) s | \(.lm * 10000 | round / 10000)"
            + " | \(.lm_with_suppression * 10000 | round / 10000) | \(.dm)"
            + " | \(.rows_suppressed_share * 1000 | round / 10)%"
            + " | \(.tables | map("\(.released * 1000 / .rows_in | round / 10)%") | join(", "))"
            + " | \(.verified) |"' "${target%.*}.report.json"
    done
done
