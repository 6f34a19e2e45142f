# The two commands of the README: `make demo` and `make test`. Both install the system
# libraries first when pkg-config cannot find them. `make docs` builds the DocC documentation.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BENCH_RUNS ?= 3
FUZZ_RUNS ?= 1000000
# The bench's peers: websocket-kit is a SwiftPM package of its own (the library never depends on
# it); picows goes into a venv under .build, so the system's Python is untouched.
WEBSOCKETKIT_PEER := Benchmarks/peers/websocket-kit/wsbench-websocketkit
BENCH_VENV := .build/bench/venv
# Where `make docs` writes one .doccarchive per module.
DOCS_DIR := $(CURDIR)/.build/docs
# Swift Testing starts every test at once by default: 220 tests, each with a server
# thread, on a 2-core machine. Eight at a time is as fast and keeps timing honest.
TEST_WIDTH ?= 8
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH := $(TEST_WIDTH)

.PHONY: deps test-deps build demo test test-tsan test-asan fuzz fuzz-quick simulate docs bench bench-alloc bench-w1 bench-w7 bench-w9 bench-w3-crosscheck conformance clean

## deps: install libwebsockets-dev, libssl-dev and zlib1g-dev (Debian/Ubuntu) unless already present
deps:
	@if pkg-config --exists libwebsockets openssl zlib 2>/dev/null; then \
		echo "deps: libwebsockets $$(pkg-config --modversion libwebsockets), openssl $$(pkg-config --modversion openssl), zlib $$(pkg-config --modversion zlib)"; \
	else \
		echo "deps: installing libwebsockets-dev libssl-dev zlib1g-dev pkg-config with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libwebsockets-dev libssl-dev zlib1g-dev pkg-config; \
	fi

## test-deps: the real proxies the proxy tests start (tinyproxy, microsocks), unless present
test-deps: deps
	@if command -v tinyproxy >/dev/null && command -v microsocks >/dev/null; then :; else \
		echo "test-deps: installing tinyproxy microsocks with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq tinyproxy microsocks; \
	fi

build: deps
	$(SWIFT) build

## demo: the SDK against the bundled test server on loopback, then wsdump against it
demo: deps
	$(SWIFT) build --product Demo
	$(SWIFT) build --product TestServer
	$(SWIFT) build --product wsdump
	@echo "== 1. The SDK from Swift (Examples/Demo/main.swift)"
	$(SWIFT) run --skip-build Demo
	@echo
	@echo "== 2. The bundled TestServer as a process, and wsdump talking to it"
	Examples/demo.sh "$$($(SWIFT) build --show-bin-path)"

## test: the whole test suite, 20,000 simulated schedules (wssimulate, debug), a quick Autobahn
## conformance subset (36 cases, each must be OK), then 20,000 fuzzed inputs for each protocol parser
test: test-deps
	$(SWIFT) test
	$(SWIFT) run wssimulate --schedules 20000 --shards 2
	Conformance/conformance.sh quick
	$(MAKE) fuzz-quick

## test-tsan: the suite under ThreadSanitizer (slower: fewer tests at a time; tests that repeat a
## race many times, such as the delivery tests, repeat it fewer times under a sanitizer)
test-tsan: test-deps
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=4 WEBSOCKETSTREAMS_SANITIZED=thread \
		$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

## test-asan: the suite under AddressSanitizer and LeakSanitizer (wsdump and wsbench
## children included); Tests/Sanitizers/lsan-suppressions.txt names the leaks that are
## not ours (Foundation's Process, XCTest's runner).
test-asan: test-deps
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=4 WEBSOCKETSTREAMS_SANITIZED=address ASAN_OPTIONS=detect_leaks=1 \
		LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/lsan-suppressions.txt \
		$(SWIFT) test --sanitize=address --scratch-path .build-asan

## fuzz: libFuzzer under AddressSanitizer on the frame decoder and the handshake parser,
## FUZZ_RUNS inputs each (Fuzz/README.md); fails on any crash or broken invariant
fuzz: deps
	Fuzz/fuzz.sh $(FUZZ_RUNS)

