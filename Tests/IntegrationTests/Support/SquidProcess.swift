import Foundation
import Glibc

/// squid 5 as an alternative relay on a loopback port, asking for Basic or Digest (its own
/// helpers, `basic_ncsa_auth` and `digest_file_auth`) and allowing CONNECT and absolute-form
/// requests to one upstream port only. Stopped on deinit.
final class SquidProcess: @unchecked Sendable {
    enum Scheme: String {
        case basic
        case digest
    }

    static var isInstalled: Bool { access("/usr/sbin/squid", X_OK) == 0 }

    let port: UInt16
    private let directory: TempDirectory
    private let process = Process()

    init(scheme: Scheme, user: String, password: String, upstreamPort: UInt16) throws {
        directory = try TempDirectory()
        let dir = directory.path
        port = try TestListener.refusedPort()
        let realm = "squid"
        let helpers = "/usr/lib/squid"
        let auth: String
        switch scheme {
        case .basic:
            let hash = try Subprocess.run("/usr/bin/openssl", ["passwd", "-apr1", password]).stdoutText
                .trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try directory.write("passwd", "\(user):\(hash)\n")
            auth = "auth_param basic program \(helpers)/basic_ncsa_auth \(dir)/passwd\nauth_param basic realm \(realm)\n"
        case .digest:
            // digest_file_auth -c reads user:realm:HA1, HA1 = MD5(user:realm:password).
            let ha1 = try Subprocess.run("/usr/bin/openssl", ["dgst", "-md5", "-r"],
                                         input: .bytes(Array("\(user):\(realm):\(password)".utf8)))
                .stdoutText.split(separator: " ").first.map(String.init) ?? ""
            _ = try directory.write("passwd", "\(user):\(realm):\(ha1)\n")
            auth = "auth_param digest program \(helpers)/digest_file_auth -c \(dir)/passwd\nauth_param digest realm \(realm)\n"
        }
        let config = """
        http_port 127.0.0.1:\(port)
        \(auth)acl authenticated proxy_auth REQUIRED
        acl upstream_port port \(upstreamPort)
        http_access allow upstream_port authenticated
        http_access deny all
        cache deny all
        cache_mem 0 MB
        workers 1
        cache_effective_user proxy
        pid_filename \(dir)/squid.pid
        access_log none
        cache_log \(dir)/cache.log
        cache_store_log none
        coredump_dir \(dir)
        netdb_filename none
        pinger_enable off
        shutdown_lifetime 0 seconds
        """
        _ = try directory.write("squid.conf", config)
        // squid drops to its cache_effective_user, which must read the password file.
        _ = try Subprocess.run("/bin/chown", ["-R", "proxy", dir])
        chmod(dir, 0o755)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/squid")
        process.arguments = ["-N", "-f", dir + "/squid.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if let socket = try? TestSocket.connect(port: port, timeoutSeconds: 1) {
                socket.close()
                return
            }
            guard process.isRunning else { break }
            usleep(100_000)
        }
        stop()
        let log = (try? String(contentsOfFile: dir + "/cache.log", encoding: .utf8)) ?? ""
        throw HarnessError("squid did not listen on 127.0.0.1:\(port): \(log.suffix(400))")
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<50 where process.isRunning { usleep(100_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }
}
