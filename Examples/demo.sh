#!/usr/bin/env bash
# `make demo`, part 2: the bundled TestServer as a process and wsdump against it.
#
# Starts TestServer on a free loopback port (and a Unix domain socket), pipes two text
# lines and a small binary file through `wsdump -v` to its echo route, shows what went
# out, what came back and how the connection closed, then one line over the Unix socket;
# stops the server (by its PID) and exits with wsdump's status (0 after a normal close).
set -euo pipefail

bin="${1:?usage: demo.sh BIN_DIR}"
work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

"$bin/TestServer" --host 127.0.0.1 --port 0 --port-file "$work/port" --unix-socket "$work/ts.sock" > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
    [[ -s "$work/port" ]] && break
    sleep 0.05
done
[[ -s "$work/port" ]] || { echo "demo: TestServer did not start"; cat "$work/server.log"; exit 1; }
url="ws://127.0.0.1:$(cat "$work/port")/echo"

printf '\xde\xad\xbe\xef\x00\x01\x02\x03' > "$work/demo.bin"
echo "\$ printf 'hello from wsdump\\n{\"n\": 1}\\n' | wsdump -v --hex --file demo.bin --eof-wait 1 $url"
status=0
printf 'hello from wsdump\n{"n": 1}\n' | "$bin/wsdump" -v --hex --file "$work/demo.bin" --eof-wait 1 "$url" 2>&1 || status=$?
echo "wsdump exited with $status"
[[ "$status" == 0 ]] || exit "$status"

echo
echo "\$ echo 'over a Unix domain socket' | wsdump --eof-wait 1 ws+unix://$work/ts.sock:/echo"
echo 'over a Unix domain socket' | "$bin/wsdump" --eof-wait 1 "ws+unix://$work/ts.sock:/echo" 2>&1 || status=$?
echo "wsdump exited with $status"
[[ "$status" == 0 ]] || exit "$status"

# Through a SOCKS5 proxy named by the environment, when microsocks is installed (make test
# installs it); wsdump honours all_proxy as curl does.
if command -v microsocks > /dev/null; then
    socks_port=$(( 20000 + RANDOM % 20000 ))
    microsocks -i 127.0.0.1 -p "$socks_port" > /dev/null 2>&1 &
    socks_pid=$!
    for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$socks_port") 2>/dev/null && break; sleep 0.02; done
    echo
    echo "\$ echo 'through a SOCKS5 proxy' | all_proxy=socks5h://127.0.0.1:$socks_port wsdump --eof-wait 1 $url"
    echo 'through a SOCKS5 proxy' | all_proxy="socks5h://127.0.0.1:$socks_port" "$bin/wsdump" --eof-wait 1 "$url" 2>&1 || status=$?
    kill -9 "$socks_pid" 2>/dev/null || true
    wait "$socks_pid" 2>/dev/null || true
    echo "wsdump exited with $status"
fi
exit "$status"
