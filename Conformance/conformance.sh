#!/usr/bin/env bash
# Runs the Autobahn|Testsuite client cases against `wsbench --workload autobahn`.
#
#   Conformance/conformance.sh full     every case, once with the default compression offer,
#                                       once with a 9-bit client window without context
#                                       takeover, and once reading and echoing every message
#                                       in pieces (--stream; about 12 minutes each), then
#                                       writes CONFORMANCE.md           (make conformance)
#   Conformance/conformance.sh quick    a few cases of every category, and a few in pieces,
#                                       under 3 minutes; fails on any verdict other than OK
#                                       or INFORMATIONAL (part of make test)
#
# The suite itself is not in this repository: ../shared/conformance (or $CONFORMANCE_DIR)
# holds the script that installs its fuzzingserver from PyPI into a venv and ports it to
# Python 3, and the driver that runs the cases. The venv lives in .build/autobahn-venv.
set -euo pipefail

mode="${1:-quick}"
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${CONFORMANCE_DIR:-$root/../shared/conformance}"
if [[ ! -f "$shared/run_client_suite.py" ]]; then
    if [[ "$mode" == quick && -z "${CONFORMANCE_REQUIRED:-}" ]]; then
        # make test must work in a checkout without the shared folder next to it.
        echo "conformance: SKIPPED, the Autobahn driver is not at $shared (set CONFORMANCE_DIR)" >&2
        exit 0
    fi
    echo "conformance: the Autobahn driver is not at $shared (set CONFORMANCE_DIR)" >&2
    exit 1
fi
venv="$root/.build/autobahn-venv"
if [[ ! -x "$venv/bin/wstest" ]]; then
    echo "conformance: installing the Autobahn fuzzingserver into $venv (about 30 s, from PyPI)"
    rm -rf "$venv"
    mkdir -p "$root/.build"
    python=/usr/bin/python3
    [[ -x "$python" ]] || python=python3
    if ! "$python" -c 'import ensurepip' 2>/dev/null; then
        # Debian ships venv support separately.
        echo "conformance: installing python3-venv with apt-get"
        sudo=""; [[ "$(id -u)" == 0 ]] || sudo=sudo
        $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv
    fi
    PYTHON="$python" bash "$shared/setup_fuzzingserver.sh" "$venv" > "$root/.build/autobahn-setup.log" 2>&1 \
        || { tail -20 "$root/.build/autobahn-setup.log" >&2; exit 1; }
fi

case "$mode" in
    full)
        config=release
        cases='*'
        out="$root/.build/conformance-full"
        ;;
    quick)
        config=debug
        # A few cases of every category, the formerly lws-caused verdicts (2.10, 3.2, 4.1.3,
        # 4.2.5, 5.15, 6.4.3) included.
        cases='1.1.1,1.1.8,1.2.8,2.1,2.6,2.10,2.11,3.2,3.7,4.1.3,4.2.5,5.1,5.15,5.20,6.1.3,6.2.4,6.3.2,6.4.3,6.4.4,6.12.8,6.21.3,7.1.6,7.3.2,7.5.1,7.7.1,7.9.4,9.1.1,9.2.1,9.7.1,10.1.1,12.1.1,12.2.3,12.5.2,13.1.1,13.3.2,13.7.3'
        out="$root/.build/conformance-quick"
        ;;
    *)
        echo "usage: $0 full|quick" >&2
        exit 2
        ;;
esac

swift build -c "$config" --product wsbench
bin="$(swift build -c "$config" --show-bin-path)"

# One run per way of reading: a label, "|", wsbench's flags for it, and for the quick mode
# "|" and the cases of that run (default: $cases).
offers=("Default offer|")
if [[ "$mode" == full ]]; then
    offers+=("Offer of client_max_window_bits=9, client_no_context_takeover|--client-max-window-bits 9 --client-no-context-takeover")
    offers+=("Default offer, messages read and echoed in pieces (streamsIncomingMessages, send(streaming:as:))|--stream")
else
    offers+=("Messages in pieces|--stream|1.2.8,5.15,5.20,6.4.3,6.4.4,9.1.1,9.2.1,12.2.3,13.3.2")
fi
summaries=()
index=0
for offer in "${offers[@]}"; do
    label="${offer%%|*}"
    rest="${offer#*|}"
    flags="${rest%%|*}"
    run_cases="$cases"
    [[ "$rest" == *"|"* ]] && run_cases="${rest#*|}"
    run_out="$out/offer-$index"
    rm -rf "$run_out"
    echo "conformance: offer [$label]"
    # shellcheck disable=SC2086 # the flags are words
    python3 "$shared/run_client_suite.py" --wstest "$venv/bin/wstest" --agent websocketstreams \
        --cases "$run_cases" --out "$run_out" -- "$bin/wsbench" --workload autobahn --url '{url}' $flags
    summaries+=("$label|$run_out/summary.json")
    index=$((index + 1))
done
python3 "$root/Conformance/verdicts.py" "$mode" "$root/CONFORMANCE.md" "${summaries[@]}"
