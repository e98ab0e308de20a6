import Testing
@testable import RelayCore

@Suite("HTTP headers")
struct HTTPHeadersTests {
    @Test func lookupsAreCaseInsensitiveAndOrdered() {
        var headers = HTTPHeaders([("Set-Cookie", "a"), ("Host", "h"), ("set-cookie", "b")])
        #expect(headers.values("SET-COOKIE") == ["a", "b"])
        #expect(headers.first("host") == "h")
        #expect(headers.first("Hos") == nil)
        #expect(headers.contains("sEt-CoOkIe"))
        #expect(headers.count == 3)
        headers.remove("SET-cookie")
        #expect(headers.map(\.name) == ["Host"])
        headers.append(name: "X", value: "1")
        #expect(headers.map(\.value) == ["h", "1"])
    }

    /// Only ASCII letters fold: `é` and `É` differ, and so do bytes 0x40/0x60 and 0x5B/0x7B,
    /// which differ by the case bit without being letters.
    @Test func equalityIgnoresASCIICaseOnly() {
        #expect(HTTPBytes.equalsIgnoringASCIICase("Proxy-Authorization", "proxy-AUTHORIZATION"))
        #expect(HTTPBytes.equalsIgnoringASCIICase("", ""))
        #expect(!HTTPBytes.equalsIgnoringASCIICase("Host", "Hos"))
        #expect(!HTTPBytes.equalsIgnoringASCIICase("é", "É"))
        #expect(!HTTPBytes.equalsIgnoringASCIICase("@", "`") && !HTTPBytes.equalsIgnoringASCIICase("[", "{"))
        #expect(HTTPBytes.equalsIgnoringASCIICase(String(decoding: [0xC3, 0xA9], as: UTF8.self), "é"))
    }

    @Test func tokensSplitTrimAndLowercase() {
        let headers = HTTPHeaders([("Connection", " Keep-Alive ,\tUpgrade,, "), ("connection", "CLOSE")])
        #expect(headers.tokens("Connection") == ["keep-alive", "upgrade", "close"])
        #expect(headers.tokens("Absent") == [])
    }

    @Test func nonASCIINamesNeverMatchByUnicodeFolding() {
        // "K" (Kelvin sign) lowercases to "k" in Unicode; header names are ASCII tokens only.
        #expect(!HTTPHeaders([("\u{212A}eep-Alive", "x")]).contains("keep-alive"))
    }
}
