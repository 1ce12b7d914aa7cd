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

# What the modes read of the frame is taken with the shell's own pattern
# matching, into variables: the worker starts no process of its own.
#
# params: the frame's params object "{...}", from the last '"params":{' to
# the first "}" after it (params is a flat object), or empty.
read_params() {
    params=
    case $frame in *'"params":{'*'}'*) ;; *) return 0 ;; esac
    p=${frame##*\"params\":\{}
    p=${p%%\}*}
    params="{$p}"
}
# value: the integer member $1 of the params object (an optional "-", then
# digits), or empty.
read_int_param() {
    read_params
    value=
    case $params in *"\"$1\":"*) ;; *) return 0 ;; esac
    v=${params##*\"$1\":}
    sign=
    case $v in -*) sign=-; v=${v#-} ;; esac
    v=${v%%[!0-9]*}
    [ -z "$v" ] || value=$sign$v
}
final() { printf '{"seq":0,"is_final":true,"data":%s}\n' "$1"; }

case "$NPS_ACTION" in
*/compensate) final "{\"compensated\":\"$NPS_NODE_ID\"}"; exit 0 ;;
esac

mode=${1:-}
[ $# -gt 0 ] && shift
case "$mode" in
emit) final "$1" ;;
double) read_int_param value; final "{\"value\":$((value * 2))}" ;;
report) read_int_param answer; final "{\"answer\":${value:-null}}" ;;
echo) read_params; final "{\"params\":${params:-null}}" ;;
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
