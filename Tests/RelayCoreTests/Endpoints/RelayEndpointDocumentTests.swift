import Testing
@testable import RelayCore

/// The endpoints' JSON, byte for byte: fixed key order, escapes, every rule's fields.
@Suite struct RelayEndpointDocumentTests {
    static let config = """
    listen 127.0.0.1:0
    state-dir /tmp/unused
    instance relay-a.eu_1
    server app1.corp.example:443 tls-versions=1.3 sni=optional tunnel-tls=required
    deny .hr.intranet.corp.example
    server .intranet.corp.example:8080-8089 tls verify=off
    server 10.20.0.0/16:22 sni=any
    server [2001:db8::1]:*
    """

    static func registry() throws -> Registry {
        try ConfigParser.parse(text: config, file: "relay.conf").registry
    }

    @Test func configListsEveryServerRuleInOrderAndNoDenyRule() throws {
        let document = RelayEndpointDocuments.config(principal: AuthPrincipal(name: "alice", scheme: "Digest"),
                                                     registry: try Self.registry())
        let expected = #"{"principal":"alice","scheme":"Digest","servers":["#
            + #"{"host":"app1.corp.example","ports":"443","rule":"relay.conf:4","tls-versions":["1.3"],"sni":"optional","tunnel-tls":"required","tls":false,"verify":true},"#
            + #"{"host":".intranet.corp.example","ports":"8080-8089","rule":"relay.conf:6","tls-versions":["1.2","1.3"],"sni":"match","tunnel-tls":"any","tls":true,"verify":false},"#
            + #"{"host":"10.20.0.0/16","ports":"22","rule":"relay.conf:7","tls-versions":["1.2","1.3"],"sni":"any","tunnel-tls":"any","tls":false,"verify":true},"#
            + #"{"host":"[2001:db8::1]","ports":"*","rule":"relay.conf:8","tls-versions":["1.2","1.3"],"sni":"match","tunnel-tls":"any","tls":false,"verify":true}]}"#
        #expect(document.text == expected)
        #expect(!document.text.contains("hr.intranet"), "deny rules are not shown")
    }

    @Test func configWithoutAuthenticationHasANullPrincipal() throws {
        let empty = try ConfigParser.parse(text: "listen 127.0.0.1:0\nserver 10.1.1.1:22",
                                           file: "f.conf")
        let document = RelayEndpointDocuments.config(principal: nil, registry: empty.registry)
        #expect(document.text.hasPrefix(#"{"principal":null,"scheme":null,"servers":[{"host":"10.1.1.1","ports":"22","#))
    }

    @Test func statusKeysAndDraining() {
        let facts = RelayFacts(version: "9.8.7", instance: "relay-a")
        #expect(RelayEndpointDocuments.status(facts, draining: false).text
                == #"{"status":"ok","version":"9.8.7","instance":"relay-a"}"#)
        #expect(RelayEndpointDocuments.status(facts, draining: true).text
                == #"{"status":"draining","version":"9.8.7","instance":"relay-a"}"#)
    }

    @Test func stringsAreEscaped() {
        let value = JSONValue.object([("k\"", .string("a\\b\n\r\t\u{01}\u{1f}é\u{7f}")), ("n", .array([.null, .bool(false)]))])
        #expect(value.text == #"{"k\"":"a\\b\n\r\t\u0001\u001fé\u007f","n":[null,false]}"#, "DEL escaped, as the audit export does")
    }

    @Test func instanceNames() throws {
        #expect(RelayFacts.isValidInstance("relay-a.eu_1"))
        #expect(RelayFacts.isValidInstance(String(repeating: "a", count: 64)))
        for bad in ["", String(repeating: "a", count: 65), "relay a", "relay/a", "relé", "a\"b"] {
            #expect(!RelayFacts.isValidInstance(bad), "\(bad)")
            let text = "listen 127.0.0.1:0\ninstance \"\(bad)\"\nserver 10.1.1.1:22"
            #expect(throws: ConfigError.self, "\(bad)") { try ConfigParser.parse(text: text, file: "f.conf") }
        }
        let config = try ConfigParser.parse(text: "listen 127.0.0.1:0\ninstance relay-a.eu_1\nserver 10.1.1.1:22", file: "f.conf")
        #expect(config.instance == "relay-a.eu_1")
        let unset = try ConfigParser.parse(text: "listen 127.0.0.1:0\nserver 10.1.1.1:22", file: "f.conf")
        #expect(unset.instance == nil)
        #expect(throws: ConfigError.self) {
            try ConfigParser.parse(text: "listen 127.0.0.1:0\ninstance a\ninstance b\nserver 10.1.1.1:22", file: "f.conf")
        }
    }

    @Test func onlyTheExactPathNamesAnEndpoint() {
        #expect(WellKnownEndpoint(target: "/.well-known/dynrelay/status") == .status)
        #expect(WellKnownEndpoint(target: "/.well-known/dynrelay/config") == .config)
        #expect(WellKnownEndpoint(target: "/.well-known/dynrelay/status?x=1&y=" + String(repeating: "z", count: 5000)) == .status)
        for other in ["/.well-known/dynrelay/status/../config", "/.well-known/dynrelay/status/", "/.well-known/dynrelay/Status",
                      "//.well-known/dynrelay/status", "/.well-known/dynrelay/%73tatus", "/.well-known/dynrelay/./status",
                      "/.well-known/dynrelay", "/", "/.well-known/dynrelay/status;x", "/.well-known/dynrelay/status#x"] {
            #expect(WellKnownEndpoint(target: other) == nil, "\(other)")
        }
    }
}
