#!/usr/bin/env bash
# The performance table of the README (relanon issue 5): whole-process runs of the release
# binary under /usr/bin/time -v on
#   W1  syntheticS (000 Sec. 2.4, 1000 students): CToff-LSAP and ClusTree-LSAP at l = 3,
#       MiRaCle and MiRaCleX at k = 10;
#   W2  TPC-H (sql/tpch.sql) at the scale factors given: MiRaCleX k = 10 and CToff-LSAP l = 3
#       with candidate blocking (candidates = 50; the exact search is quadratic), with
#       --w2-clustree also ClusTree-LSAP l = 3 with the same blocking;
#   W3  UCI Adult (sql/adult.sql) at k = 2, 5, 10, 50;
#   A   anatomy (000 Ch. 3) at l = 3: t-t and v-v on W1, t-t on W2 at the scale factors given
#       (not in the default workloads: --workloads anatomy);
#   S   TPC-H SF 10 (1.5 M customers, 60 M line items) as Parquet, MiRaCleX k = 10 within
#       --memory-budget 7GiB (the shards the budget picks) into a Parquet release, one run (not
#       in the default workloads: --workloads sf10; under an hour and 8 GiB, and 3 GiB of
#       disk for the source);
# and, with --threads, W1 again with RAYON_NUM_THREADS=1.
# Prints one Markdown row per run: median wall time, largest peak RSS, LM with suppression,
# equivalence classes, suppressed entities, whether the release passed verify, load + write
# time (report.json timings) and total / (load + write).
#
# Usage: scripts/perf-table.sh [--runs N] [--workloads w1,w2,w3,anatomy,sf10] [--sf "0.01 0.1 1"]
#                              [--threads] [--w2-clustree] [--w2-options "..."]
# Needs: /usr/bin/time (Debian package "time"), jq. Data goes to out/perf/.
# RELANON=path/to/relanon skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
workloads="w1,w2,w3"
# Arguments of `anonymize` beyond the run's own (the SF 10 row's --memory-budget).
extra_args=()
sfs="0.01 0.1"
threads=0
w2_options=""
w2_clustree=0
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --sf) sfs="$2"; shift 2 ;;
    --threads) threads=1; shift ;;
    --w2-clustree) w2_clustree=1; shift ;;
    --w2-options) w2_options="$2"; shift 2 ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1'; see --help" >&2; exit 2 ;;
    esac
done
. "$(dirname "$0")/bench-setup.sh"
has() { case ",$workloads," in *",$1,"*) return 0 ;; esac; return 1; }

# Seconds from /usr/bin/time's "h:mm:ss" or "m:ss.ss".
seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }'; }

# run LABEL PARAM DECL SOURCE TARGET OPTIONS [ENV...]: one table row.
run() {
    local label="$1" param="$2" decl="$3" source="$4" target="$5" options="$6"
    shift 6
    local walls=() rss=0 log="$out/time.txt"
    for _ in $(seq "$runs"); do
        if ! /usr/bin/time -v -o "$log" env "$@" "$RELANON" anonymize "$decl" --source "$source" \
            --target "$target" --with "$options" --overwrite --quiet "${extra_args[@]}"; then
            echo "| $label | $param | failed: see the error above | | | | | | | |"
            return
        fi
        walls+=("$(grep 'Elapsed (wall clock)' "$log" | sed 's/.*): //' | seconds)")
        local r
        r=$(grep 'Maximum resident set size' "$log" | awk '{ print $NF }')
        [ "$r" -gt "$rss" ] && rss="$r"
    done
    local median report
    median=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    if [ -d "$target" ]; then report="$target/report.json"; else report="${target%.*}.report.json"; fi
    jq -r --arg name "$label" --arg param "$param" --arg wall "$median" --arg rss "$rss" '
        (.timings_ms.load + .timings_ms.write) as $lw
        | "| \($name) | \($param) | \($wall) s | \(($rss | tonumber) / 1024 | floor) MB"
          + " | \(.lm_with_suppression * 10000 | round / 10000) | \(.equivalence_classes)"
          + " | \(.suppressed_entities) | \(.verified) | \($lw / 1000 * 100 | round / 100) s"
          + " | \(.timings_ms.total / $lw * 10 | round / 10) |"' "$report"
}

echo "| workload | algorithm, parameter | wall (median of $runs) | peak RSS | LM with suppression | ECs | suppressed entities | verified | load + write | total / (load + write) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"

