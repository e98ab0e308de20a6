// swift-tools-version:6.2
import PackageDescription

/// The coverage-guided fuzz targets, one executable each, built apart from the root package
/// because every target of a build gets the fuzzer and address-sanitizer flags:
///
///     swift build -c release --package-path fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
///
/// `fuzz/run SECONDS` builds and runs them all (docs/fuzzing.md).
let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
    ("FuzzRequestHead", []),
    ("FuzzResponseHead", []),
    ("FuzzChunkedBody", []),
    ("FuzzConfig", []),
    ("FuzzHostNormalizer", []),
    ("FuzzAuthorization", []),
    ("FuzzNTLM", []),
    ("FuzzSPNEGO", []),
    ("FuzzConnectHandshake", [.product(name: "RelayClient", package: "dynrelay")]),
    ("FuzzProxySession", []),
    ("FuzzHelperReply", []),
    ("FuzzTLSHandshake", []),
]

let package = Package(
    name: "dynrelay-fuzz",
    dependencies: [.package(name: "dynrelay", path: "..")],
    targets: [
        // libFuzzer's driver entry point, which it ships no header for.
        .target(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", .product(name: "RelayCore", package: "dynrelay")]),
    ] + fuzzTargets.map { target in
        .executableTarget(name: target.name,
                          dependencies: ["FuzzSupport", .product(name: "RelayCore", package: "dynrelay")] + target.dependencies)
    }
)
