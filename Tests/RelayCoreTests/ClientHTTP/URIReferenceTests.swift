import Testing
@testable import RelayCore

/// The examples of RFC 3986 §5.4, base `http://a/b/c/d;p?q`, fragments dropped since they
/// never go on the wire.
@Suite("URI reference resolution")
struct URIReferenceTests {
    static let base = "http://a/b/c/d;p?q"

    @Test(arguments: [
        // §5.4.1 normal examples
        ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g/"), ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"), ("#s", "http://a/b/c/d;p?q"), ("g#s", "http://a/b/c/g"),
        ("g?y#s", "http://a/b/c/g?y"), (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"), ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../", "http://a/b/"),
        ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        // §5.4.2 abnormal examples
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"),
        ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"), ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"), ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g"), ("g#s/../x", "http://a/b/c/g"),
        // absolute and network-path references
        ("https://other.example:8443/x", "https://other.example:8443/x"),
        ("//other.example/y?z", "http://other.example/y?z"),
        ("HTTP://A/./b/../c", "http://a/c"),
    ])
    func resolves(reference: String, expected: String) throws {
        let base = try ClientURL(parsing: Self.base)
        #expect(try base.resolving(reference).description == expected)
    }

    @Test(arguments: [
        ("g:h", "unsupported-scheme"),
        ("ftp://a/b", "unsupported-scheme"),
        ("http:g", "malformed-url"),
        ("//user@evil/", "userinfo"),
        ("//a:99999/", "bad-port"),
        ("/a b", "control-character"),
        ("/a\r\nSet-Cookie: x=y", "control-character"),
    ])
    func refuses(reference: String, code: String) throws {
        let base = try ClientURL(parsing: Self.base)
        do {
            let resolved = try base.resolving(reference)
            Issue.record("\(reference) resolved to \(resolved)")
        } catch {
            #expect(error.code == code)
        }
    }

    @Test func removesDotSegmentsStepByStep() {
        // The two traces RFC 3986 §5.2.4 walks through.
        #expect(URIReference.removingDotSegments("/a/b/c/./../../g") == "/a/g")
        #expect(URIReference.removingDotSegments("mid/content=5/../6") == "mid/6")
        #expect(URIReference.removingDotSegments("/..") == "/")
        #expect(URIReference.removingDotSegments("") == "")
    }
}
