import Foundation
import Glibc
import Testing

/// The `dynrelay-client` binary under test, beside `dynrelay`.
enum ClientToolBinary {
    static var path: String {
        (RelayBinary.path as NSString).deletingLastPathComponent + "/dynrelay-client"
    }

    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil) throws -> ProcessResult {
        try Subprocess.run(path, arguments, input: stdin.map { .bytes(Array($0.utf8)) } ?? .none,
                           environment: environment, timeout: 30)
    }

    /// Runs with `stdin` written and its pipe held open until stdout has `until` (at most
    /// 20 s), then closed; waits for the exit (at most 10 s more).
    static func runHoldingStdin(_ arguments: [String], stdin: String, until expected: String) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        var collected: [UInt8] = []
        let deadline = Date().addingTimeInterval(20)
        let outFD = output.fileHandleForReading.fileDescriptor
        while Date() < deadline && !String(decoding: collected, as: UTF8.self).contains(expected) {
            var ready = pollfd(fd: outFD, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 200) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = read(outFD, &buffer, buffer.count)
            if count <= 0 { break }
            collected += buffer[..<count]
        }
        try input.fileHandleForWriting.close()
        let exitDeadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < exitDeadline { usleep(50_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        collected += output.fileHandleForReading.readDataToEndOfFile()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return ProcessResult(status: process.terminationStatus, stdout: collected, stderr: stderr)
    }
}

extension IntegrationSuite {
    /// `dynrelay-client` against the real relay: each form, its output and its exit code.
    @Suite("dynrelay-client")
    struct ClientToolTests {
        static let origin = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nContent-Type: text/plain\r\n\r\nhello\n"

        @Test("status: each relay in priority order, the one it would use; none reachable exits 3")
        func status() throws {
            let relay = try RelayProcess(config: RelayConfigText.proxy(["instance edge-1"]))
            defer { relay.stop() }
            let down = try TestListener.refusedPort()
            let result = try ClientToolBinary.run(["status", "--relay", "http://127.0.0.1:\(down)",
                                                   "--relay", "http://127.0.0.1:\(relay.proxyPort);priority=2"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "\(lines)")
            #expect(lines.first?.hasPrefix("http://127.0.0.1:\(down) priority=1: relay-unreachable") == true, "\(lines)")
            #expect(lines.dropFirst().first == "http://127.0.0.1:\(relay.proxyPort) priority=2: ok version=0.1.0 instance=edge-1")
            #expect(lines.last == "would use: http://127.0.0.1:\(relay.proxyPort)")

            let none = try ClientToolBinary.run(["status"], environment: ["DYNRELAY_RELAYS": "http://127.0.0.1:\(down)"])
            #expect(none.status == 3, "\(none.stdoutText) \(none.stderr)")
            #expect(none.stdoutText.hasSuffix("would use: none\n"))
        }

        @Test("fetch with Basic from --password-stdin: the body, -i, -o; a wrong password exits 5 with the reason")
        func fetch() throws {
            let origin = try CannedHTTPOrigin(reply: Self.origin)
            let relay = try AuthFixtures.relay(["auth basic"], servers: ["server 127.0.0.1:\(origin.port)"])
            defer { relay.stop() }
            let url = "http://127.0.0.1:\(origin.port)/page"
            let options = ["--relay", "http://127.0.0.1:\(relay.proxyPort)", "--proxy-user", AuthFixtures.user, "--password-stdin"]
            let body = try ClientToolBinary.run(["fetch", url] + options, stdin: AuthFixtures.password + "\n")
            #expect(body.status == 0, "\(body.stderr)")
            #expect(body.stdoutText == "hello\n")

            let head = try ClientToolBinary.run(["fetch", url, "-i", "-H", "X-Test: 1"] + options, stdin: AuthFixtures.password + "\n")
            #expect(head.stdoutText.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(head.stdoutText)")
            #expect(head.stdoutText.hasSuffix("\r\n\r\nhello\n"))
            #expect(origin.heads.contains { String(decoding: $0, as: UTF8.self).contains("\r\nX-Test: 1\r\n") })
            #expect(!origin.heads.contains { String(decoding: $0, as: UTF8.self).lowercased().contains("proxy-authorization") },
                    "the proxy credential stops at the relay")

            let directory = try TempDirectory()
            let file = directory.path + "/out"
            let saved = try ClientToolBinary.run(["fetch", url, "-o", file] + options, stdin: AuthFixtures.password + "\n")
            #expect(saved.status == 0 && saved.stdout.isEmpty)
            #expect(try String(contentsOfFile: file, encoding: .utf8) == "hello\n")

            let unregistered = try ClientToolBinary.run(["fetch", "http://127.0.0.9:1/"] + options, stdin: AuthFixtures.password + "\n")
            #expect(unregistered.status == 4, "the relay's own 403 is a refusal, not the server's answer: \(unregistered.stderr)")
            #expect(unregistered.stderr.contains("reason: not-registered") && unregistered.stdout.isEmpty, "\(unregistered.stderr)")

            let refused = try ClientToolBinary.run(["fetch", url] + options, stdin: "wrong\n")
            #expect(refused.status == 5, "\(refused.stderr)")
            #expect(refused.stderr.contains("proxy-auth-failed"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("wrong"), "no password on stderr")
        }

