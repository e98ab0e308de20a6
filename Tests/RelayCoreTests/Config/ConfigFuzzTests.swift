import Testing
@testable import RelayCore

/// Seeded, bounded fuzzing: hostile input must never crash the parser or normalizer, and
/// every config error must point inside the text it came from.
@Suite("Config and host fuzzing")
struct ConfigFuzzTests {
    static let valid = """
        listen 127.0.0.1:3128
        listen [::1]:0
        state-dir /var/lib/dynrelay
        loops 2
        max-request-head 32KiB
        header-timeout 500ms
        audit-sync full
        include conf.d/*.conf
        server app1.corp.example:443   # comment
        server .intranet.corp.example:8080-8089
        server 10.20.0.0/16:22
        server [2001:db8::/32]:443
        deny\t*:25
        forward 127.0.0.1:2222 to app1.corp.example:443
        """

    static let vocabulary = [
        "listen", "server", "deny", "forward", "to", "include", "state-dir", "loops", "max-request-head",
        "max-headers", "max-connections", "max-tunnels-per-principal", "audit-backlog", "header-timeout", "connect-timeout", "idle-timeout", "drain-timeout",
        "audit-sync", "full", "normal", "127.0.0.1:3128", "[::1]:0", "[::ffff:127.0.0.1]:80", "*", "*:25",
        "app.example:443", ".corp.example:1-9", "10.0.0.0/8:22", "[2001:db8::/32]:443", "0x7f000001:1",
        "32k", "1MiB", "500ms", "1h", "#", "\t", " ", "\n", "\r\n", ":", "[", "]", "/", "-", ".", "%", "@",
        "é", "\u{0}", "65536", "0", "a.conf", "*.conf", "b.conf", "../c/a.conf",
        "tls", "cert=c.pem", "key=k.pem", "client-ca=ca.pem", "require-client-cert", "tls-versions", "tls-versions=1.1,1.3",
        "GDEnableTLS1.1", "GDEnableTLS1.2", "sni=any", "verify=off", "tunnel-tls=required", "tls-inspect-timeout",
        "tls-inspect-on-overflow", "pass", "auth", "client-cert", "basic", "=",
    ]

    static let files = [
        "/c/a.conf": "server a.example:1\ninclude b.conf",
        "/c/b.conf": "include a.conf",
        "/c/conf.d/x.conf": "deny *:25\nbogus here",
        "/c/conf.d/y.conf": "server y.example:443",
    ]

    @Test("10k random and mutated configs: no crash, errors located inside the input")
    func fuzzParser() {
        var random = SplitMix64(state: 0xD1CE_2026)
        let memory = MemoryFiles(Self.files)
        var texts = Self.files
        var errors = 0
        for iteration in 0..<10_000 {
            let text = iteration % 2 == 0 ? Self.randomTokens(&random) : Self.mutate(Self.valid, &random)
            texts["/c/main.conf"] = text
            do {
                _ = try ConfigParser.parse(text: text, file: "/c/main.conf", includeResolver: memory.resolve)
            } catch {
                errors += 1
                guard let source = texts[error.location.file] else {
                    Issue.record("error in unknown file: \(error) for \(text.debugDescription)")
                    continue
                }
                // Scalars, not Characters: "\r\n" is one Character and would hide a line.
                let lines = Array(source.unicodeScalars).split(separator: "\n", omittingEmptySubsequences: false)
                let inLines = (1...lines.count).contains(error.location.line)
                let width = inLines ? lines[error.location.line - 1].count : 0
                #expect(inLines && (1...(width + 1)).contains(error.location.column),
                        "\(error) outside \(text.debugDescription)")
            }
        }
        #expect(errors > 1000)
    }

    @Test("10k random hosts: no crash, results are normalised fixed points")
    func fuzzNormalizer() {
        var random = SplitMix64(state: 0x0057_2026)
        let alphabet = Array("0123456789abcdefxABCDEFX.:-_%@[]é/ \u{0}")
        for _ in 0..<10_000 {
            let length = Int.random(in: 0...24, using: &random)
            let text = String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
            let bracketed = Bool.random(using: &random)
            switch HostNormalizer.normalize(text, bracketed: bracketed) {
            case .success(let host):
                // The normalised text must read back as the same host, in one step.
                let again = HostNormalizer.normalize(host.description, bracketed: false)
                #expect(again == .success(host), "\(text.debugDescription) -> \(host)")
                if case .name(let name) = host {
                    #expect(name.utf8.count <= 253 && name == name.lowercased() && !name.hasSuffix("."))
                }
            case .failure(let error):
                #expect([.ambiguousHost, .badTarget].contains(error.reason))
            }
            if let address = IPv4Address(strict: text) {
                #expect(address.description == text)
            }
        }
    }

    static func randomTokens(_ random: inout SplitMix64) -> String {
        let count = Int.random(in: 0...30, using: &random)
        return (0..<count).map { _ in
            vocabulary[Int.random(in: 0..<vocabulary.count, using: &random)]
                + (Bool.random(using: &random) ? " " : "")
        }.joined()
    }

    static func mutate(_ text: String, _ random: inout SplitMix64) -> String {
        var scalars = Array(text.unicodeScalars)
        let pool = Array("\n\t #:[]/.-*%@0123456789abcxé\r\u{0}".unicodeScalars)
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            let position = Int.random(in: 0...scalars.count, using: &random)
            let scalar = pool[Int.random(in: 0..<pool.count, using: &random)]
            switch Int.random(in: 0..<3, using: &random) {
            case 0: scalars.insert(scalar, at: position)
            case 1 where position < scalars.count: scalars.remove(at: position)
            default: if position < scalars.count { scalars[position] = scalar }
            }
        }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }
}
