// swift-tools-version:6.0
import PackageDescription

// bench/client's program: the client library (`RelayClient`) driven as an app drives it,
// next to curl through the same relay. Unlike relaybench it links the repository's code,
// since that code is what it measures; it builds only when the main package does.
//
// A package found by path is named by its directory, which is whatever the checkout is
// called: this manifest sits at <root>/bench/ClientBench/Package.swift.
let rootIdentity = String(#filePath.split(separator: "/").dropLast(3).last!).lowercased()

let package = Package(
    name: "clientbench",
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(
            name: "clientbench",
            dependencies: [.product(name: "RelayClient", package: rootIdentity),
                           .product(name: "RelayCore", package: rootIdentity)],
            path: "Sources/clientbench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
