#!/usr/bin/env bash
# Soak: the random-declarations fuzzer and the random-warehouse property test run far longer
# than CI runs them, in release mode. Usage: scripts/soak.sh [DECL_CASES] [WAREHOUSE_CASES]
# (defaults: a million declarations, 10,000 warehouses). Any panic or verify failure fails it,
# printing proptest's minimal case.
set -euo pipefail
cd "$(dirname "$0")/.."
decl=${1:-1000000}
warehouses=${2:-10000}
echo "soak: $decl random declarations, $warehouses random warehouses ($(date -u +%FT%TZ), $(git rev-parse --short HEAD))"
time RELANON_DECL_CASES=$decl cargo test --release --test integration fuzz_decl -- --nocapture
time RELANON_WAREHOUSE_CASES=$warehouses cargo test --release --test integration properties -- --nocapture
echo "soak: passed"
