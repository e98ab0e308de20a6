import Foundation
import Synchronization
import Testing

extension IntegrationSuite {
    /// The allowed TLS versions of a rule, enforced on the end-to-end TLS inside CONNECT
    /// tunnels and static forwards, proven with `openssl s_server` and `s_client` at every
    /// version.
    @Suite("TLS versions inside tunnels")
    struct TunnelTLSVersionTests {
        static let versions = ["1.0", "1.1", "1.2", "1.3"]

        /// One allowed set: how the relay's config says it, and what it allows.
        struct AllowedSet: Sendable {
            var name: String
            /// Added to every address rule (`tls-versions=…`), or empty.
            var ruleOption: String
            /// Global lines (`tls-versions …`), or none.
            var globalLines: [String]
            var allowed: Set<String>
            /// The `allowed=` list a refusal's detail names.
            var allowedList: String { allowed.sorted().joined(separator: ",") }
        }

        static let sets = [
            AllowedSet(name: "default", ruleOption: "", globalLines: [], allowed: ["1.2", "1.3"]),
            AllowedSet(name: "rule 1.3", ruleOption: " tls-versions=1.3", globalLines: [], allowed: ["1.3"]),
            AllowedSet(name: "rule 1.2", ruleOption: " tls-versions=1.2", globalLines: [], allowed: ["1.2"]),
            AllowedSet(name: "global 1.0 1.1", ruleOption: "", globalLines: ["tls-versions 1.0 1.1"], allowed: ["1.0", "1.1"]),
            AllowedSet(name: "rule GDEnableTLS1.1", ruleOption: " tls-versions=GDEnableTLS1.1", globalLines: [],
                       allowed: ["1.1", "1.2", "1.3"]),
        ]

        /// One relay per allowed set, each registering the four single-version servers by name
        /// (what the CONNECT names) and by address (only an address rule lifts the loopback
        /// guard), both lines with the set's option.
        static func relay(for set: AllowedSet, servers: [OpenSSLServer]) throws -> RelayProcess {
            var lines = set.globalLines
            for server in servers {
                lines.append("server localhost:\(server.port)\(set.ruleOption)")
                lines.append("server 127.0.0.1:\(server.port)\(set.ruleOption)")
            }
            return try RelayProcess(config: RelayConfigText.proxy(lines))
        }

        @Test("every (allowed set, offered version) pair: kept with bytes both ways, or refused with protocol_version and audited")
        func versionMatrix() throws {
            let certificate = try TestCertificate()
            let servers = try Self.versions.map { try OpenSSLServer(certificate: certificate, version: $0) }
            let relays = try Self.sets.map { try Self.relay(for: $0, servers: servers) }
            defer { relays.forEach { $0.stop() } }

            struct Case: Sendable { var set: Int; var version: Int }
            let cases = Self.sets.indices.flatMap { set in Self.versions.indices.map { Case(set: set, version: $0) } }
            let runs = Mutex<[Int: Result<OpenSSLClientRun, HarnessError>]>([:])
            // s_server serves one connection at a time, so cases of one version wait for each
            // other; the rest run side by side.
            DispatchQueue.concurrentPerform(iterations: cases.count) { index in
                let item = cases[index]
                let port = servers[item.version].port
                let outcome: Result<OpenSSLClientRun, HarnessError>
                do {
                    outcome = .success(try OpenSSLClientRun.run(proxyPort: relays[item.set].proxyPort,
                                                                connect: "localhost:\(port)", servername: "localhost",
                                                                version: Self.versions[item.version]))
                } catch {
                    outcome = .failure(HarnessError("\(error)"))
                }
                runs.withLock { $0[index] = outcome }
            }

            for (index, item) in cases.enumerated() {
                let set = Self.sets[item.set], version = Self.versions[item.version]
                let label = "allowed \(set.name), client offers \(version)"
                let run = try #require(try runs.withLock { $0[index] }?.get(), "\(label): no run")
                let relay = relays[item.set]
                let target = "localhost:\(servers[item.version].port)"
                let close = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
                #expect(close.count == 1, "\(label): audit:\n\(relay.audit.dump())")
                let row = close.first ?? [:]
                #expect(row["rule"] == relay.rule(containing: "server localhost:\(servers[item.version].port)"), "\(label): \(row)")
                if set.allowed.contains(version) {
                    #expect(run.exchangedBytes, "\(label): must be kept; \(run.summary)")
                    #expect(run.negotiated == (version == "1.0" ? "TLSv1" : "TLSv\(version)"), "\(label): \(run.summary)")
                    #expect(row["reason"] == "completed", "\(label): \(row)")
                    #expect(row["tls_version"] == "TLSv\(version)", "\(label): \(row)")
                    #expect(row["tls_cipher"] != nil, "\(label): \(row)")
                    #expect(row["tls_sni"] == "localhost", "\(label): \(row)")
                    #expect(Int(row["bytes_down"] ?? "") ?? 0 > 100, "\(label): the answer was relayed: \(row)")
                } else {
                    #expect(!run.exchangedBytes, "\(label): must be refused; \(run.summary)")
                    #expect(run.sawProtocolVersionAlert, "\(label): \(run.summary)")
                    let reason = row["reason"] ?? ""
                    #expect(reason.hasPrefix("tls-version-refused: "), "\(label): \(row)")
                    #expect(reason.contains("allowed=\(set.allowedList)"), "\(label): \(reason)")
                    #expect(reason.contains(version), "\(label): the versions seen: \(reason)")
                }
            }
        }

