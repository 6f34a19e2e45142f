// swift-tools-version: 6.1
import PackageDescription

// The allocation and micro benchmarks of WebSocketStreams (`make bench-alloc`), in a
// package of their own so the library's users never resolve or build ordo-one/benchmark.
// The benchmark plugin finds benchmark targets under this package's `Benchmarks/` folder;
// their expected malloc counts, checked on every run, are in `Thresholds/`.
let package = Package(
    name: "WebSocketStreamsAllocations",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, because a path package is otherwise known by its folder's name (a clone may be called anything).
        .package(name: "WebSocketStreams", path: "../.."),
        // Only the malloc interposer: the Swift-runtime interposer the default traits add
        // on Linux with Swift 6.3 is not needed (no ARC metrics here).
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CodecAllocations",
            dependencies: [
                .product(name: "WebSocketStreams", package: "WebSocketStreams"),
                .product(name: "WebSocketStreamsBenchmarkHooks", package: "WebSocketStreams"),
                .product(name: "WebSocketTestServer", package: "WebSocketStreams"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CodecAllocations",
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
    ]
)
