import Foundation
import Testing
@testable import RelayCore

/// The TLS parts of the config language on their happy paths: what each directive and
/// option records, the defaults, and how version sets combine.
@Suite("ConfigParser TLS")
struct TLSConfigTests {
    static let main = "/etc/dynrelay/dynrelay.conf"

    static func at(_ line: Int, _ column: Int = 1, file: String = main) -> RelayCore.SourceLocation {
        RelayCore.SourceLocation(file: file, line: line, column: column)
    }

    @Test("every TLS directive and option, with paths taken from the file's directory")
    func everyOption() throws {
        let config = try parseConfig("""
            listen 127.0.0.1:3128
            listen 127.0.0.1:3129 tls cert=certs/relay.pem key=/secure/relay.key client-ca=./ca.pem require-client-cert tls-versions=1.3
            listen [::1]:443 tls cert=../pki/a.pem key=b.pem client-ca=clients.pem
            server app.example:443 tls ca=app-ca.pem verify=on sni=optional tunnel-tls=required tls-versions=1.2
            server legacy.example:443 sni=any tls-versions=1.0,1.1
            server plain.example:80
            server lab.example:8443 tls verify=off
            deny bad.example
            tls-versions 1.1 1.2 1.3
            tls-inspect-timeout 2s
            tls-inspect-on-timeout pass
            tls-inspect-on-overflow refuse
            """, file: Self.main)
        #expect(config.listeners.map(\.description) == ["127.0.0.1:3128"])
        #expect(config.tlsListeners == [
            TLSListener(address: ListenAddress(host: v4("127.0.0.1"), port: 3129),
                        tls: ListenerTLSConfig(certificateFile: "/etc/dynrelay/certs/relay.pem", keyFile: "/secure/relay.key",
                                               clientCAFile: "/etc/dynrelay/./ca.pem", requireClientCertificate: true,
                                               versions: TLSVersionSet([.tls1_3])),
                        location: Self.at(2)),
            TLSListener(address: ListenAddress(host: v6("::1"), port: 443),
                        tls: ListenerTLSConfig(certificateFile: "/etc/dynrelay/../pki/a.pem", keyFile: "/etc/dynrelay/b.pem",
                                               clientCAFile: "/etc/dynrelay/clients.pem", requireClientCertificate: false,
                                               versions: TLSVersionSet([.tls1_1, .tls1_2, .tls1_3])),
                        location: Self.at(3)),
        ])
        #expect(config.tlsVersions.description == "1.1 1.2 1.3")
        #expect(config.tlsInspection == TLSInspectionSettings(timeout: .seconds(2), onTimeout: .pass, onOverflow: .refuse))
        let rules = config.rules
        #expect(rules.count == 5)
        #expect(rules[0].tunnelTLS == TunnelTLSPolicy(versions: TLSVersionSet([.tls1_2]), sni: .optional, requirement: .required))
        #expect(rules[0].upstreamTLS == UpstreamTLSPolicy(always: true, caFile: "/etc/dynrelay/app-ca.pem", verify: true))
        #expect(rules[1].tunnelTLS == TunnelTLSPolicy(versions: TLSVersionSet([.tls1_0, .tls1_1]), sni: .any, requirement: .any))
        #expect(rules[1].upstreamTLS == UpstreamTLSPolicy())
        #expect(rules[2].tunnelTLS == TunnelTLSPolicy(versions: TLSVersionSet([.tls1_1, .tls1_2, .tls1_3])),
                "a rule without tls-versions= takes the global set, written after it")
        #expect(rules[3].upstreamTLS == UpstreamTLSPolicy(always: true, caFile: nil, verify: false))
        #expect(rules[4].kind == .deny && rules[4].tunnelTLS == TunnelTLSPolicy() && rules[4].upstreamTLS == UpstreamTLSPolicy())
        #expect(config.warnings.map(\.description) == [
            "\(Self.main):7:29: warning: verify=off for 'server lab.example:8443': the relay does not check this server's certificate or host name",
        ])
    }

    @Test("defaults: TLS 1.2 and 1.3, SNI must match, TLS optional in tunnels, verification on, refuse what cannot be judged")
    func defaults() throws {
        let config = try parseConfig("listen 127.0.0.1:3128\nserver app.example:443")
        #expect(config.tlsListeners.isEmpty)
        #expect(config.tlsVersions == .default && config.tlsVersions.description == "1.2 1.3")
        #expect(config.tlsInspection.timeout == .seconds(10))
        #expect(config.tlsInspection.onTimeout == .refuse && config.tlsInspection.onOverflow == .refuse)
        let rule = try #require(config.rules.first)
        #expect(rule.tunnelTLS.versions.description == "1.2 1.3")
        #expect(rule.tunnelTLS.sni == .match && rule.tunnelTLS.requirement == .any)
        #expect(rule.upstreamTLS.always == false && rule.upstreamTLS.caFile == nil && rule.upstreamTLS.verify == true)
        #expect(config.warnings.isEmpty)
        #expect(config.auth.acceptsClientCertificate == false)
    }

    @Test("a TLS listener alone is something to serve, on loopback without auth")
    func tlsListenerAlone() throws {
        let config = try parseConfig("listen 127.0.0.1:0 tls cert=c.pem key=k.pem", file: "main.conf")
        #expect(config.listeners.isEmpty)
        #expect(config.tlsListeners.map(\.address.description) == ["127.0.0.1:0"])
        #expect(config.tlsListeners.first?.tls == ListenerTLSConfig(certificateFile: "c.pem", keyFile: "k.pem"),
                "a file with no directory keeps paths as written: both are relative to the working directory")
        #expect(config.tlsListeners.first?.tls.versions == .default)
        // Ephemeral ports are distinct sockets, as for plain listeners.
        #expect(configError("listen 127.0.0.1:0\nlisten 127.0.0.1:0 tls cert=c key=k") == nil)
    }

    /// (global lines, a rule's tls-versions= or nil, global set, the rule's set).
    @Test("global and per-rule version sets, with the GDEnable names", arguments: [
        ("", nil, "1.2 1.3", "1.2 1.3"),
        ("tls-versions 1.3", nil, "1.3", "1.3"),
        ("tls-versions 1.3 1.2 1.3", nil, "1.2 1.3", "1.2 1.3"),
        ("tls-versions 1.3", "1.1,1.2", "1.3", "1.1 1.2"),
        ("", "1.0", "1.2 1.3", "1.0"),
        ("GDEnableTLS1.1", nil, "1.1 1.2 1.3", "1.1 1.2 1.3"),
        ("GDEnableTLS1.2", nil, "1.1 1.2 1.3", "1.1 1.2 1.3"),
        ("tls-versions 1.2\nGDEnableTLS1.1", nil, "1.1 1.2", "1.1 1.2"),
        ("GDEnableTLS1.1\ntls-versions 1.3", nil, "1.1 1.3", "1.1 1.3"),
        ("GDEnableTLS1.2\ntls-versions 1.0", nil, "1.0 1.1 1.2", "1.0 1.1 1.2"),
        ("GDEnableTLS1.1\nGDEnableTLS1.2", nil, "1.1 1.2 1.3", "1.1 1.2 1.3"),
        ("tls-versions 1.0 GDEnableTLS1.2", nil, "1.0 1.1 1.2", "1.0 1.1 1.2"),
        ("tls-versions GDEnableTLS1.1", nil, "1.1 1.2 1.3", "1.1 1.2 1.3"),
        ("tls-versions 1.3", "GDEnableTLS1.1", "1.3", "1.1 1.3"),
        ("", "GDEnableTLS1.2", "1.2 1.3", "1.1 1.2 1.3"),
        ("tls-versions 1.0", "1.3,GDEnableTLS1.1", "1.0", "1.1 1.3"),
        ("GDEnableTLS1.1", "1.3", "1.1 1.2 1.3", "1.3"),
    ] as [(String, String?, String, String)])
    func versionResolution(global: String, option: String?, globalSet: String, ruleSet: String) throws {
        let optionText = option.map { " tls-versions=\($0)" } ?? ""
        // The global lines come last: a rule and a listener written before them still take them.
        let config = try parseConfig("""
            listen 127.0.0.1:3128
            listen 127.0.0.1:3129 tls cert=c key=k\(optionText)
            server app.example:443\(optionText)
            server other.example:443
            \(global)
            """)
        #expect(config.tlsVersions.description == globalSet)
        #expect(config.rules[0].tunnelTLS.versions.description == ruleSet)
        #expect(config.rules[1].tunnelTLS.versions.description == globalSet)
        #expect(config.tlsListeners[0].tls.versions.description == ruleSet)
    }

    @Test("TLS lines in included files: paths from that file's directory, versions from wherever the global line is")
    func includes() throws {
        let config = try parseConfig("""
            listen 127.0.0.1:3128
            server app.example:443 ca=ca/app.pem
            include conf.d/*.conf
            """, file: Self.main, files: [
                "/etc/dynrelay/conf.d/a.conf": "listen 127.0.0.1:3129 tls cert=../certs/relay.pem key=relay.key\nserver b.example:443 tls ca=b.pem verify=off",
                "/etc/dynrelay/conf.d/z.conf": "tls-versions 1.3\ntls-inspect-on-overflow pass",
            ])
        #expect(config.rules[0].upstreamTLS.caFile == "/etc/dynrelay/ca/app.pem")
        #expect(config.rules[0].tunnelTLS.versions.description == "1.3")
        #expect(config.rules[1].upstreamTLS.caFile == "/etc/dynrelay/conf.d/b.pem")
        #expect(config.rules[1].rule == "/etc/dynrelay/conf.d/a.conf:2")
        #expect(config.tlsListeners.first?.tls.certificateFile == "/etc/dynrelay/conf.d/../certs/relay.pem")
        #expect(config.tlsListeners.first?.tls.keyFile == "/etc/dynrelay/conf.d/relay.key")
        #expect(config.tlsListeners.first?.tls.versions.description == "1.3")
        #expect(config.tlsListeners.first?.location == Self.at(1, file: "/etc/dynrelay/conf.d/a.conf"))
        #expect(config.tlsInspection.onOverflow == .pass)
        #expect(config.warnings == [ConfigWarning(
            location: Self.at(2, 35, file: "/etc/dynrelay/conf.d/a.conf"),
            message: "verify=off for 'server b.example:443': the relay does not check this server's certificate or host name")])
    }

    @Test("duplicates across files and across plain and TLS listeners")
    func duplicates() {
        let files = ["/c/a.conf": "tls-versions 1.3\nlisten 127.0.0.1:3128 tls cert=c key=k"]
        #expect(configError("tls-versions 1.2\nlisten 127.0.0.1:1\ninclude a.conf", file: "/c/main.conf", files: files)
                == "/c/a.conf:1:1: duplicate 'tls-versions' (first set at /c/main.conf:1)")
        #expect(configError("listen 127.0.0.1:3128\ninclude b.conf", file: "/c/main.conf",
                            files: ["/c/b.conf": "listen 127.0.0.1:3128 tls cert=c key=k"])
                == "/c/b.conf:1:1: duplicate listen address 127.0.0.1:3128 (first at /c/main.conf:1)")
        #expect(configError("listen [::1]:443 tls cert=c key=k\nlisten [::1]:443")
                == "main.conf:2:1: duplicate listen address [::1]:443 (first at main.conf:1)")
        #expect(configError("listen [::1]:443 tls cert=c key=k\nlisten [::1]:443 tls cert=c key=k")
                == "main.conf:2:1: duplicate listen address [::1]:443 (first at main.conf:1)")
        #expect(configError("listen 127.0.0.1:443 tls cert=c key=k\nserver a.example:1\nforward 127.0.0.1:443 to a.example:1")
                == "main.conf:3:1: duplicate listen address 127.0.0.1:443 (first at main.conf:1)")
    }

    @Test("a decision's rule name leads back to the rule and its TLS policies")
    func registryLookup() throws {
        let config = try parseConfig("""
            listen 127.0.0.1:3128
            server app.example:443 sni=any tunnel-tls=required
            server .corp.example:* tls
            deny secret.corp.example
            """)
        let registry = config.registry
        guard case .allow(let name) = registry.decide(host: .name("app.example"), port: 443) else {
            Issue.record("app.example:443 not allowed")
            return
        }
        let rule = try #require(registry.rule(named: name))
        #expect(rule.location == RelayCore.SourceLocation(file: "main.conf", line: 2, column: 1))
        #expect(rule.tunnelTLS.sni == .any && rule.tunnelTLS.requirement == .required)
        #expect(registry.rule(named: "main.conf:3")?.upstreamTLS.always == true)
        #expect(registry.rule(named: "main.conf:4")?.kind == .deny)
        #expect(registry.rule(named: "main.conf:1") == nil, "a listen line is no rule")
        #expect(registry.rule(named: "other.conf:2") == nil)
    }

    @Test("the shipped example parses, and so do its commented TLS lines")
    func shippedExample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("etc/dynrelay/dynrelay.conf"), encoding: .utf8)
        let config = try parseConfig(text, file: Self.main)
        #expect(config.tlsVersions.description == "1.2 1.3")
        let examples = ["# listen ", "# server ", "# auth client-cert"]
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            examples.contains { line.hasPrefix($0) } || line == "# GDEnableTLS1.2" ? String(line.dropFirst(2)) : String(line)
        }.joined(separator: "\n")
        let all = try parseConfig(uncommented, file: Self.main)
        #expect(all.tlsListeners.count == 2)
        #expect(all.tlsListeners.last?.tls.clientCAFile == "/etc/dynrelay/devices-ca.pem")
        #expect(all.auth.acceptsClientCertificate)
        #expect(all.tlsVersions.description == "1.1 1.2 1.3")
        #expect(all.rules.contains { $0.upstreamTLS.caFile == "/etc/dynrelay/corp-root.pem" })
    }
}
