#!/usr/bin/env bash
# Shows that a change alters nothing relanon writes: two relanon binaries (before and after)
# run the same workloads with a fixed key seed, and every output is compared byte for byte:
# releases, key maps, declarations `init` proposes, what `plan`, `verify`, `attack` and
# `negotiate --json` print, and the HTML page drawn from each report; report.json is compared
# field by field with the timings left out (the pages are drawn from reports whose timings are
# zeroed, so they compare byte for byte too).
#
# Workloads: the demo university (MiRaCleX k = 5); Table II (MiRaCle k = 2, and the lattice);
# the performance table's (scripts/perf-table.sh) W1 syntheticS (CToff-LSAP and ClusTree-LSAP
# l = 3, MiRaCle and MiRaCleX k = 10), W2 TPC-H SF 0.01 (MiRaCleX k = 10, CToff-LSAP l = 3 with
# candidates = 50), W3 UCI Adult (k = 2, 5, 10, 50; when ../shared/data/adult is present) and
# anatomy (t-t and v-v on syntheticS, t-t on TPC-H); the anatomy fixtures; every real-shaped
# fixture (fixtures/realworld) as declared and as `init` proposes it (the health record); the
# lattice on Adult (`algorithm = 'lattice'`, and `negotiate --json` over a built lattice).
#
# Usage: scripts/same-release.sh OLD_BINARY NEW_BINARY [--only NAME,...]
# Needs: sqlite3, jq. Prints one line per output; exits 1 if anything differs.
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2")
only="${4:-}"
[ "${3:-}" = "--only" ] || only=""
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
adult="$root/../shared/data/adult/adult.csv"

