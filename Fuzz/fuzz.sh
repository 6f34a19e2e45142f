#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ with AddressSanitizer and runs each on RUNS inputs.
#
#   Fuzz/fuzz.sh [RUNS]          (from anywhere; RUNS defaults to 1000000)
#
# WebSocketCore (Sources/WebSocketCore, every file of it) is compiled once with swiftc into
# .build/fuzz/core/, instrumented; each target is its entry file and FuzzSupport.swift, which
# import that module, linked with it into .build/fuzz/. The committed
# seeds in Fuzz/corpus/<target> are read; new inputs go to .build/fuzz/corpus/<target>,
# crashes to .build/fuzz/artifacts/<target>/. Reproducers of fixed crashes in
# Fuzz/regressions/<target>/ run first. Exits non-zero when any target crashes.
#
# Environment: FUZZ_MAX_LEN (default 4096), FUZZ_JOBS_LOCK (a file to flock around each
# compile, for machines where builds must not overlap), SWIFTC.
set -euo pipefail

runs=${1:-1000000}
max_len=${FUZZ_MAX_LEN:-4096}
swiftc=${SWIFTC:-swiftc}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.build/fuzz
core=$out/core
core_sources=$root/Sources/WebSocketCore

# Header search path of zlib, as the system-library target gets it from pkg-config.
c_includes=()
for flag in $(pkg-config --cflags-only-I zlib 2>/dev/null); do
    c_includes+=(-Xcc "$flag")
done
# The entry files take SHA-1 from OpenSSL, as the client does (FuzzSupport.swift's `sha1`),
# through the C module the client uses.
openssl=(-I "$root/Sources/CLibWebSockets")
for flag in $(pkg-config --cflags-only-I libwebsockets openssl 2>/dev/null); do
    openssl+=(-Xcc "$flag")
done
common=(
    -sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
    -package-name WebSocketStreamsFuzz -Xcc "-fmodule-map-file=$root/Sources/CZlib/module.modulemap" "${c_includes[@]}"
)

# Runs a compile, under FUZZ_JOBS_LOCK when given.
compile() {
    if [[ -n ${FUZZ_JOBS_LOCK:-} ]]; then
        flock "$FUZZ_JOBS_LOCK" "$@"
    else
        "$@"
    fi
}

# WebSocketCore as one module: its interface for the entry files, one object to link.
build_core() {
    local sources
    mapfile -t sources < <(find "$core_sources" -name '*.swift' | sort)
    mkdir -p "$core"
    if [[ -f $core/WebSocketCore.o ]] && [[ -z $(find "${sources[@]}" "$0" -newer "$core/WebSocketCore.o" 2>/dev/null) ]]; then
        echo "fuzz: WebSocketCore is up to date"
        return
    fi
    echo "fuzz: building WebSocketCore (${#sources[@]} files)"
    local started=$SECONDS
    compile "$swiftc" "${common[@]}" -module-name WebSocketCore -whole-module-optimization \
        -emit-module -emit-module-path "$core/WebSocketCore.swiftmodule" \
        -emit-object -o "$core/WebSocketCore.o" "${sources[@]}"
    echo "fuzz: built WebSocketCore in $((SECONDS - started)) s"
}

build() {
    local target=$1 entry=$2
    local binary=$out/$target-fuzzer
    local sources=("$root/Fuzz/$entry" "$root/Fuzz/FuzzSupport.swift")
    if [[ -x $binary ]] && [[ -z $(find "${sources[@]}" "$core/WebSocketCore.o" "$0" -newer "$binary" 2>/dev/null) ]]; then
        echo "fuzz: $target-fuzzer is up to date"
        return
    fi
    echo "fuzz: building $target-fuzzer"
    local started=$SECONDS
    compile "$swiftc" "${common[@]}" -module-name "${target^}Fuzzer" -I "$core" "${openssl[@]}" \
        -use-ld=lld -o "$binary" "${sources[@]}" "$core/WebSocketCore.o" -lz
    echo "fuzz: built $target-fuzzer in $((SECONDS - started)) s"
}

# Runs one target; prints its final statistics and returns libFuzzer's status.
run() {
    local target=$1
    local binary=$out/$target-fuzzer log=$out/$target.log
    local corpus=$out/corpus/$target artifacts=$out/artifacts/$target/
    local options=(-max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                   -artifact_prefix="$artifacts")
    [[ -f $root/Fuzz/$target.dict ]] && options+=(-dict="$root/Fuzz/$target.dict")
    mkdir -p "$corpus" "$artifacts"
    # The Swift runtime's own crash reporter would wait on the crashed process; libFuzzer
    # and ASan print the stack instead.
    export SWIFT_BACKTRACE=enable=no
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}

    local regressions=("$root"/Fuzz/regressions/"$target"/*)
    if [[ -e ${regressions[0]} ]]; then
        echo "fuzz: $target: ${#regressions[@]} regression input(s)"
        if ! "$binary" "${options[@]}" "${regressions[@]}" >"$log" 2>&1; then
            tail -n 60 "$log"
            echo "fuzz: $target: a regression input fails again (log: $log)"
            return 1
        fi
    fi

    echo "fuzz: $target: $runs runs (log: $log)"
    local started=$SECONDS status=0
    "$binary" "${options[@]}" -runs="$runs" "$corpus" "$root/Fuzz/corpus/$target" >"$log" 2>&1 || status=$?
    local elapsed=$((SECONDS - started))
    if [[ $status -ne 0 ]]; then
        tail -n 80 "$log"
        echo "fuzz: $target: FAILED (exit $status) after $elapsed s; reproducer in $artifacts"
        return "$status"
    fi
    grep -E '^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|^stat::' "$log" | sed "s/^/  $target: /"
    echo "fuzz: $target: $runs runs passed in $elapsed s"
}

mkdir -p "$out"
build_core
build frames FramesFuzzer.swift
build handshake HandshakeFuzzer.swift
build proxy ProxyFuzzer.swift
failed=0
run frames || failed=1
run handshake || failed=1
run proxy || failed=1
exit $failed
