// swift-tools-version:6.0
import PackageDescription

// The load generator and upstream for bench/run. Deliberately independent of the main
// package: it must build and measure the peers (squid, haproxy, direct) even while
// dynrelay itself does not build.
let package = Package(
    name: "relaybench",
    targets: [
        .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
        .executableTarget(
            name: "relaybench",
            dependencies: ["CEpoll"],
            path: "Sources/relaybench"
        ),
    ]
)
