// swift-tools-version:6.0
import PackageDescription

// bench/audit's program: the audit trail's writer (`AuditLog`) timed on its own, next to
// plain SQLite inserts of rows of the same shape. Unlike relaybench it links the relay's
// code, since the writer is what it measures; it builds only when the main package does.
//
// A package found by path is named by its directory, which is whatever the checkout is
// called: this manifest sits at <root>/bench/AuditBench/Package.swift.
let rootIdentity = String(#filePath.split(separator: "/").dropLast(3).last!).lowercased()

let package = Package(
    name: "auditbench",
    dependencies: [.package(path: "../..")],
    targets: [
        // In C: the floor is SQLite with nothing of ours around it.
        .target(name: "CSQLiteBaseline", path: "Sources/CSQLiteBaseline",
                linkerSettings: [.linkedLibrary("sqlite3")]),
        .executableTarget(
            name: "auditbench",
            dependencies: [.product(name: "RelayServer", package: rootIdentity), "CSQLiteBaseline"],
            path: "Sources/auditbench"
        ),
    ]
)
