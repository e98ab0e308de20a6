import Foundation
import Testing

/// docs/clients.md embeds each example program verbatim: a block after
/// `<!-- example: PATH -->` must be PATH byte for byte, and every file under `Examples/` must
/// be embedded, so the guide shows what `swift build` compiles and ClientExampleTests runs.
@Suite("client guide")
struct ClientGuideTests {
    static let marker = "<!-- example: "

    /// (path, block) for each marked block of `guide`, in order.
    static func embeddedExamples(_ guide: String) throws -> [(path: String, block: String)] {
        var found: [(String, String)] = []
        var rest = Substring(guide)
        while let start = rest.range(of: marker) {
            guard let close = rest[start.upperBound...].range(of: " -->\n") else {
                throw HarnessError("unterminated marker after \(found.count) examples")
            }
            let path = String(rest[start.upperBound..<close.lowerBound])
            let afterMarker = rest[close.upperBound...]
            guard afterMarker.hasPrefix("```swift\n") else { throw HarnessError("\(path): the marker is not followed by ```swift") }
            let body = afterMarker.dropFirst("```swift\n".count)
            guard let end = body.range(of: "\n```\n") else { throw HarnessError("\(path): the block does not end") }
            found.append((path, String(body[..<end.lowerBound]) + "\n"))
            rest = body[end.upperBound...]
        }
        return found
    }

    /// The first line where `a` and `b` differ, both versions, for the failure message.
    static func firstDifference(_ a: String, _ b: String) -> String {
        let left = a.split(separator: "\n", omittingEmptySubsequences: false)
        let right = b.split(separator: "\n", omittingEmptySubsequences: false)
        for index in 0..<max(left.count, right.count) {
            let l = index < left.count ? String(left[index]) : "(end)"
            let r = index < right.count ? String(right[index]) : "(end)"
            if !l.utf8.elementsEqual(r.utf8) { return "line \(index + 1): guide '\(l)', file '\(r)'" }
        }
        return "no line differs"
    }

    @Test("each embedded example is its file byte for byte, and every example file is embedded")
    func examplesMatchTheirFiles() throws {
        let root = ExampleProgram.repositoryRoot
        let guide = try String(contentsOf: root.appendingPathComponent("docs/clients.md"), encoding: .utf8)
        let embedded = try Self.embeddedExamples(guide)
        #expect(embedded.count >= 6)
        for (path, block) in embedded {
            let file = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            // Bytes, not String ==, which would call canonically equivalent texts equal.
            #expect(block.utf8.elementsEqual(file.utf8),
                    "docs/clients.md's copy of \(path) differs from the file: \(Self.firstDifference(block, file))")
        }
        let files = try FileManager.default.subpathsOfDirectory(atPath: root.appendingPathComponent("Examples").path)
            .filter { $0.hasSuffix(".swift") }.map { "Examples/" + $0 }
        #expect(Set(files) == Set(embedded.map(\.path)), "every example file is in the guide, once")
        #expect(files.count == embedded.count)
    }
}
