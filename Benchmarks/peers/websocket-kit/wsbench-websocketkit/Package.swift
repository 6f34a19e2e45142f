// swift-tools-version: 6.0
import PackageDescription

// A peer client for `make bench`: the workloads of wsbench / wsbench-c written on
// vapor/websocket-kit (SwiftNIO). A package of its own, so WebSocketStreams itself never
// depends on websocket-kit or SwiftNIO. Built by the Makefile's `bench` target:
//   swift build -c release --package-path Benchmarks/peers/websocket-kit
let package = Package(
    name: "wsbench-websocketkit",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "wsbench-websocketkit", targets: ["wsbench-websocketkit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/vapor/websocket-kit.git", from: "2.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .executableTarget(
            name: "wsbench-websocketkit",
            dependencies: [
                .product(name: "WebSocketKit", package: "websocket-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ]
)
