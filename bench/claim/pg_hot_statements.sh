#!/bin/bash
# pg_hot_statements.sh: where a PostgreSQL batch's server time goes.
#
# Runs the store's two hot statements (a head claim of 64, the completion of
# what it claimed; pg-hot/loop.sql) from one pgbench client, prepared, on a
# fresh schema made by `nps-runner store migrate`, and the same loop on
# schemas changed by each pg-hot/without-*.sql, in interleaved rounds (this
# machine's speed drifts by 20 % within minutes). Prints batches/s and
# tasks/s per variant and per round. Not a test; bench/RESULTS.md has figures.
#
# usage: bench/claim/pg_hot_statements.sh --store postgresql://… [--runner nps-runner]
#        [--rounds 3] [--batches 600]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server="" runner="$here/../../build/nps-runner" rounds=3 batches=600
while [ $# -gt 0 ]; do
    case "$1" in
        --store) server=$2 ;;
        --runner) runner=$2 ;;
        --rounds) rounds=$2 ;;
        --batches) batches=$2 ;;
        *) echo "pg_hot_statements.sh: unknown argument '$1' (see the head of this file)" >&2; exit 2 ;;
    esac
    shift 2
done
[[ "$server" == postgresql://* || "$server" == postgres://* ]] ||
    { echo "pg_hot_statements.sh: give --store postgresql://… (a server on which a scratch schema may be made)" >&2; exit 2; }
command -v pgbench >/dev/null || { echo "pg_hot_statements.sh: pgbench not found (Debian: postgresql-client)" >&2; exit 2; }
[ -x "$runner" ] || { echo "pg_hot_statements.sh: no nps-runner at $runner (give --runner)" >&2; exit 2; }

schema="nps_hot_$$"
sep='?'; [[ "$server" == *\?* ]] && sep='&'
url="$server${sep}options=-csearch_path%3D$schema"
trap 'psql "$server" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true' EXIT

# One cell: a fresh schema, the variant's change, batches*64 + 4000 tasks
# deposited and vacuumed, then the loop. Prints batches/s.
cell() {
    local variant=$1
    psql "$server" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    psql "$server" -qc "CREATE SCHEMA $schema"
    "$runner" store migrate --store "$url" >/dev/null
    [ "$variant" = base ] || psql "$url" -q -v ON_ERROR_STOP=1 -f "$here/pg-hot/$variant.sql"
    psql "$url" -q -v ON_ERROR_STOP=1 -v lo=1 -v hi=$((batches * 64 + 4000)) -f "$here/pg-hot/fill.sql"
    psql "$url" -qc "VACUUM ANALYZE"
    pgbench -n -M prepared -f "$here/pg-hot/loop.sql" -c 1 -t "$batches" "$url" 2>&1 |
        awk '/^tps/ {print $3} /error/ {print "pgbench: " $0 > "/dev/stderr"; exit 1}'
}

variants=(base)
for f in "$here"/pg-hot/without-*.sql; do variants+=("$(basename "$f" .sql)"); done
printf 'pg_hot_statements: %d batches of 64 per cell, load %s\n' "$batches" "$(cut -d' ' -f1-3 /proc/loadavg)"
declare -A results
for ((r = 1; r <= rounds; r++)); do
    for v in "${variants[@]}"; do
        results[$v]+=" $(cell "$v")"
    done
done
printf '%-22s %s\n' variant "tasks/s per round (batches/s x 64), then the median's ratio to base"
base_median=$(tr ' ' '\n' <<<"${results[base]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
for v in "${variants[@]}"; do
    median=$(tr ' ' '\n' <<<"${results[$v]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '%-22s' "$v"
    for t in ${results[$v]}; do printf ' %8.0f' "$(awk -v t="$t" 'BEGIN {print t * 64}')"; done
    awk -v m="$median" -v b="$base_median" 'BEGIN {printf "   %.2fx\n", m / b}'
done
