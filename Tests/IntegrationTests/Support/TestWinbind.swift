import Foundation
import Glibc
import KerberosTestSupport

/// A throwaway Samba directory for Samba's `ntlm_auth`, with no Windows domain: a
/// standalone server's SAM (`passdb backend = tdbsam`) served by a private `winbindd`,
/// every path of its smb.conf inside one temp directory. winbindd checks the NTLMv2
/// responses of the SAM's own accounts itself, so the helper and the daemon are the
/// ones a domain member runs; only the accounts come from a file instead of a DC.
///
/// Two things would still reach system state, and Samba's own test wrapper, nss_wrapper
/// (`libnss-wrapper`), redirects both for the processes given `wrapperEnvironment`:
/// - every SAM account must also be a Unix account (`smbpasswd -a`, winbindd's
///   `getpwnam`): the users live in a private passwd file, not in /etc/passwd;
/// - libwbclient (inside ntlm_auth) looks for winbindd's socket in the compiled-in
///   `/run/samba/winbindd`, and honours `SELFTEST_WINBINDD_SOCKET_DIR` only under
///   nss_wrapper.
///
/// Starts in well under a second. Root only (see `missingPrerequisite`). `stop()` (also
/// run on deinit) ends winbindd and its children and removes the directory.
final class TestWinbind {
    /// The SAM's domain: the netbios name, which prefixes the user in ntlm_auth's `AF`.
    static let domain = "DYNRELAYTEST"
    /// Accounts and their passwords; one name holds a space, as Windows account names may.
    static let users = [(name: "grace", password: "Secret-123"), (name: "john smith", password: "Pass word-456")]

    let directory: String
    let configPath: String
    /// What a process needs to see the private accounts and this winbindd.
    let wrapperEnvironment: [String: String]
    private var winbindd: TestDaemon?

    /// An `auth-helper` argv: ntlm_auth under nss_wrapper through env(1), so only the
    /// helper is wrapped, never the relay. `squid-2.5-ntlmssp` speaks bare NTLM (`auth-helper
    /// ntlm`), `gss-spnego` NTLM inside SPNEGO (`auth-helper negotiate`).
    func helperCommand(protocol: String = "squid-2.5-ntlmssp") -> [String] {
        ["/usr/bin/env"] + wrapperEnvironment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            + [Subprocess.find("ntlm_auth") ?? "ntlm_auth", "--configfile=" + configPath,
               "--helper-protocol=" + `protocol`]
    }

    /// Samba's own SPNEGO client (`ntlm_auth --helper-protocol=gss-spnego-client`) for one
    /// account: `first` is its opening token; `answer` its reply to a server token. Its
    /// NTLM NEGOTIATE is the same on every run, so a fresh run fed the opening again and
    /// then the server's token answers as the first run would have.
    struct SPNEGOClient {
        let arguments: [String]

        func first() throws -> String { try run("YR\n").first ?? "" }

        func answer(_ serverToken: String) throws -> String { try run("YR\nTT \(serverToken)\n").dropFirst().first ?? "" }

        /// Each reply's token (`YR <b64>`, `KK <b64>`), in order.
        private func run(_ input: String) throws -> [String] {
            let result = try Subprocess.run(try TestWinbind.tool("ntlm_auth"), arguments, input: .bytes(Array(input.utf8)), timeout: 20)
            let lines = result.stdoutText.split(separator: "\n").map(String.init)
            guard result.status == 0, lines.allSatisfy({ $0.hasPrefix("YR ") || $0.hasPrefix("KK ") }) else {
                throw HarnessError("ntlm_auth gss-spnego-client exited \(result.status): \(result.stdoutText) \(result.stderr)")
            }
            return lines.map { String($0.dropFirst(3)) }
        }
    }

    func spnegoClient(user: String, password: String) -> SPNEGOClient {
        SPNEGOClient(arguments: ["--configfile=" + configPath, "--helper-protocol=gss-spnego-client",
                                 "--username=" + user, "--password=" + password, "--domain=" + Self.domain])
    }

    /// Why this machine cannot run the fixture, or nil when it can.
    static var missingPrerequisite: String? {
        if geteuid() != 0 {
            return "needs root: smbpasswd adds SAM accounts only as root, and ntlm_auth reaches winbindd's privileged pipe only as its owner"
        }
        for (tool, package) in [("winbindd", "winbind"), ("ntlm_auth", "winbind"), ("wbinfo", "winbind"),
                                ("smbpasswd", "samba-common-bin")] where Subprocess.find(tool) == nil {
            return "\(tool) is not installed (Debian package \(package); .ci/deps installs it)"
        }
        if nssWrapperPath == nil {
            return "libnss_wrapper.so is not installed (Debian package libnss-wrapper; .ci/deps installs it)"
        }
        return nil
    }

