#!/usr/bin/env bash
# The public API of every library product, compared with the baseline recorded in
# Tools/api-baseline/ (one swift-api-digester dump per module). Fails on a breaking change
# (a public symbol removed, renamed, or changed in type) that the `## [Unreleased]` section
# of CHANGELOG.md does not list under `### Breaking`, naming the symbol in backticks.
#
#   Tools/api-check.sh            check (builds the package first, debug)
#   Tools/api-check.sh --record   record the current API as the baseline (when a release is cut)
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(WebSocketStreams TaskLifetimes WebSocketServiceLifecycle WebSocketTestServer)
baseline=Tools/api-baseline
build_log=$(mktemp)
if ! swift build >"$build_log" 2>&1; then
    cat "$build_log"; rm -f "$build_log"
    echo "api-check: the package does not build"; exit 1
fi
rm -f "$build_log"
bin=$(swift build --show-bin-path)
# The C modules the Swift modules import, as SwiftPM passes them to the compiler.
digester=(swift-api-digester -I "$bin/Modules" -Xcc "-fmodule-map-file=$PWD/Sources/CLibWebSockets/module.modulemap"
          -Xcc "-fmodule-map-file=$PWD/Sources/CZlib/module.modulemap" -swift-version 6 -avoid-tool-args)
if [ "${1:-}" = "--record" ]; then
    for module in "${modules[@]}"; do
        "${digester[@]}" -dump-sdk -module "$module" -o "$baseline/$module.json"
    done
    echo "api-check: recorded the public API of ${modules[*]} in $baseline/"
    exit 0
fi

# The Unreleased section's `### Breaking` part: what this change may break.
allowed=$(awk '/^## \[Unreleased\]/ { inside = 1; next } /^## / { inside = 0 }
               inside && /^### / { breaking = ($0 ~ /^### Breaking/) ; next }
               inside && breaking { print }' CHANGELOG.md)
report=$(mktemp)
trap 'rm -f "$report"' EXIT
unlisted=0
for module in "${modules[@]}"; do
    # Names the baseline holds that are not public API: `package` declarations (the digester
    # marks them isInternal) and `@_spi` ones. Removing or changing them breaks no user.
    not_public=$(python3 - "$baseline/$module.json" <<'PY'
import json, sys
def walk(node):
    if node.get("isInternal") or "SPIAccessControl" in node.get("declAttributes", []):
        print(node.get("name", ""))
    for child in node.get("children", []):
        walk(child)
walk(json.load(open(sys.argv[1]))["ABIRoot"])
PY
)
    "${digester[@]}" -diagnose-sdk -module "$module" -baseline-path "$baseline/$module.json" -o "$report"
    # Every line that is not a section heading is a breaking change: "Func WebSocket.send(_:) has been removed".
    while IFS= read -r change; do
        [ -z "$change" ] && continue
        symbol=$(echo "$change" | awk '{ print $2 }')
        name=${symbol%%(*}
        # An accessor's change is listed under its property's name.
        case "$change" in Accessor*) name=${name%.*} ;; esac
        # A member of a package type is no more public than its type.
        owner=${name%%.*}
        if grep -qxF -- "${name##*.}" <<<"$not_public" \
            || { [[ "$name" == *.* ]] && grep -qxF -- "$owner" <<<"$not_public"; }; then
            echo "api-check: $module: $change (package or SPI, not public API)"
        elif grep -qF -- "\`$name" <<<"$allowed"; then
            echo "api-check: $module: $change (listed under Breaking)"
        else
            echo "api-check: $module: $change"
            echo "           not listed under '### Breaking' in CHANGELOG.md's Unreleased section (name \`$name\` there)"
            unlisted=$((unlisted + 1))
        fi
    done < <(grep -v '^/\*' "$report" | grep -v '^$' || true)
done
if [ "$unlisted" -gt 0 ]; then
    echo "api-check: $unlisted breaking change(s) not in the CHANGELOG: list each, or restore the API"
    exit 1
fi
echo "api-check: the public API of ${modules[*]} keeps the baseline (or breaks it only as CHANGELOG.md says)"
