// swift-tools-version: 6.0
import PackageDescription

/// Settings every Swift target shares: Swift 6 mode comes from the tools version;
/// these upcoming features keep existentials explicit and imports honest.
let sharedSwiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "WebSocketStreams",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "WebSocketStreams", targets: ["WebSocketStreams"]),
        .library(name: "TaskLifetimes", targets: ["TaskLifetimes"]),
        .library(name: "WebSocketTestServer", targets: ["WebSocketTestServer"]),
        .library(name: "WebSocketServiceLifecycle", targets: ["WebSocketServiceLifecycle"]),
        // Not API: the codec hooks the allocation benchmarks (Benchmarks/Allocations) link.
        .library(name: "WebSocketStreamsBenchmarkHooks", targets: ["WebSocketStreamsBenchmarkHooks"]),
        .executable(name: "TestServer", targets: ["TestServer"]),
        .executable(name: "wsdump", targets: ["wsdump"]),
        .executable(name: "wsbench", targets: ["wsbench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev", "libssl-dev", "zlib1g-dev"])]
        ),
        // zlib alone, for WebSocketCore's permessage-deflate: the codec reaches no other C.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // The codec: frames, messages, the opening handshake's bytes, permessage-deflate, the
        // URL and proxy parsers. Pure values, no I/O, no libwebsockets, no OpenSSL (SHA-1 and
        // randomness come from the caller). Its API is `package`: the client, the test server,
        // the fuzzers and the benchmark hooks use it.
        .target(
            name: "WebSocketCore",
            dependencies: ["CZlib"],
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "SynchronizationSupport",
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "LibWebSocketsLoop",
            dependencies: [
                "CLibWebSockets",
                "SynchronizationSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "WebSocketStreams",
            dependencies: [
                "CLibWebSockets",
                "LibWebSocketsLoop",
                "SynchronizationSupport",
                "WebSocketCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "WebSocketStreamsBenchmarkHooks",
            dependencies: ["WebSocketStreams", "WebSocketCore"],
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "TaskLifetimes",
            dependencies: ["SynchronizationSupport"],
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "WebSocketServiceLifecycle",
            dependencies: [
                "WebSocketStreams",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: sharedSwiftSettings
        ),
        .executableTarget(
            name: "WebSocketServiceExample",
            dependencies: [
                "WebSocketServiceLifecycle",
                "WebSocketStreams",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/WebSocketServiceExample",
            swiftSettings: sharedSwiftSettings
        ),
        .executableTarget(
            name: "TaskLifetimesExamples",
            dependencies: ["TaskLifetimes"],
            path: "Examples/TaskLifetimesExamples",
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "WebSocketTestServer",
            dependencies: [
                "CLibWebSockets",
                "LibWebSocketsLoop",
                "SynchronizationSupport",
                "WebSocketCore",
                "WebSocketStreams",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            path: "TestServer/WebSocketTestServer",
            swiftSettings: sharedSwiftSettings
        ),
        .executableTarget(
            name: "TestServer",
            dependencies: [
                "WebSocketTestServer",
                "SynchronizationSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "TestServer/TestServer",
            swiftSettings: sharedSwiftSettings
        ),
        .executableTarget(
            name: "Demo",
            dependencies: [
                "WebSocketStreams", "WebSocketTestServer",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            path: "Examples/Demo",
            swiftSettings: sharedSwiftSettings
        ),
        .executableTarget(
            name: "wsdump",
            dependencies: [
                "WebSocketStreams",
                "SynchronizationSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: sharedSwiftSettings
        ),
        .executableTarget(
            name: "wssoak",
            dependencies: [
                "WebSocketStreams",
                "WebSocketTestServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            path: "Tools/Soak",
            swiftSettings: sharedSwiftSettings
        ),
        .target(
            name: "BenchmarkKit",
            path: "Benchmarks/BenchmarkKit",
            swiftSettings: sharedSwiftSettings
        ),
        .executableTarget(
            name: "wsbench",
            dependencies: [
                "WebSocketStreams",
                "BenchmarkKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/wsbench",
            swiftSettings: sharedSwiftSettings
        ),
        .testTarget(
            name: "WebSocketStreamsTests",
            dependencies: [
                "WebSocketStreams", "WebSocketCore", "WebSocketTestServer", "LibWebSocketsLoop", "CLibWebSockets",
                "SynchronizationSupport", "TaskLifetimes",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: sharedSwiftSettings
        ),
        .testTarget(
            name: "WebSocketCoreTests",
            // WebSocketStreams and the test server for what the codec's tests compare with:
            // the public close codes and errors the codec's values map to, OpenSSL's SHA-1,
            // the seeded generator.
            dependencies: ["WebSocketCore", "WebSocketStreams", "WebSocketTestServer"],
            swiftSettings: sharedSwiftSettings
        ),
        .testTarget(
            name: "WSDumpTests",
            dependencies: ["wsdump", "WebSocketStreams", "WebSocketTestServer", "LibWebSocketsLoop", "SynchronizationSupport"],
            // Read by path (#filePath), not bundled.
            exclude: ["Fixtures"],
            swiftSettings: sharedSwiftSettings
        ),
        .testTarget(
            name: "WSBenchTests",
            dependencies: ["wsbench", "BenchmarkKit", "WebSocketTestServer"],
            swiftSettings: sharedSwiftSettings
        ),
        .testTarget(
            name: "WebSocketServiceLifecycleTests",
            dependencies: [
                "WebSocketServiceLifecycle", "WebSocketServiceExample", "WebSocketStreams", "WebSocketTestServer",
                "SynchronizationSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: sharedSwiftSettings
        ),
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "WebSocketStreams", "TaskLifetimes", "WebSocketServiceLifecycle", "WebSocketTestServer", "wsdump",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: sharedSwiftSettings
        ),
        .testTarget(
            name: "TaskLifetimesTests",
            dependencies: ["TaskLifetimes", "SynchronizationSupport"],
            swiftSettings: sharedSwiftSettings
        ),
    ]
)