        @Test("tunnel: stdin into the tunnel, EOF half-closes, the echo comes back and the command ends")
        func tunnel() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            let payload = String(repeating: "0123456789abcdef", count: 8192)
            let result = try ClientToolBinary.run(["tunnel", "127.0.0.1:\(echo.port)", "--relay", "http://127.0.0.1:\(relay.proxyPort)"],
                                                  stdin: payload)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.count == payload.utf8.count && result.stdoutText == payload)
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["bytes_up"] == "\(payload.utf8.count)", "audit:\n\(relay.audit.dump())")

            let refused = try ClientToolBinary.run(["tunnel", "127.0.0.9:1", "--relay", "http://127.0.0.1:\(relay.proxyPort)"])
            #expect(refused.status == 4, "\(refused.stderr)")
            #expect(refused.stderr.contains("reason: not-registered"), "\(refused.stderr)")
        }

        @Test("config: the servers as JSON after proxy authentication; without credentials exit 5")
        func config() throws {
            let relay = try AuthFixtures.relay(["auth basic"], servers: ["server app.corp.example:443 sni=optional"])
            defer { relay.stop() }
            let result = try ClientToolBinary.run(["config", "--relay", "http://127.0.0.1:\(relay.proxyPort)",
                                                   "--proxy-user", AuthFixtures.user, "--password-stdin"],
                                                  stdin: AuthFixtures.password + "\n")
            #expect(result.status == 0, "\(result.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
            #expect(json["principal"] as? String == AuthFixtures.user)
            let servers = try #require(json["servers"] as? [[String: Any]])
            #expect(servers.first?["host"] as? String == "app.corp.example")
            #expect(servers.first?["sni"] as? String == "optional")

            let anonymous = try ClientToolBinary.run(["config", "--relay", "http://127.0.0.1:\(relay.proxyPort)"])
            #expect(anonymous.status == 5, "\(anonymous.stderr)")
        }

        @Test("usage errors exit 2 and name the problem")
        func usage() throws {
            for (arguments, words) in [([String](), "no command"), (["fetch"], "fetch needs a URL"),
                                       (["fetch", "ftp://x/"], "fetch ftp://x/"), (["tunnel", "nohost"], "HOST:PORT"),
                                       (["status", "-X", "GET", "--relay", "http://127.0.0.1:1"], "status does not take -X"),
                                       (["status"], "no relay")] {
                let result = try ClientToolBinary.run(arguments, environment: ["DYNRELAY_RELAYS": ""])
                #expect(result.status == 2, "\(arguments)")
                #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
            }
        }

        @Test("help, --help and -h print the usage on stdout and exit 0")
        func help() throws {
            for flag in ["help", "--help", "-h"] {
                let result = try ClientToolBinary.run([flag])
                #expect(result.status == 0, "\(flag): \(result.stderr)")
                #expect(result.stdoutText.hasPrefix("usage: dynrelay-client fetch URL"), "\(flag): \(result.stdoutText)")
                #expect(result.stderr.isEmpty, "\(flag): \(result.stderr)")
            }
        }

        @Test("squid as the relay: fetch and tunnel with Basic and Digest; status and config are not offered")
        func squid() throws {
            guard SquidProcess.isInstalled else {
                Issue.record("squid is not installed (.ci/deps installs it)")
                return
            }
            let origin = try CannedHTTPOrigin(reply: Self.origin)
            for scheme in [SquidProcess.Scheme.basic, .digest] {
                let squid = try SquidProcess(scheme: scheme, user: AuthFixtures.user, password: AuthFixtures.password,
                                             upstreamPort: origin.port)
                defer { squid.stop() }
                let relay = ["--relay", "http://127.0.0.1:\(squid.port)"]
                let auth = ["--proxy-user", AuthFixtures.user, "--password-stdin"]
                let fetched = try ClientToolBinary.run(["fetch", "http://127.0.0.1:\(origin.port)/x"] + relay + auth,
                                                       stdin: AuthFixtures.password + "\n")
                #expect(fetched.status == 0 && fetched.stdoutText == "hello\n", "\(scheme): \(fetched.stderr)")
                // squid ends a tunnel when the client half-closes it, so stdin stays open
                // until the answer is in.
                let tunnelled = try ClientToolBinary.runHoldingStdin(
                    ["tunnel", "127.0.0.1:\(origin.port)"] + relay + auth,
                    stdin: AuthFixtures.password + "\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", until: Self.origin)
                #expect(tunnelled.status == 0, "\(scheme): \(tunnelled.stderr)")
                #expect(tunnelled.stdoutText == Self.origin, "\(scheme)")
                let status = try ClientToolBinary.run(["status"] + relay)
                #expect(status.status == 11, "\(scheme): \(status.stdoutText) \(status.stderr)")
                #expect(status.stdoutText.contains("not-offered"))
                let config = try ClientToolBinary.run(["config"] + relay + auth, stdin: AuthFixtures.password + "\n")
                #expect(config.status == 11 || config.status == 5, "\(scheme): \(config.stderr)")
            }
        }
    }
}
