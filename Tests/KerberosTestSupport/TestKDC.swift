import Foundation
import Glibc

/// A throwaway MIT Kerberos realm, `EXAMPLE.TEST`, with a KDC on an ephemeral loopback
/// port, started without root: the user `alice` (password `secret`, already logged in
/// through `kinit`), the relay's service key `HTTP/127.0.0.1` in `keytabPath`, and a second
/// service `HTTP/other.example.test` whose key is only in `otherKeytabPath`.
///
/// `HTTP/127.0.0.1` is what `curl -x http://127.0.0.1:PORT --proxy-negotiate -U :` asks
/// for under this krb5.conf: curl imports the host-based name `HTTP@127.0.0.1`; with
/// `rdns = false` MIT keeps the numeric host as the instance (under MIT's default,
/// `rdns = true`, it would reverse-resolve to `HTTP/localhost`) and reaches `EXAMPLE.TEST`
/// through the referral realm.
///
/// A target of its own so the server tests and the integration tests share one fixture. Children (curl, `dynrelay`, `kvno`) get the realm through
/// `environment`; a process's own krb5 library needs those variables set before it builds
/// a krb5 context. `stop()` (also run on deinit) ends the KDC with SIGTERM and removes the
/// directory.
public final class TestKDC: @unchecked Sendable {  // immutable after init apart from `kdc`, which only init and stop() touch
    public static let realm = "EXAMPLE.TEST"
    public static let user = "alice"
    public static let userPrincipal = "alice@EXAMPLE.TEST"
    public static let userPassword = "secret"
    /// The principal curl requests for a proxy given as `127.0.0.1`.
    public static let servicePrincipal = "HTTP/127.0.0.1@EXAMPLE.TEST"
    /// The host-based form of `servicePrincipal`, as GSS initiators (curl) name it.
    public static let serviceHostBased = "HTTP@127.0.0.1"
    /// A real service of the realm whose key the relay does not hold.
    public static let otherServicePrincipal = "HTTP/other.example.test@EXAMPLE.TEST"

    /// The realm's private directory; everything the fixture writes lives here.
    public let directory: String
    /// The KDC's TCP (and UDP) port on 127.0.0.1.
    public let port: UInt16
    /// The keytab holding `servicePrincipal`'s keys.
    public let keytabPath: String
    /// A keytab holding only `otherServicePrincipal`'s keys.
    public let otherKeytabPath: String
    /// `FILE:` credential cache with alice's TGT.
    public let credentialCache: String
    public let krb5ConfigPath: String
    public let kdcProfilePath: String
    private var kdc: TestDaemon?

    /// What a child needs to use this realm: krb5.conf, the KDC profile, alice's ticket
    /// cache, the relay keytab as the default keytab, and a private replay-cache directory.
    public var environment: [String: String] {
        [
            "KRB5_CONFIG": krb5ConfigPath,
            "KRB5_KDC_PROFILE": kdcProfilePath,
            "KRB5CCNAME": credentialCache,
            "KRB5_KTNAME": "FILE:" + keytabPath,
            "KRB5RCACHEDIR": directory,
        ]
    }

