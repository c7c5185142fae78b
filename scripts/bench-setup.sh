# Sourced by the benchmark scripts (perf-table.sh, shard-table.sh): checks the tools they
# time and read results with, sets RELANON (the release binary, built unless given) and
# makes the output folder `out/perf`, named by `out`.
for tool in /usr/bin/time jq; do
    command -v "$tool" >/dev/null || {
        echo "$tool is missing: apt-get install time jq" >&2
        exit 2
    }
done
if [ -z "${RELANON:-}" ]; then
    cargo build --release --quiet
    RELANON=target/release/relanon
fi
out=out/perf
mkdir -p "$out"
