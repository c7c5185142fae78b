#!/usr/bin/env bash
# A relanon cluster on this machine: a scheduler and two executors as separate processes on
# 127.0.0.1, TPC-H released through them in shards, verified, compared byte for byte with
# the same run on one machine, then everything stopped. Figures (wall time, peak memory of
# the client) go to out/cluster/.
#
#   scripts/cluster-demo.sh            # SF 1, 8 shards
#   SF=0.1 SHARDS=4 scripts/cluster-demo.sh
#   RELANON=path/to/relanon scripts/cluster-demo.sh   # a build with --features distributed
#   SRC=path/to/tpch-parquet scripts/cluster-demo.sh  # TPC-H already generated
set -euo pipefail
cd "$(dirname "$0")/.."
SF="${SF:-1}"
SHARDS="${SHARDS:-8}"
PORT="${PORT:-50050}"
WITH="k = 10, algorithm = 'miraclex', seed = 1"
command -v /usr/bin/time >/dev/null || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 2; }
if [ -z "${RELANON:-}" ]; then
    cargo build --release --quiet --features distributed
    RELANON=target/release/relanon
fi
out="$PWD/out/cluster"
mkdir -p "$out"
pids=()
stop() { # each process runs under /usr/bin/time: stop the process, time writes its figures
    for p in "${pids[@]}"; do pkill -TERM -P "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop EXIT

src="${SRC:-$out/tpch-sf$SF}"
[ -d "$src" ] || "$RELANON" generate tpch --sf "$SF" --out "$src"

/usr/bin/time -v -o "$out/scheduler.time" \
    "$RELANON" cluster scheduler --bind "127.0.0.1:$PORT" >"$out/scheduler.log" 2>&1 &
pids+=($!)
for i in 1 2; do
    mkdir -p "$out/executor-$i"
    /usr/bin/time -v -o "$out/executor-$i.time" \
        "$RELANON" cluster executor --scheduler "df://127.0.0.1:$PORT" \
        --bind "127.0.0.1:$((PORT + 2 * i - 1))" --work-dir "$out/executor-$i" \
        >"$out/executor-$i.log" 2>&1 &
    pids+=($!)
done
sleep 2

run() { # name, extra arguments...
    local name="$1"; shift
    /usr/bin/time -v -o "$out/$name.time" "$RELANON" anonymize sql/tpch.sql --source "$src" \
        --target "$out/$name" --key-map "$out/$name.keys.json" --overwrite \
        --with "$WITH" --shards "$SHARDS" "$@"
    awk -F': ' '/Elapsed \(wall clock\)/ {w=$2} /Maximum resident/ {m=$2} END {printf "'"$name"': wall %s, peak %.0f MiB\n", w, m/1024}' "$out/$name.time"
}
run cluster --cluster "df://127.0.0.1:$PORT"
"$RELANON" verify sql/tpch.sql --with "$WITH" --source "$src" --release "$out/cluster" --key-map "$out/cluster.keys.json"
run one-machine
for f in $(cd "$out/one-machine" && find . -type f ! -name report.json | sort); do
    cmp -s "$out/one-machine/$f" "$out/cluster/$f" || { echo "differs: $f" >&2; exit 1; }
done
cmp -s "$out/one-machine.keys.json" "$out/cluster.keys.json" || { echo "key maps differ" >&2; exit 1; }
echo "the cluster's release is the one-machine release, byte for byte"
stop
trap - EXIT
for f in scheduler executor-1 executor-2; do
    awk -F': ' '/Maximum resident/ {printf "'"$f"': peak %.0f MiB\n", $2/1024}' "$out/$f.time"
done