# Sources, made once with the old binary (the generators are part of what is compared below:
# the demo writes its own).
src="$work/src"
mkdir -p "$src"
"$old" --quiet generate synthetic-s --out "$src/ss.sqlite" >/dev/null
"$old" --quiet generate tpch --sf 0.01 --out "$src/tpch.sqlite" >/dev/null
for f in "$root"/fixtures/realworld/*.sql; do
    case "$f" in *.decl.sql) continue ;; esac
    name=$(basename "$f" .sql)
    case "$name" in rental_busy | rental_disagree) continue ;; esac
    sqlite3 "$src/$name.sqlite" <"$f"
done
cp -r "$root/fixtures/realworld/health" "$src/health"
sqlite3 "$src/hospital.sqlite" <"$root/fixtures/anatomy/hospital.sql"

wanted() {
    [ -z "$only" ] && return 0
    case ",$only," in *",$1,"*) return 0 ;; esac
    return 1
}

# One workload's outputs into $out/<case>.*: the release, its key map and report.json.
anon() { # bin out case decl with [args...]
    local bin=$1 out=$2 case=$3 decl=$4 with=$5
    shift 5
    wanted "$case" || return 0
    "$bin" --quiet anonymize "$decl" --with "seed = 7$with" --target "$out/$case.sqlite" \
        --key-map "$out/$case.keys.json" "$@" >"$out/$case.anonymize.txt" 2>&1 || true
}

# Every workload, run by one binary into one directory.
workloads() { # bin out
    local bin=$1 out=$2
    mkdir -p "$out"
    (cd "$out" && "$bin" --quiet demo --out "$out/demo" >/dev/null 2>&1) || true
    # The demo's own release draws its keys from the OS; the seeded run below stands for it.
    rm -f "$out/demo/"*-release.*
    anon "$bin" "$out" demo "$out/demo/university.sql" ""
    anon "$bin" "$out" table2 "$root/sql/table2.sql" ""
    anon "$bin" "$out" table2-lattice "$root/sql/table2.sql" ", algorithm = 'lattice', max_suppression = 0.5"
    local ss="$src/ss.sqlite" tp="$src/tpch.sqlite"
    local l3="model = 'l-diversity', l = 3, mapping = 'lsap'"
    local k10="model = 'k-anonymity', k = 10, climit = 150, threshold = 0.3"
    anon "$bin" "$out" w1-ctoff "$root/sql/synthetic_s.sql" ", $l3, algorithm = 'ctoff'" --source "$ss"
    anon "$bin" "$out" w1-clustree "$root/sql/synthetic_s.sql" ", $l3, algorithm = 'clustree', m = 4, s = 0.5" --source "$ss"
    anon "$bin" "$out" w1-miracle "$root/sql/synthetic_s.sql" ", $k10, algorithm = 'miracle'" --source "$ss"
    anon "$bin" "$out" w1-miraclex "$root/sql/synthetic_s.sql" ", $k10, algorithm = 'miraclex'" --source "$ss"
    anon "$bin" "$out" w2-miraclex "$root/sql/tpch.sql" ", model = 'k-anonymity', k = 10, algorithm = 'miraclex'" --source "$tp"
    anon "$bin" "$out" w2-ctoff "$root/sql/tpch.sql" ", $l3, candidates = 50, algorithm = 'ctoff'" --source "$tp"
    for v in t-t v-v; do
        anon "$bin" "$out" "a-ss-$v" "$root/sql/synthetic_s.sql" ", model = 'anatomy', l = 3, variant = '$v', algorithm = 'anatomy'" --source "$ss"
    done
    anon "$bin" "$out" a-tpch "$root/sql/tpch.sql" ", model = 'anatomy', l = 3, variant = 't-t', algorithm = 'anatomy'" --source "$tp"
    anon "$bin" "$out" a-hospital "$root/fixtures/anatomy/hospital.decl.sql" "" --source "$src/hospital.sqlite"
    anon "$bin" "$out" a-table31 "$root/fixtures/anatomy/table31.decl.sql" "" --source "$root/fixtures/anatomy/table31"
    if [ -f "$adult" ]; then
        for k in 2 5 10 50; do
            anon "$bin" "$out" "w3-k$k" "$root/sql/adult.sql" ", k = $k" --source "$adult"
        done
        anon "$bin" "$out" w3-lattice "$root/sql/adult.sql" ", k = 10, algorithm = 'lattice', max_suppression = 0.01" --source "$adult"
        if wanted w3-negotiate; then
            # One path for both runs: the answers name the lattice they read. Its own format is
            # not compared (a release is what is); the answers read from it are.
            "$bin" --quiet lattice "$root/sql/adult.sql" --source "$adult" --out "$work/adult.lattice" \
                --overwrite >/dev/null 2>&1
            "$bin" negotiate "$root/sql/adult.sql" --source "$adult" --lattice "$work/adult.lattice" \
                --k 10 --max-suppression 1% --max-level age=2 --json 2>&1 |
                jq 'del(.. | .microseconds?, .build_seconds?)' >"$out/w3-negotiate.json" || true
            rm -f "$work/adult.lattice"
        fi
    fi
    for decl in "$root"/fixtures/realworld/*.decl.sql; do
        local name
        name=$(basename "$decl" .decl.sql)
        [ "$name" = whitespace_bad ] && continue
        local base=$name
        anon "$bin" "$out" "rw-$name" "$decl" "" --source "$src/$base.sqlite"
        if wanted "rw-$name" && [ -f "$out/rw-$name.sqlite" ]; then
            "$bin" verify "$decl" --source "$src/$base.sqlite" --release "$out/rw-$name.sqlite" \
                >"$out/rw-$name.verify.txt" 2>&1 || true
        fi
    done
    # init's proposals, planned and released as they are.
    for s in health health.sqlite rental.sqlite university.sqlite sales.sqlite clinic.sqlite; do
        local case="init-${s%.sqlite}"
        [ "$s" = health ] && case=init-health-csv
        wanted "$case" || continue
        local dir="$out/$case"
        mkdir -p "$dir"
        cp -r "$src/$s" "$dir/"
        (cd "$dir" && "$bin" init "$s" >"$out/$case.init.txt" 2>&1 || true)
        local d
        d=$(ls "$dir"/*.decl.sql 2>/dev/null | head -1)
        [ -n "$d" ] || continue
        cp "$d" "$out/$case.decl.sql"
        (cd "$dir" && "$bin" plan "$(basename "$d")" >"$out/$case.plan.txt" 2>&1 || true)
        (cd "$dir" && "$bin" --quiet anonymize "$(basename "$d")" --with "seed = 7" \
            --target "$out/$case.sqlite" --key-map "$out/$case.keys.json" >/dev/null 2>&1 || true)
        rm -rf "$dir"
    done
    # The attack on the demo, as text and JSON.
    if wanted demo && [ -f "$out/demo.sqlite" ]; then
        for fmt in text json; do
            local flag=""
            [ "$fmt" = json ] && flag=--json
            "$bin" attack "$out/demo/university.sql" --release "$out/demo.sqlite" \
                --fact "students.age = 21" $flag >"$out/demo.attack.$fmt" 2>&1 || true
        done
    fi
}

workloads "$old" "$work/old"
workloads "$new" "$work/new"

# Pages drawn by each binary from the old run's reports, timings zeroed.
for r in "$work"/old/*.report.json; do
    c=$(basename "$r" .report.json)
    jq '(.timings_ms // {}) |= with_entries(.value = 0)' "$r" >"$work/$c.zeroed.json"
    "$old" --quiet report "$work/$c.zeroed.json" --out "$work/old/$c.page.html" >/dev/null 2>&1 || true
    "$new" --quiet report "$work/$c.zeroed.json" --out "$work/new/$c.page.html" >/dev/null 2>&1 || true
done

status=0
n=0
while IFS= read -r f; do
    n=$((n + 1))
    a="$work/old/$f" b="$work/new/$f"
    if [ ! -e "$b" ]; then
        echo "$f: MISSING from the new run"
        status=1
        continue
    fi
    case "$f" in
    *.report.json)
        strip='del(.timings_ms)'
        if [ "$(jq -cS "$strip" "$a")" = "$(jq -cS "$strip" "$b")" ]; then
            echo "$f: identical but for timings"
        else
            echo "$f: DIFFERS"
            status=1
        fi
        ;;
    *.anonymize.txt | *.init.txt | *.plan.txt)
        # Progress lines carry durations; the rest must match.
        if diff -q <(sed -E 's/[0-9]+(\.[0-9]+)? ?(ms|s|µs)\b/T/g' "$a") \
            <(sed -E 's/[0-9]+(\.[0-9]+)? ?(ms|s|µs)\b/T/g' "$b") >/dev/null; then
            echo "$f: identical but for durations"
        else
            echo "$f: DIFFERS"
            diff <(cat "$a") <(cat "$b") | head -5
            status=1
        fi
        ;;
    *)
        if cmp -s "$a" "$b"; then
            echo "$f: identical ($(wc -c <"$b") bytes)"
        else
            echo "$f: DIFFERS"
            status=1
        fi
        ;;
    esac
done < <(cd "$work/old" && find . -type f | sed 's|^\./||' | sort)
extra=$(cd "$work/new" && find . -type f | sed 's|^\./||' | sort | comm -13 <(cd "$work/old" && find . -type f | sed 's|^\./||' | sort) -)
if [ -n "$extra" ]; then
    echo "only in the new run: $extra"
    status=1
fi
echo "$n outputs compared: $([ $status = 0 ] && echo 'all the same' || echo 'SOME DIFFER')"
exit $status