w1() {
    local envs=("$@") tag=""
    [ $# -gt 0 ] && tag=" (${envs[*]})"
    local src="$out/synthetic_s.sqlite"
    [ -e "$src" ] || "$RELANON" generate synthetic-s --out "$src" --quiet
    local l3="model = 'l-diversity', l = 3, mapping = 'lsap'"
    run "W1 syntheticS$tag" "CToff-LSAP l = 3" sql/synthetic_s.sql "$src" "$out/w1.sqlite" \
        "$l3, algorithm = 'ctoff'" "${envs[@]}"
    run "W1 syntheticS$tag" "ClusTree-LSAP l = 3" sql/synthetic_s.sql "$src" "$out/w1.sqlite" \
        "$l3, algorithm = 'clustree', m = 4, s = 0.5" "${envs[@]}"
    local k10="model = 'k-anonymity', k = 10, climit = 150, threshold = 0.3"
    run "W1 syntheticS$tag" "MiRaCle k = 10" sql/synthetic_s.sql "$src" "$out/w1.sqlite" \
        "$k10, algorithm = 'miracle'" "${envs[@]}"
    run "W1 syntheticS$tag" "MiRaCleX k = 10" sql/synthetic_s.sql "$src" "$out/w1.sqlite" \
        "$k10, algorithm = 'miraclex'" "${envs[@]}"
}

if has w1; then
    w1
    [ "$threads" = 1 ] && w1 RAYON_NUM_THREADS=1
fi

if has w2; then
    for sf in $sfs; do
        src="$out/tpch-$sf.sqlite"
        [ -e "$src" ] || "$RELANON" generate tpch --sf "$sf" --out "$src" --quiet
        extra=""
        [ -n "$w2_options" ] && extra=", $w2_options"
        run "W2 TPC-H SF $sf" "MiRaCleX k = 10" sql/tpch.sql "$src" "$out/w2.sqlite" \
            "model = 'k-anonymity', k = 10, algorithm = 'miraclex'$extra"
        l3="model = 'l-diversity', l = 3, mapping = 'lsap', candidates = 50"
        run "W2 TPC-H SF $sf" "CToff-LSAP l = 3, candidates = 50" sql/tpch.sql "$src" \
            "$out/w2.sqlite" "$l3, algorithm = 'ctoff'$extra"
        if [ "$w2_clustree" = 1 ]; then
            run "W2 TPC-H SF $sf" "ClusTree-LSAP l = 3, candidates = 50" sql/tpch.sql "$src" \
                "$out/w2.sqlite" "$l3, algorithm = 'clustree', m = 4, s = 0.5$extra"
        fi
    done
fi

if has w3; then
    adult=../shared/data/adult/adult.csv
    if [ -e "$adult" ]; then
        for k in 2 5 10 50; do
            run "W3 Adult" "k = $k" sql/adult.sql "$adult" "$out/w3.sqlite" "k = $k"
        done
    else
        echo "| W3 Adult | skipped: $adult is missing | | | | | | | | |"
    fi
fi

if has anatomy; then
    src="$out/synthetic_s.sqlite"
    [ -e "$src" ] || "$RELANON" generate synthetic-s --out "$src" --quiet
    for variant in t-t v-v; do
        run "A syntheticS" "anatomy $variant l = 3" sql/synthetic_s.sql "$src" "$out/a.sqlite" \
            "model = 'anatomy', l = 3, variant = '$variant', algorithm = 'anatomy'"
    done
    for sf in $sfs; do
        src="$out/tpch-$sf.sqlite"
        [ -e "$src" ] || "$RELANON" generate tpch --sf "$sf" --out "$src" --quiet
        run "A TPC-H SF $sf" "anatomy t-t l = 3" sql/tpch.sql "$src" "$out/a.sqlite" \
            "model = 'anatomy', l = 3, variant = 't-t', algorithm = 'anatomy'"
    done
fi

if has sf10; then
    src="$out/tpch-10"
    [ -e "$src" ] || "$RELANON" generate tpch --sf 10 --out "$src" --quiet
    extra_args=(--memory-budget 7GiB)
    saved_runs=$runs
    runs=1
    run "W2 TPC-H SF 10 (Parquet, --memory-budget 7GiB)" "MiRaCleX k = 10" sql/tpch.sql "$src" \
        "$out/sf10-release" "model = 'k-anonymity', k = 10, algorithm = 'miraclex'"
    runs=$saved_runs
    extra_args=()
fi