## simulate: SIMULATE_SCHEDULES (1,000,000) deterministic schedules of the client against a
## simulated peer and network, on both cores; prints schedules, time, steps and every invariant
## with how often it was checked (Tests/WebSocketSimulation/README.md). The simulator drives the
## internal ClientEngine (@testable): release with -enable-testing, in a scratch path of its own.
SIMULATE_SCHEDULES ?= 1000000
simulate: deps
	$(SWIFT) build -c release --product wssimulate -Xswiftc -enable-testing --scratch-path .build-simulate
	.build-simulate/release/wssimulate --schedules $(SIMULATE_SCHEDULES) --shards 2

## fuzz-quick: the same with 20000 inputs each, for CI (seconds once built)
fuzz-quick:
	$(MAKE) fuzz FUZZ_RUNS=20000

## docs: the DocC documentation of WebSocketStreams, TaskLifetimes, WebSocketServiceLifecycle and
## WebSocketTestServer (swift-docc-plugin), failing on any docc warning; one archive per module
## lands in .build/docs/<Module>.doccarchive, laid out for static hosting
docs: deps
	$(SWIFT) package --allow-writing-to-directory $(DOCS_DIR) generate-documentation \
		--target WebSocketStreams --target TaskLifetimes --target WebSocketServiceLifecycle \
		--target WebSocketTestServer --output-path $(DOCS_DIR) --warnings-as-errors

## conformance: every Autobahn|Testsuite client case (about an hour); writes CONFORMANCE.md
conformance: deps
	Conformance/conformance.sh full

## bench: wsbench against the raw-C lws client and two peers (websocket-kit, picows), side by
## side; writes BENCHMARKS.md. A peer that does not build or install is left out, and the
## output says so. Then bench-alloc, whose failed check fails bench.
bench: deps
	$(SWIFT) build -c release --product wsbench
	$(SWIFT) build -c release --product TestServer
	mkdir -p .build/bench
	$(CC) -O2 -o .build/bench/wsbench-c Benchmarks/wsbench-c/wsbench-c.c $$(pkg-config --cflags --libs libwebsockets) -lm
	-$(SWIFT) build -c release --package-path $(WEBSOCKETKIT_PEER)
	-test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	-$(BENCH_VENV)/bin/pip install --quiet picows
	-$(BENCH_VENV)/bin/pip install --quiet uvloop
	-$(BENCH_VENV)/bin/pip install --quiet websockets
	python3 Benchmarks/run_benchmarks.py --bin "$$($(SWIFT) build -c release --show-bin-path)" \
		--wsbench-c .build/bench/wsbench-c --runs $(BENCH_RUNS) --out BENCHMARKS.md \
		$$($(BENCH_VENV)/bin/python -c 'import websockets' 2>/dev/null && echo --w9-python $(BENCH_VENV)/bin/python) \
		--peer websocket-kit="$$($(SWIFT) build -c release --package-path $(WEBSOCKETKIT_PEER) --show-bin-path)/wsbench-websocketkit" \
		--peer picows="$(BENCH_VENV)/bin/python Benchmarks/peers/picows/wsbench_picows.py" \
		--peer ours-batches="$$($(SWIFT) build -c release --show-bin-path)/wsbench --batches"
	$(MAKE) bench-alloc

## bench-w7: only the W7 scale runs of bench (ours and raw C, 1,000 and 10,000 connections,
## 20 s and 5 s pings), their section of BENCHMARKS.md replaced
bench-w7: deps
	$(SWIFT) build -c release --product wsbench
	$(SWIFT) build -c release --product TestServer
	mkdir -p .build/bench
	$(CC) -O2 -o .build/bench/wsbench-c Benchmarks/wsbench-c/wsbench-c.c $$(pkg-config --cflags --libs libwebsockets) -lm
	python3 Benchmarks/run_benchmarks.py --bin "$$($(SWIFT) build -c release --show-bin-path)" \
		--wsbench-c .build/bench/wsbench-c --out BENCHMARKS.md --only-w7

