import Foundation
import Testing
@testable import RelayCore

@Suite("Cookie file (Netscape format)")
struct CookieFileTests {
    static func sampleJar(_ clock: ManualCookieClock) throws -> CookieJar {
        var jar = clock.jar()
        try jar.receive(setCookie: "sid=abc; Domain=example.com; HttpOnly; Max-Age=1000", from: testURL("http://www.example.com/"))
        try jar.receive(setCookie: "sess=v 1; Path=/app; Secure", from: testURL("https://www.example.com/app/x"))
        try jar.receive(setCookie: "empty=; Max-Age=1000", from: testURL("http://example.org/"))
        return jar
    }

    @Test func writesWhatCurlWrites() throws {
        let clock = ManualCookieClock(1_700_000_000)
        let jar = try Self.sampleJar(clock)
        #expect(jar.netscapeFile == CookieFile.header + """
            #HttpOnly_.example.com\tTRUE\t/\tFALSE\t1700001000\tsid\tabc
            www.example.com\tFALSE\t/app\tTRUE\t0\tsess\tv 1
            example.org\tFALSE\t/\tFALSE\t1700001000\tempty\t

            """)
    }

    @Test func readsBackWhatItWrote() throws {
        let clock = ManualCookieClock(1_700_000_000)
        let jar = try Self.sampleJar(clock)
        var loaded = clock.jar()
        #expect(loaded.load(netscapeFile: jar.netscapeFile) == 3)
        #expect(Self.essentials(loaded.cookies) == Self.essentials(jar.cookies))
        #expect(loaded.cookieHeader(for: testURL("https://www.example.com/app/y")) == "sess=v 1; sid=abc")
    }

    @Test func malformedAndExpiredLinesAreSkipped() {
        let clock = ManualCookieClock(1_700_000_000)
        var jar = clock.jar()
        let text = """
            # comment
            not a cookie line
            a.example\tTRUE\t/\tFALSE\t1800000000\tok\t1
            a.example\tMAYBE\t/\tFALSE\t1800000000\tbadflag\t1
            a.example\tFALSE\tnoslash\tFALSE\t1800000000\tbadpath\t1
            a.example\tFALSE\t/\tFALSE\tsoon\tbadexpiry\t1
            a.example\tFALSE\t/\tFALSE\t1600000000\texpired\t1
            \tFALSE\t/\tFALSE\t0\tnodomain\t1
            a.example\tFALSE\t/\tFALSE\t0\t\tnoname
            a.example\tFALSE\t/\tFALSE\t0\tsix
            a.example\tFALSE\t/\tFALSE\t0\teight\t1\textra
            a.example\tfalse\t/\tfalse\t0\tlower\tcase\r
            """
        #expect(jar.load(netscapeFile: text) == 3)
        #expect(jar.cookies.map(\.name) == ["ok", "six", "lower"])
        #expect(jar.cookieHeader(for: testURL("http://b.a.example/")) == "ok=1")
        #expect(jar.cookieHeader(for: testURL("http://a.example/")) == "ok=1; six=; lower=case")
    }

    /// curl reads the file this jar writes and writes it back; the cookies survive both ways.
    @Test func roundTripsThroughCurl() throws {
        let clock = ManualCookieClock(Int64(Date().timeIntervalSince1970))
        let jar = try Self.sampleJar(clock)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cookiefile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ours = directory.appendingPathComponent("ours.txt")
        let theirs = directory.appendingPathComponent("theirs.txt")
        try jar.netscapeFile.write(to: ours, atomically: true, encoding: .utf8)

        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "--max-time", "10", "-b", ours.path, "-c", theirs.path, "file:///dev/null"]
        try curl.run()
        curl.waitUntilExit()
        #expect(curl.terminationStatus == 0)

        let written = try String(contentsOf: theirs, encoding: .utf8)
        #expect(written.hasPrefix("# Netscape HTTP Cookie File"))
        var loaded = clock.jar()
        #expect(loaded.load(netscapeFile: written) == 3)
        #expect(Self.essentials(loaded.cookies).sorted() == Self.essentials(jar.cookies).sorted())
    }

    /// What a cookie file carries (not the times of this process's store).
    static func essentials(_ cookies: [Cookie]) -> [String] {
        cookies.map { "\($0.name)=\($0.value) \($0.domain) \($0.path) \($0.expiry ?? 0) host:\($0.hostOnly) secure:\($0.secureOnly) httponly:\($0.httpOnly)" }
    }
}