    /// Creates the realm, starts the KDC and logs alice in. About a second.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("test-kdc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try TestKDC.freeLoopbackPort()
        keytabPath = directory + "/http.keytab"
        otherKeytabPath = directory + "/other.keytab"
        credentialCache = "FILE:" + directory + "/ccache"
        krb5ConfigPath = directory + "/krb5.conf"
        kdcProfilePath = directory + "/kdc.conf"
        do {
            try writeConfiguration()
            try run("kdb5_util", ["create", "-s", "-P", "master-\(UUID().uuidString)", "-r", TestKDC.realm])
            try kadmin("addprinc -pw \(TestKDC.userPassword) \(TestKDC.user)")
            try kadmin("addprinc -randkey \(TestKDC.servicePrincipal)")
            try kadmin("addprinc -randkey \(TestKDC.otherServicePrincipal)")
            try kadmin("ktadd -k \(keytabPath) \(TestKDC.servicePrincipal)")
            try kadmin("ktadd -k \(otherKeytabPath) \(TestKDC.otherServicePrincipal)")
            try startKDC()
            try run("kinit", [TestKDC.userPrincipal], input: TestKDC.userPassword + "\n")
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Stops the KDC (SIGTERM, then SIGKILL after 5 s) and deletes the realm's files.
    public func stop() {
        kdc?.stop()
        kdc = nil
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The KDC's log, for failure messages.
    public var kdcLog: String { (try? String(contentsOfFile: directory + "/kdc.log", encoding: .utf8)) ?? "" }

    /// Runs a realm tool (`kvno`, `klist`, curl…) with `environment`; throws on a non-zero exit.
    @discardableResult
    public func run(_ tool: String, _ arguments: [String], input: String? = nil,
             extraEnvironment: [String: String] = [:], timeout: Double = 30) throws -> (stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try TestKDC.locate(tool))
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment
            .merging(environment) { _, new in new }
            .merging(extraEnvironment) { _, new in new }
        // Files, not pipes: a child that fills a pipe nobody reads would hang the test.
        let outPath = directory + "/.\(tool)-\(UUID().uuidString).out"
        let errPath = outPath + ".err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outPath); try? FileManager.default.removeItem(atPath: errPath) }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        try? out.close()
        try? err.close()
        if let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestKDCError("\(tool) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
        }
        process.waitUntilExit()
        let stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else {
            throw TestKDCError("\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(stderr)\(stdout)")
        }
        return (stdout, stderr)
    }

    private func kadmin(_ query: String) throws {
        try run("kadmin.local", ["-r", TestKDC.realm, "-q", query])
    }

    private func writeConfiguration() throws {
        // udp_preference_limit = 1 sends every request over TCP, which is what the
        // readiness probe checks; rdns = false keeps 127.0.0.1 from becoming "localhost".
        let krb5 = """
            [libdefaults]
                default_realm = \(TestKDC.realm)
                dns_lookup_kdc = false
                dns_lookup_realm = false
                rdns = false
                udp_preference_limit = 1
                ticket_lifetime = 1h
            [realms]
                \(TestKDC.realm) = {
                    kdc = 127.0.0.1:\(port)
                }

            """
        let kdc = """
            [kdcdefaults]
                kdc_listen = 127.0.0.1:\(port)
                kdc_tcp_listen = 127.0.0.1:\(port)
            [realms]
                \(TestKDC.realm) = {
                    database_name = \(directory)/principal
                    key_stash_file = \(directory)/stash
                    acl_file = \(directory)/kadm5.acl
                    kdc_listen = 127.0.0.1:\(port)
                    kdc_tcp_listen = 127.0.0.1:\(port)
                }
            [logging]
                kdc = FILE:\(directory)/kdc.log
                admin_server = FILE:\(directory)/kadmin.log
                default = FILE:\(directory)/krb5.log

            """
        try krb5.write(toFile: krb5ConfigPath, atomically: true, encoding: .utf8)
        try kdc.write(toFile: kdcProfilePath, atomically: true, encoding: .utf8)
    }

    private func startKDC() throws {
        let daemon = try TestDaemon(
            try TestKDC.locate("krb5kdc"), ["-n", "-r", TestKDC.realm, "-P", directory + "/kdc.pid"],
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
        kdc = daemon
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if daemon.hasExited { throw TestKDCError("krb5kdc exited: \(kdcLog)") }
            if TestKDC.acceptsTCP(port: port) { return }
            usleep(20_000)
        }
        throw TestKDCError("krb5kdc did not listen on 127.0.0.1:\(port) within 10 s: \(kdcLog)")
    }

    private static func locate(_ tool: String) throws -> String {
        for directory in ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"] {
            let path = directory + "/" + tool
            if access(path, X_OK) == 0 { return path }
        }
        throw TestKDCError("\(tool) is not installed (MIT krb5: krb5-kdc, krb5-admin-server, krb5-user)")
    }

    /// A port the kernel just handed out on 127.0.0.1; free again by the time it returns,
    /// and unlikely to be handed out again within the second the KDC needs to bind it.
    private static func freeLoopbackPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestKDCError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw TestKDCError("bind: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func acceptsTCP(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

/// A realm that could not be set up, with the tool's own words.
public struct TestKDCError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