    init() throws {
        if let missing = Self.missingPrerequisite { throw HarnessError(missing) }
        // Under /tmp, not $TMPDIR: winbindd's socket path must fit a sockaddr_un (108 bytes).
        var template = Array("/tmp/test-winbind-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw HarnessError("mkdtemp: errno \(errno)") }
        directory = String(cString: created)
        configPath = directory + "/smb.conf"
        wrapperEnvironment = [
            "LD_PRELOAD": Self.nssWrapperPath ?? "",
            "NSS_WRAPPER_PASSWD": directory + "/passwd",
            "NSS_WRAPPER_GROUP": directory + "/group",
            "SELFTEST_WINBINDD_SOCKET_DIR": directory + "/winbindd",
        ]
        do {
            try writeFiles()
            for user in Self.users { try addAccount(user.name, password: user.password) }
            try startWinbindd()
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Stops winbindd and every process of its group, then deletes the directory.
    func stop() {
        winbindd?.stop()
        winbindd = nil
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// winbindd's own words and the logs Samba wrote, for failure messages.
    var logs: String {
        let folder = directory + "/log"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.sorted().compactMap { name in
            (try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)).map { "== \(name)\n\($0)" }
        }.joined(separator: "\n")
    }

    private func writeFiles() throws {
        for folder in ["private", "lock", "state", "cache", "pid", "winbindd", "ncalrpc", "log"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + folder, withIntermediateDirectories: false)
        }
        // The SAM's domain is the netbios name; a workgroup of another name keeps that
        // visible. Without on-demand RPC helpers winbindd answers the SAM itself instead of
        // starting samba-dcerpcd, which daemonizes out of reach of stop().
        let config = """
            [global]
                server role = standalone server
                workgroup = DYNTEST
                netbios name = \(Self.domain)
                passdb backend = tdbsam:\(directory)/private/passdb.tdb
                ntlm auth = ntlmv2-only
                rpc start on demand helpers = no
                private dir = \(directory)/private
                binddns dir = \(directory)/private
                lock directory = \(directory)/lock
                state directory = \(directory)/state
                cache directory = \(directory)/cache
                pid directory = \(directory)/pid
                winbindd socket directory = \(directory)/winbindd
                ncalrpc dir = \(directory)/ncalrpc
                log file = \(directory)/log/%m.log
                interfaces = lo
                bind interfaces only = yes
                disable netbios = yes
                load printers = no

            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        var passwd = "root:x:0:0:root:/root:/bin/false\n"
        for (index, user) in Self.users.enumerated() {
            passwd += "\(user.name):x:\(30001 + index):30001:dynrelay test:/nonexistent:/bin/false\n"
        }
        try passwd.write(toFile: directory + "/passwd", atomically: true, encoding: .utf8)
        try "root:x:0:\ndynrelay-test:x:30001:\n".write(toFile: directory + "/group", atomically: true, encoding: .utf8)
    }

    private func addAccount(_ name: String, password: String) throws {
        let result = try Subprocess.run(try Self.tool("smbpasswd"), ["-c", configPath, "-a", "-s", name],
                                        input: .bytes(Array("\(password)\n\(password)\n".utf8)),
                                        environment: wrapperEnvironment, timeout: 20)
        guard result.status == 0 else {
            throw HarnessError("smbpasswd -a \(name) exited \(result.status): \(result.stderr)\(result.stdoutText)")
        }
    }

    private func startWinbindd() throws {
        let environment = ProcessInfo.processInfo.environment.merging(wrapperEnvironment) { _, new in new }
        let daemon = try TestDaemon(try Self.tool("winbindd"),
                                    ["--configfile=" + configPath, "--foreground", "--no-process-group"],
                                    environment: environment, outputPath: directory + "/log/winbindd.out",
                                    ownProcessGroup: true)
        winbindd = daemon
        // wbinfo -p is answered by winbindd itself once it serves requests, which is what
        // ntlm_auth needs; a socket file alone can appear before it listens.
        let wbinfo = try Self.tool("wbinfo")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if daemon.hasExited { throw HarnessError("winbindd exited:\n\(logs)") }
            if (try? Subprocess.run(wbinfo, ["-p"], environment: wrapperEnvironment, timeout: 5))?.status == 0 { return }
            usleep(20_000)
        }
        throw HarnessError("winbindd did not answer wbinfo -p within 10 s:\n\(logs)")
    }

    static func tool(_ name: String) throws -> String {
        guard let path = Subprocess.find(name) else { throw HarnessError("\(name) is not installed") }
        return path
    }

    /// nss_wrapper's library in the multiarch directory (or plain /usr/lib).
    private static var nssWrapperPath: String? {
        let multiarch = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? [])
            .filter { $0.hasSuffix("-linux-gnu") }.sorted().map { "/usr/lib/\($0)" }
        return (multiarch + ["/usr/lib", "/usr/lib64"]).map { $0 + "/libnss_wrapper.so" }
            .first { access($0, R_OK) == 0 }
    }
}
