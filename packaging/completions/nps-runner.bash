# SPDX-License-Identifier: Apache-2.0
# bash completion for nps-runner. Verbs, sub-verbs and options are read from
# the installed binary's own --help at completion time, so they never drift
# from what it accepts.

_nps_runner_verbs() {
    "$1" --help 2>/dev/null | sed -n '/^Verbs:/,/^$/s/^  \([a-z][a-z]*\).*/\1/p' | sort -u
}

# The sub-verbs of VERB: from the help's "VERB sub" lines and, for such a
# group verb only (a bare "serve" would start the daemon), from the "needs a
# sub-verb: a, b" message the bare group verb prints.
_nps_runner_subverbs() {
    local listed
    listed=$("$1" --help 2>/dev/null | sed -n "s/^  $2 \([a-z][a-z]*\).*/\1/p")
    [[ -n $listed ]] || return 0
    {
        printf '%s\n' "$listed"
        "$1" "$2" 2>&1 </dev/null | sed -n 's/.*needs a sub-verb: //p' | tr -d ',' | tr ' ' '\n'
    } | sed '/^$/d' | sort -u
}

_nps_runner_options() {
    "$@" --help 2>/dev/null | sed -n 's/^  \(--*[a-z][a-z-]*\).*/\1/p'
}

_nps_runner() {
    local cur=${COMP_WORDS[COMP_CWORD]} runner=${COMP_WORDS[0]}
    local -a command=("$runner")
    if (( COMP_CWORD == 1 )); then
        COMPREPLY=($(compgen -W "$(_nps_runner_verbs "$runner") --help" -- "$cur"))
        return
    fi
    local verb=${COMP_WORDS[1]}
    command+=("$verb")
    local subverbs
    subverbs=$(_nps_runner_subverbs "$runner" "$verb")
    if [[ -n $subverbs ]]; then
        if (( COMP_CWORD == 2 )) && [[ $cur != -* ]]; then
            COMPREPLY=($(compgen -W "$subverbs" -- "$cur"))
            [[ $verb == announce ]] || return
        fi
        if (( COMP_CWORD > 2 )) && grep -qx -- "${COMP_WORDS[2]}" <<<"$subverbs"; then
            command+=("${COMP_WORDS[2]}")
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_nps_runner_options "${command[@]}")" -- "$cur"))
        return
    fi
    # Values: files (TaskFrames, spec files, archives, directories).
    COMPREPLY+=($(compgen -f -- "$cur"))
}

complete -o filenames -F _nps_runner nps-runner
