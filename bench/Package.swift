// swift-tools-version:6.0
import PackageDescription

// The load generator and upstream for bench/run and bench/auth. Deliberately independent of
// the main package: it must build and measure the peers (squid, haproxy, direct) even while
// dynrelay itself does not build.
let package = Package(
    name: "relaybench",
    targets: [
        .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
        // The auth clients of `rate --auth`: MD5/SHA-256/MD4 for Digest and NTLM, GSS-API
        // for Negotiate.
        .systemLibrary(name: "CBenchOpenSSL", path: "Sources/CBenchOpenSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),
        // No pkgConfig: krb5-gssapi.pc adds -isystem, which SwiftPM refuses for a system
        // library; the headers are in /usr/include/gssapi and the module map links the library.
        .systemLibrary(name: "CBenchGSSAPI", path: "Sources/CBenchGSSAPI", providers: [.apt(["libkrb5-dev"])]),
        .executableTarget(
            name: "relaybench",
            dependencies: ["CEpoll", "CBenchOpenSSL", "CBenchGSSAPI"],
            path: "Sources/relaybench"
        ),
    ]
)
