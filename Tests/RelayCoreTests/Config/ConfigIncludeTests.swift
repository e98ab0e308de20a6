import Testing
@testable import RelayCore

@Suite("ConfigParser includes")
struct ConfigIncludeTests {
    static let main = "/etc/dynrelay/dynrelay.conf"

    @Test("relative glob includes, sorted, with rules named by their own file")
    func relativeGlob() throws {
        let config = try parseConfig("listen 127.0.0.1:3128\ninclude conf.d/*.conf\nserver z.example:1", file: Self.main, files: [
            "/etc/dynrelay/conf.d/b.conf": "server b.example:443",
            "/etc/dynrelay/conf.d/a.conf": "# apps\nserver a.example:443\ninclude ../extra/x.conf",
            "/etc/dynrelay/extra/x.conf": "deny a.example:443",
            "/etc/dynrelay/conf.d/ignored.txt": "bogus",
        ])
        #expect(config.sourceFiles == [Self.main, "/etc/dynrelay/conf.d/a.conf", "/etc/dynrelay/extra/x.conf",
                                       "/etc/dynrelay/conf.d/b.conf"])
        #expect(config.rules.map(\.rule) == ["/etc/dynrelay/conf.d/a.conf:2", "/etc/dynrelay/extra/x.conf:1",
                                             "/etc/dynrelay/conf.d/b.conf:1", "\(Self.main):3"])
        #expect(config.registry.decide(host: .name("a.example"), port: 443)
                == .deny(rule: "/etc/dynrelay/extra/x.conf:1", reason: .denied))
        #expect(config.registry.decide(host: .name("b.example"), port: 443) == .allow(rule: "/etc/dynrelay/conf.d/b.conf:1"))
    }

    @Test("a glob matching nothing is fine, a missing plain path is not")
    func missing() {
        #expect(configError("listen 127.0.0.1:1\ninclude conf.d/*.conf", file: Self.main) == nil)
        #expect(configError("listen 127.0.0.1:1\ninclude   nope.conf", file: Self.main)
                == "\(Self.main):2:11: cannot read '/etc/dynrelay/nope.conf': No such file or directory")
    }

    @Test("errors inside an include point into that file")
    func errorLocationInInclude() {
        #expect(configError("listen 127.0.0.1:1\ninclude a.conf", file: "/c/main.conf", files: ["/c/a.conf": "\n  bogus x"])
                == "/c/a.conf:2:3: unknown directive 'bogus'")
        #expect(configError("state-dir /x\ninclude a.conf", file: "/c/main.conf", files: ["/c/a.conf": "listen 127.0.0.1:1\nstate-dir /y"])
                == "/c/a.conf:2:1: duplicate 'state-dir' (first set at /c/main.conf:1)")
    }

    @Test("cycles are errors, reported at the include that closes them")
    func cycles() {
        let files = ["/c/a.conf": "include b.conf", "/c/b.conf": "listen 127.0.0.1:1\ninclude ./a.conf"]
        #expect(configError("include a.conf", file: "/c/main.conf", files: files)
                == "/c/b.conf:2:9: include cycle: /c/a.conf -> /c/b.conf -> /c/a.conf")
        #expect(configError("listen 127.0.0.1:1\ninclude *.conf", file: "/c/main.conf", files: ["/c/main.conf": ""])
                == "/c/main.conf:2:9: include cycle: /c/main.conf -> /c/main.conf")
    }

    @Test("the same file twice without a cycle is allowed")
    func diamond() throws {
        let config = try parseConfig("listen 127.0.0.1:1\ninclude a.conf\ninclude b.conf", file: "/c/main.conf", files: [
            "/c/a.conf": "include common.conf", "/c/b.conf": "include common.conf", "/c/common.conf": "deny *:25",
        ])
        #expect(config.rules.count == 2)
    }

    @Test("nesting is limited to 8 levels")
    func depth() {
        var files: [String: String] = [:]
        for level in 1...9 { files["/c/d\(level).conf"] = "include d\(level + 1).conf" }
        files["/c/d9.conf"] = ""
        files["/c/d8.conf"] = ""
        #expect(configError("listen 127.0.0.1:1\ninclude d1.conf", file: "/c/main.conf", files: files) == nil)
        files["/c/d8.conf"] = "include d9.conf"
        #expect(configError("listen 127.0.0.1:1\ninclude d1.conf", file: "/c/main.conf", files: files)
                == "/c/d8.conf:1:9: include nesting deeper than 8")
    }

    @Test("resolver failures other than ConfigError are reported at the include")
    func foreignResolverError() {
        struct Boom: Error, CustomStringConvertible { var description: String { "boom" } }
        do {
            _ = try ConfigParser.parse(text: "listen 127.0.0.1:1\ninclude x", file: "m") { _, _ in throw Boom() }
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "m:2:9: cannot include 'x': boom")
        }
        #expect(throws: ConfigError.self) { try ConfigParser.parse(text: "include x", file: "m") }
    }
}
