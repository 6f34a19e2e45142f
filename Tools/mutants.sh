#!/usr/bin/env bash
# Proof the simulator can fail: applies one-line mutations to the production core, one at a
# time, in a scratch git worktree (of HEAD) with its own .build that every mutant reuses;
# builds wssimulate (debug, through the build lock), runs up to SCHEDULES schedules, and
# prints a table: mutant, file:line, caught, first failing seed, schedules until caught.
# Each mutation is found by its exact text: if the code changed, the script fails loudly.
#
#   Tools/mutants.sh [SCHEDULES]      (default 20000)
set -euo pipefail
ROOT=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
SCHEDULES=${1:-20000}
TREE=${MUTANTS_TREE:-/tmp/websocketstreams-mutants}
LOCK=/tmp/swift-build.lock

if [ -d "$TREE" ]; then
    git -C "$TREE" checkout -q --detach "$(git -C "$ROOT" rev-parse HEAD)"
    git -C "$TREE" reset -q --hard
else
    git -C "$ROOT" worktree add -q --detach "$TREE" HEAD
    # The dependencies as this checkout resolved them: no network, the same versions.
    mkdir -p "$TREE/.build"
    cp "$ROOT/Package.resolved" "$TREE/" 2>/dev/null || true
    for part in checkouts repositories artifacts workspace-state.json; do
        [ -e "$ROOT/.build/$part" ] && cp -a "$ROOT/.build/$part" "$TREE/.build/"
    done
fi

# name | file | exact text (\n for a second line of context) | replacement
MUTANTS=$(cat <<'LIST'
a resend skipped (abandoned messages not reported)|Sources/WebSocketStreams/Writing/FrameWriter.swift|        abandoned + (outgoing.map { [$0.message] } ?? []) + messages.map(\.message)|        (outgoing.map { [$0.message] } ?? []) + messages.map(\.message)
an ending sent twice|Sources/WebSocketStreams/Engine/ClientEngine+Frames.swift|        guard finale != nil, let ending = machine.ending else { return }|        guard let ending = machine.ending else { return }
data after close (the writer goes on after its close frame)|Sources/WebSocketStreams/Writing/FrameWriter.swift|        while !closeWritten {|        while true {
a deadline not armed (a close asked for gets no timeout)|Sources/WebSocketStreams/Connection/StateMachine/ConnectionStateMachine.swift|            moveCloseDeadline(.closeTimeout, now: now())|            _ = now()
a continuation without a start accepted|Sources/WebSocketCore/Protocol/MessageAssembler.swift|            guard var partial else { throw .protocolError("a continuation frame arrived with no message to continue") }|            guard var partial = Optional(partial ?? Partial(kind: .binary, isCompressed: false)) else { throw .protocolError("") }
a pong that does not echo the ping|Sources/WebSocketStreams/Connection/StateMachine/ConnectionStateMachine+Receiving.swift|        return payload|        return Array(payload.dropLast())
a fragment limit off by one|Sources/WebSocketCore/Protocol/MessageAssembler.swift|            if partial.fragments > maxFragments { throw .tooManyFragments(limit: maxFragments) }|            if partial.fragments >= maxFragments { throw .tooManyFragments(limit: maxFragments) }
a UTF-8 check skipped across pieces|Sources/WebSocketCore/Protocol/MessageAssembler.swift|            if message.kind == .text, !validator.validate(bytes) { throw .invalidPayload("invalid UTF-8 in a text message") }\n            if payload.isEmpty {|            if false, message.kind == .text, !validator.validate(bytes) { throw .invalidPayload("invalid UTF-8 in a text message") }\n            if payload.isEmpty {
an acknowledged message resent|Sources/WebSocketStreams/Delivery/DeliveryLedger.swift|        entries.filter { $0.end > acknowledged }.map(\.message)|        entries.filter { $0.end >= acknowledged }.map(\.message)
a close code echoed wrongly|Sources/WebSocketStreams/Connection/StateMachine/ConnectionStateMachine+Closing.swift|            answer = CloseFrame(code: frame.code)|            answer = CloseFrame(code: .normalClosure)
an invalid close code accepted|Sources/WebSocketCore/Protocol/CloseFrame.swift|        default: false|        default: true
the send queue's limit ignored|Sources/WebSocketStreams/Connection/OutboundQueue.swift|        message.position.startsMessage ? isFull : bytes >= highWatermark|        false
LIST
)

printf '%-58s | %-52s | %-6s | %-10s | %s\n' "mutant" "file:line" "caught" "first seed" "schedules until caught"
failures=0
while IFS='|' read -r name file old new; do
    git -C "$TREE" checkout -q -- .
    line=$(python3 - "$TREE/$file" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2].replace('\\n', '\n'), sys.argv[3].replace('\\n', '\n')
text = open(path).read()
count = text.count(old + '\n')
if count != 1:
    sys.exit(f"mutants.sh: expected the text exactly once in {path}, found it {count} times:\n{old}")
index = text.index(old + '\n')
open(path, 'w').write(text.replace(old + '\n', new + '\n'))
print(text[:index].count('\n') + 1)
PY
) || { echo "mutants.sh: cannot apply '$name'" >&2; exit 2; }
    if ! flock "$LOCK" swift build --package-path "$TREE" --product wssimulate >"$TREE/.mutant-build.log" 2>&1; then
        echo "mutants.sh: '$name' does not build (see $TREE/.mutant-build.log)" >&2
        exit 2
    fi
    output=$("$TREE/.build/debug/wssimulate" --schedules "$SCHEDULES" --shards 2 || true)
    if grep -q '^FAILED after' <<<"$output"; then
        caught=yes
        seed=$(grep -o '^seed [0-9]*' <<<"$output" | head -1 | cut -d' ' -f2)
        after=$(grep -o '^FAILED after [0-9]*' <<<"$output" | cut -d' ' -f3)
    else
        caught=no seed=- after=-
        failures=$((failures + 1))
    fi
    printf '%-58s | %-52s | %-6s | %-10s | %s\n' "$name" "${file#Sources/WebSocketStreams/}:$line" "$caught" "$seed" "$after"
done <<<"$MUTANTS"
git -C "$TREE" checkout -q -- .
if [ "$failures" -gt 0 ]; then
    echo "$failures mutant(s) survived: strengthen the simulator"
    exit 1
fi
echo "every mutant was caught"