## bench-w9: only the W9 runs of bench (talking connections with compression on: ours and python
## websockets' client, 1,000 and 10,000 connections, against TestServer with compression and python
## websockets' server), their section of BENCHMARKS.md replaced
bench-w9: deps
	$(SWIFT) build -c release --product wsbench
	$(SWIFT) build -c release --product TestServer
	mkdir -p .build/bench
	$(CC) -O2 -o .build/bench/wsbench-c Benchmarks/wsbench-c/wsbench-c.c $$(pkg-config --cflags --libs libwebsockets) -lm
	-test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	-$(BENCH_VENV)/bin/pip install --quiet websockets
	python3 Benchmarks/run_benchmarks.py --bin "$$($(SWIFT) build -c release --show-bin-path)" \
		--wsbench-c .build/bench/wsbench-c --out BENCHMARKS.md --only-w9 \
		$$($(BENCH_VENV)/bin/python -c 'import websockets' 2>/dev/null && echo --w9-python $(BENCH_VENV)/bin/python)

## bench-w1: W1 only, in about two minutes: raw C, ours on the default and the loop executor, each
## without and with the latency mode (WebSocketEventLoop.Configuration.lowLatency()), and picows,
## interleaved (BENCH_W1_RUNS rounds), with each one's ratios to raw C and the latency issue's
## targets; its section of BENCHMARKS.md replaced. Take it on a quiet machine (load < 1).
BENCH_W1_RUNS ?= 5
bench-w1: deps
	$(SWIFT) build -c release --product wsbench
	$(SWIFT) build -c release --product TestServer
	mkdir -p .build/bench
	$(CC) -O2 -o .build/bench/wsbench-c Benchmarks/wsbench-c/wsbench-c.c $$(pkg-config --cflags --libs libwebsockets) -lm
	-test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	-$(BENCH_VENV)/bin/python -c 'import picows' 2>/dev/null || $(BENCH_VENV)/bin/pip install --quiet picows uvloop
	python3 Benchmarks/run_benchmarks.py --bin "$$($(SWIFT) build -c release --show-bin-path)" \
		--wsbench-c .build/bench/wsbench-c --runs $(BENCH_W1_RUNS) --out BENCHMARKS.md --only-w1 \
		--peer picows="$(BENCH_VENV)/bin/python Benchmarks/peers/picows/wsbench_picows.py"

## bench-w3-crosscheck: W3 against a plain libwebsockets echo server in C (Benchmarks/echo-server-c)
## instead of TestServer, for ours, ours on the loop executor, raw C and picows: whether a W3
## figure is the client's or the server's
bench-w3-crosscheck: deps
	$(SWIFT) build -c release --product wsbench
	mkdir -p .build/bench
	$(CC) -O2 -o .build/bench/wsbench-c Benchmarks/wsbench-c/wsbench-c.c $$(pkg-config --cflags --libs libwebsockets) -lm
	$(CC) -O2 -o .build/bench/echo-server-c Benchmarks/echo-server-c/echo-server-c.c $$(pkg-config --cflags --libs libwebsockets)
	Benchmarks/echo-server-c/crosscheck.sh "$$($(SWIFT) build -c release --show-bin-path)" .build/bench/wsbench-c \
		.build/bench/echo-server-c "$$(test -x $(BENCH_VENV)/bin/python && echo $(BENCH_VENV)/bin/python)"

## bench-alloc: the allocation and micro benchmarks (Benchmarks/Allocations, a package of its
## own on ordo-one/benchmark): mallocs and time per message to encode, decode, mask, inflate,
## validate UTF-8 and echo over loopback; fails when a malloc count is above its threshold in
## Benchmarks/Allocations/Thresholds
bench-alloc: deps
	SWIFT="$(SWIFT)" Benchmarks/Allocations/check-thresholds.sh

clean:
	rm -rf .build .build-tsan .build-asan Benchmarks/Allocations/.build
