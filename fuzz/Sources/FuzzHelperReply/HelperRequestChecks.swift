import FuzzSupport
import RelayCore

/// Request lines built from client-controlled words (the input line, split at its first
/// space, as user and password; as a token): a line that is built stays one line, with
/// nothing a helper would read as a second request, and reads back as what went in.
enum HelperRequestChecks {
    static let controls = Set<UInt8>((0..<0x20).map(UInt8.init) + [0x7F])

    static func check(_ line: [UInt8]) {
        let text = String(decoding: line, as: UTF8.self)
        let space = text.firstIndex(of: " ") ?? text.endIndex
        let user = String(text[..<space])
        let password = space < text.endIndex ? String(text[text.index(after: space)...]) : ""

        if case .success(let request) = HelperRequestLine.basic(user: user, password: password) {
            invariant(!request.contains(where: controls.contains), "control byte in \(request)")
            let words = String(decoding: request, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
            invariant(words.count == 2, "basic request of \(words.count) words")
            invariant(HelperReply.rfc1738Unescape(String(words[0])) == user
                      && HelperReply.rfc1738Unescape(String(words[1])) == password, "basic words do not unescape to what went in")
        }
        if case .success(let request) = HelperRequestLine.digest(user: user, realm: password) {
            invariant(request == Array("\"\(user)\":\"\(password)\"".utf8), "digest request \(request)")
            invariant(!request.contains(where: controls.contains), "control byte in \(request)")
        }
        for first in [true, false] {
            guard case .success(let request) = HelperRequestLine.token(line, first: first, maxLineLength: 4096) else { continue }
            let verb = Array((first ? "YR" : "KK").utf8)
            invariant(request.starts(with: verb) && !request.contains(where: controls.contains), "token request \(request)")
            let encoded = request.dropFirst(verb.count + 1)
            let decoded = try? AuthCrypto.base64Decode(utf8: Array(encoded), maxDecodedCount: 4096)
            invariant(decoded == line, "token request carries \(String(describing: decoded)), not \(line)")
        }
    }
}
