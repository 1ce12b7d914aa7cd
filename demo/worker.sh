#!/bin/sh
# The demo worker of nps-runner, speaking ndjson-v1 (docs/worker-protocol.md):
# it reads its DelegateFrame from stdin and answers with one final
# AlignStream frame on stdout. Its mode comes from the SpawnSpec's command:
#   worker emit JSON     data JSON
#   worker double        data {"value": 2 × params.value}
#   worker report        data {"answer": params.answer}
#   worker echo          data {"params": the frame's params} (a flat params object)
#   worker fail CODE     error {code: CODE, retryable: false}
#   worker sleep S       silent for S seconds, then data {}
#   worker chatter S     a line on stderr every second for S seconds, then data {}
#   worker progress N    N progress frames {"step": i}, 0.3 s apart, then data {"steps": N}
# An action ending in "/compensate" is a saga compensation: it answers
# {"compensated": "<node>"} whatever the mode.
read -r frame || { echo "worker: no DelegateFrame on stdin" >&2; exit 2; }

# An integer member of the frame's params object.
param() {
    printf '%s' "$frame" | sed -n 's/.*"params":{\([^}]*\)}.*/\1/p' | sed -n "s/.*\"$1\":\(-\{0,1\}[0-9][0-9]*\).*/\1/p"
}
final() { printf '{"seq":0,"is_final":true,"data":%s}\n' "$1"; }

case "$NPS_ACTION" in
*/compensate) final "{\"compensated\":\"$NPS_NODE_ID\"}"; exit 0 ;;
esac

mode=${1:-}
[ $# -gt 0 ] && shift
case "$mode" in
emit) final "$1" ;;
double) v=$(param value); final "{\"value\":$((v * 2))}" ;;
report) v=$(param answer); final "{\"answer\":${v:-null}}" ;;
echo) p=$(printf '%s' "$frame" | sed -n 's/.*"params":\({[^}]*}\).*/\1/p'); final "{\"params\":${p:-null}}" ;;
fail) printf '{"seq":0,"is_final":true,"error":{"code":"%s","message":"asked to fail","retryable":false}}\n' "$1" ;;
sleep) sleep "$1"; final '{}' ;;
chatter)
    i=0
    while [ "$i" -lt "$1" ]; do echo "tick $i" >&2; sleep 1; i=$((i + 1)); done
    final '{}'
    ;;
progress)
    i=0
    while [ "$i" -lt "$1" ]; do
        printf '{"seq":%d,"is_final":false,"data":{"step":%d}}\n' "$i" "$i"
        sleep 0.3
        i=$((i + 1))
    done
    printf '{"seq":%d,"is_final":true,"data":{"steps":%d}}\n' "$1" "$1"
    ;;
*) echo "worker: unknown mode '$mode'" >&2; exit 2 ;;
esac
