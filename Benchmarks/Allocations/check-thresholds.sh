#!/bin/sh
# `make bench-alloc`: builds and runs the allocation benchmarks (release), prints their
# figures per message, then runs them again and checks each one's malloc count (p90 per
# iteration of 1,000 messages) against its value in Thresholds/, give or take the
# tolerance the benchmark sets (none for the codec). Exits 1 when a count is above that,
# when the benchmarks fail to build or run, or when no stored value was found.
#
# benchmark's `thresholds check` treats a count below its stored value as a deviation too
# ("BETTER than the defined thresholds") and exits non-zero for it; here that passes, with
# a note that the threshold could come down.
set -u
cd "$(dirname "$0")"
SWIFT=${SWIFT:-swift}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The figures, per message (the scaled rows, marked *), nanoseconds for time.
"$SWIFT" package benchmark --no-progress --time-units nanoseconds || {
    echo "bench-alloc: FAILED: the benchmarks did not build or run"
    exit 1
}
# The check: a run of its own, each malloc count's p90 against its threshold.
"$SWIFT" package benchmark thresholds check --path Thresholds --no-progress >"$log" 2>&1
status=$?
cat "$log"

if grep -q "is WORSE than the defined thresholds" "$log"; then
    echo "bench-alloc: FAILED: a malloc count is above its threshold (the table above says which)"
    exit 1
fi
if [ "$status" -eq 0 ] && grep -q "is EQUAL to the defined thresholds" "$log"; then
    echo "bench-alloc: every malloc count is at its threshold"
    exit 0
fi
if grep -q "is BETTER than the defined thresholds" "$log"; then
    echo "bench-alloc: no malloc count above its threshold (some below it: the threshold could come down)"
    exit 0
fi
echo "bench-alloc: FAILED: the benchmarks did not build, run or check (exit status $status)"
exit 1
