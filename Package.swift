// swift-tools-version:6.2
import PackageDescription

// Each target imports only what it declares, and the arrows point down only:
//   dynrelay     → RelayServer, RelayCore
//   dynrelay-client → RelayClient, RelayCore   (the client library as a command)
//   example-*    → RelayClient, RelayCore   (Examples/: the client guide's programs)
//   RelayServer  → RelayIO, RelayCore, CSQLite, CSystemd, CGSSAPI
//   RelayClient  → RelayIO, RelayCore, CGSSAPI
//   RelayIO      → CRelayShims, COpenSSL   (event loops, sockets, splice, TLS streams, child processes;
//                                           no HTTP, no auth)
//   RelayCore    → COpenSSL      (pure logic: parsing, auth state machines, policy, audit model)
let package = Package(
    name: "dynrelay",
    platforms: [.macOS(.v15)],
    products: [
        // For bench/AuditBench, which times the audit trail's writer on its own.
        .library(name: "RelayServer", targets: ["RelayServer"]),
        .executable(name: "dynrelay", targets: ["dynrelay"]),
        .executable(name: "dynrelay-client", targets: ["dynrelay-client"]),
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
        .target(name: "RelayCore", dependencies: ["COpenSSL"]),
        .target(name: "RelayIO", dependencies: ["CRelayShims", "COpenSSL"]),
        .target(name: "RelayClient", dependencies: ["RelayCore", "RelayIO", "CGSSAPI"]),
        .target(name: "RelayServer", dependencies: ["RelayCore", "RelayIO", "CSQLite", "CSystemd", "CGSSAPI"]),
        .executableTarget(name: "dynrelay", dependencies: ["RelayServer", "RelayCore", "RelayIO"]),
        // The client library as a command: built on RelayClient alone.
        .executableTarget(name: "dynrelay-client", dependencies: ["RelayClient", "RelayCore"]),
        // The client guide's examples (docs/clients.md embeds each file verbatim; ClientExampleTests
        // runs each against the real relay), one self-contained program per API.
        .executableTarget(name: "example-relay-tunnel", dependencies: ["RelayClient", "RelayCore"], path: "Examples/RelayTunnel"),
        .executableTarget(name: "example-tunnel-socket", dependencies: ["RelayClient", "RelayCore"], path: "Examples/TunnelSocket"),
        .executableTarget(name: "example-http-client", dependencies: ["RelayClient", "RelayCore"], path: "Examples/HTTPClient"),
        .executableTarget(name: "example-http-request", dependencies: ["RelayClient", "RelayCore"], path: "Examples/HTTPRequest"),
        .executableTarget(name: "example-relay-infrastructure", dependencies: ["RelayClient", "RelayCore"],
                          path: "Examples/RelayInfrastructure"),
        // URLSession alone (FoundationNetworking on Linux): how apps that keep it reach the relay.
        .executableTarget(name: "example-urlsession", path: "Examples/URLSession"),
        // A throwaway MIT KDC on a loopback port, shared by the server and integration tests.
        .target(name: "KerberosTestSupport", path: "Tests/KerberosTestSupport"),
        // Another process's SQLite write lock, shared by the server and integration tests.
        .target(name: "SQLiteTestSupport", dependencies: ["CSQLite"], path: "Tests/SQLiteTestSupport"),
        .testTarget(name: "RelayCoreTests", dependencies: ["RelayCore"]),
        .testTarget(name: "RelayIOTests", dependencies: ["RelayIO"]),
        .testTarget(name: "RelayServerTests", dependencies: ["RelayServer", "RelayClient", "RelayCore", "RelayIO", "CSQLite", "CGSSAPI", "KerberosTestSupport", "SQLiteTestSupport"]),
        .testTarget(name: "RelayClientTests", dependencies: ["RelayClient"]),
        // `dynrelay` is a dependency so that the binary the tests start is built first.
        .testTarget(name: "IntegrationTests", dependencies: ["dynrelay", "dynrelay-client", "example-relay-tunnel",
                                                             "example-tunnel-socket", "example-http-client", "example-http-request",
                                                             "example-relay-infrastructure", "example-urlsession", "RelayClient", "RelayCore", "COpenSSL", "CSQLite", "KerberosTestSupport", "SQLiteTestSupport"]),
    ]
)