        @Test("a static forward to a TLS server is inspected under its rule: 1.3 kept, 1.2 refused at the ServerHello")
        func staticForward() throws {
            let certificate = try TestCertificate()
            let modern = try OpenSSLServer(certificate: certificate, version: "1.3")
            let older = try OpenSSLServer(certificate: certificate, version: "1.2")
            let relay = try RelayProcess(config: """
                listen 127.0.0.1:0
                forward 127.0.0.1:0 to localhost:\(modern.port)
                forward 127.0.0.1:0 to localhost:\(older.port)
                state-dir {STATE}
                server localhost:\(modern.port) tls-versions=1.3
                server 127.0.0.1:\(modern.port) tls-versions=1.3
                server localhost:\(older.port) tls-versions=1.3
                server 127.0.0.1:\(older.port) tls-versions=1.3
                """)
            defer { relay.stop() }
            try #require(relay.forwardPorts.count == 2, "ready line: \(relay.stderr)")

            let kept = try OpenSSLClientRun.run(proxyPort: nil, connect: "127.0.0.1:\(relay.forwardPorts[0])",
                                                servername: "localhost")
            #expect(kept.exchangedBytes, "\(kept.summary)")
            #expect(kept.negotiated == "TLSv1.3", "\(kept.summary)")
            let keptRow = relay.audit.waitForEvents(where: "event = 'forward-close' AND target = ?",
                                                    ["localhost:\(modern.port)"]).first ?? [:]
            #expect(keptRow["reason"] == "completed", "audit:\n\(relay.audit.dump())")
            #expect(keptRow["tls_version"] == "TLSv1.3")
            #expect(keptRow["tls_sni"] == "localhost")

            // The client offers 1.2 and 1.3, so its hello passes; the server can only pick 1.2.
            let refused = try OpenSSLClientRun.run(proxyPort: nil, connect: "127.0.0.1:\(relay.forwardPorts[1])",
                                                   servername: "localhost")
            #expect(!refused.exchangedBytes, "\(refused.summary)")
            #expect(refused.sawProtocolVersionAlert, "\(refused.summary)")
            let refusedRow = relay.audit.waitForEvents(where: "event = 'forward-close' AND target = ?",
                                                       ["localhost:\(older.port)"]).first ?? [:]
            #expect(refusedRow["reason"] == "tls-version-refused: negotiated=1.2 allowed=1.3",
                    "audit:\n\(relay.audit.dump())")
            #expect(refusedRow["rule"] == relay.rule(containing: "server localhost:\(older.port)"))
        }
    }
}
