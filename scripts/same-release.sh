#!/usr/bin/env bash
# Shows that a change alters no release: two relanon binaries (before and after) anonymize the
# same four workloads with a fixed key seed, and the releases are compared byte for byte and
# report.json field by field (timings aside; `params` printed when it differs).
# Usage: scripts/same-release.sh OLD_BINARY NEW_BINARY
# Workloads: the demo university (MiRaCleX k = 5), Table II (MiRaCle k = 2), syntheticS
# (CToff l = 3) and UCI Adult (TopDown k = 10, when ../shared/data/adult is present).
set -euo pipefail
old=$1 new=$2
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$old" --quiet demo --out "$work/demo" >/dev/null
"$old" --quiet generate synthetic-s --out "$work/ss.sqlite" >/dev/null
run() { # tag binary case decl with [args...]
    local tag=$1 bin=$2 case=$3 decl=$4 with=$5
    shift 5
    "$bin" --quiet anonymize "$decl" --with "seed = 7$with" \
        --target "$work/$case-$tag.sqlite" --key-map "$work/$case-$tag.keys.json" "$@" >/dev/null
}
cases=(demo table2 synths)
for tag in old new; do
    bin=$old
    [ "$tag" = new ] && bin=$new
    run $tag "$bin" demo "$work/demo/university.sql" ""
    run $tag "$bin" table2 "$root/sql/table2.sql" ""
    run $tag "$bin" synths "$root/sql/synthetic_s.sql" ", algorithm = 'ctoff'" --source "$work/ss.sqlite"
    if [ -f "$root/../shared/data/adult/adult.csv" ]; then
        run $tag "$bin" adult "$root/sql/adult.sql" ""
        [ "$tag" = old ] && cases+=(adult)
    fi
done
status=0
for c in "${cases[@]}"; do
    if cmp -s "$work/$c-old.sqlite" "$work/$c-new.sqlite"; then
        release="identical ($(wc -c <"$work/$c-new.sqlite") bytes)"
    else
        release="DIFFERS"
        status=1
    fi
    strip='del(.timings_ms, .params)'
    if [ "$(jq -c "$strip" "$work/$c-old.report.json")" = "$(jq -c "$strip" "$work/$c-new.report.json")" ]; then
        report="identical but for timings"
        if ! diff -q <(jq -c .params "$work/$c-old.report.json") <(jq -c .params "$work/$c-new.report.json") >/dev/null; then
            report+="; params: $(jq -c .params "$work/$c-old.report.json") -> $(jq -c .params "$work/$c-new.report.json")"
        fi
    else
        report="DIFFERS"
        status=1
    fi
    echo "$c: release $release; report.json $report"
done
exit $status
