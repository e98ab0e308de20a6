// swift-tools-version:6.2
import PackageDescription

// Layers, arrows pointing down only (see ../shared/DESIGN.md):
//   dynrelay → RelayServer → RelayClient → RelayIO → RelayCore → CRelayShims → system libraries
let package = Package(
    name: "dynrelay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "dynrelay", targets: ["dynrelay"]),
        .library(name: "RelayClient", targets: ["RelayClient"]),
        // For fuzz/, whose targets link RelayCore built with the fuzzer flags.
        .library(name: "RelayCore", targets: ["RelayCore"]),
    ],
    targets: [
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CGSSAPI", pkgConfig: "krb5-gssapi", providers: [.apt(["libkrb5-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .target(name: "CRelayShims"),
        .target(name: "RelayCore", dependencies: ["CRelayShims", "COpenSSL"]),
        .target(name: "RelayIO", dependencies: ["CRelayShims"]),
        .target(name: "RelayClient", dependencies: ["RelayCore", "RelayIO"]),
        .target(name: "RelayServer", dependencies: ["RelayCore", "RelayIO", "CSQLite", "CSystemd", "COpenSSL", "CGSSAPI"]),
        .executableTarget(name: "dynrelay", dependencies: ["RelayServer"]),
        // The throwaway MIT KDC (ENGINEERING.md trap 9), shared by the server and integration tests.
        .target(name: "KerberosTestSupport", path: "Tests/KerberosTestSupport"),
        // Another process's SQLite write lock, shared by the server and integration tests.
        .target(name: "SQLiteTestSupport", dependencies: ["CSQLite"], path: "Tests/SQLiteTestSupport"),
        .testTarget(name: "RelayCoreTests", dependencies: ["RelayCore"]),
        .testTarget(name: "RelayIOTests", dependencies: ["RelayIO"]),
        .testTarget(name: "RelayServerTests", dependencies: ["RelayServer", "RelayCore", "CSQLite", "CGSSAPI", "KerberosTestSupport", "SQLiteTestSupport"]),
        .testTarget(name: "RelayClientTests", dependencies: ["RelayClient"]),
        .testTarget(name: "IntegrationTests", dependencies: ["dynrelay", "RelayClient", "RelayCore", "CSQLite", "KerberosTestSupport", "SQLiteTestSupport"]),
    ]
)
