/// One answer line from a helper, read the way Squid reads it (helper/Reply.cc): a result
/// word, then either `key=value` notes (Squid 3.4+) or the older positional text
/// (`TT <blob>`, `AF <blob> <user>`, `NA <reason>`, `ERR Wrong password`).
public struct HelperReply: Sendable, Equatable {
    /// The result word, as sent: OK, ERR, BH, TT, AF, NA (anything else is a broken helper).
    public let code: String
    /// Everything after the result word, leading spaces removed.
    public let rest: String

    /// Splits a line; with `channelled` the first word must be the channel id the request
    /// carried. Nil when the line has no result word (or no channel id when one is due).
    public static func parse(_ line: [UInt8], channelled: Bool) -> (channel: Int?, reply: HelperReply)? {
        var text = Substring(String(decoding: line, as: UTF8.self))
        var channel: Int?
        if channelled {
            guard let id = Self.takeWord(&text), let number = Int(id), number >= 0 else { return nil }
            channel = number
        }
        guard let code = Self.takeWord(&text), !code.isEmpty else { return nil }
        return (channel, HelperReply(code: String(code), rest: String(text.drop(while: { $0 == " " }))))
    }

    /// The `key=value` notes, values unquoted (`"a \"b\""` → `a "b"`) as Squid does. Parsing
    /// stops at the first word that is not a note: from there on it is free text.
    public var notes: [String: String] { parseNotes().notes }

    /// What the helper said about a failure: the `message=` note, or the old free text.
    public var message: String? {
        let (notes, text) = parseNotes()
        if let message = notes["message"] { return message }
        return text.isEmpty ? nil : text
    }

    /// The words after the result, for the positional forms (`TT blob`, `AF blob user`).
    public var words: [Substring] { rest.split(separator: " ", omittingEmptySubsequences: true) }

    private func parseNotes() -> (notes: [String: String], text: String) {
        var notes: [String: String] = [:]
        var cursor = Substring(rest)
        while true {
            cursor = cursor.drop(while: { $0 == " " })
            guard let equals = cursor.firstIndex(of: "="),
                  let key = Optional(cursor[..<equals]), !key.isEmpty, !key.contains(" ") else { break }
            var value = ""
            var index = cursor.index(after: equals)
            if index < cursor.endIndex && cursor[index] == "\"" {
                index = cursor.index(after: index)
                var closed = false
                while index < cursor.endIndex {
                    let character = cursor[index]
                    index = cursor.index(after: index)
                    if character == "\"" { closed = true; break }
                    if character == "\\" && index < cursor.endIndex {
                        value.append(cursor[index])
                        index = cursor.index(after: index)
                    } else {
                        value.append(character)
                    }
                }
                guard closed else { break }
            } else {
                while index < cursor.endIndex && cursor[index] != " " {
                    value.append(cursor[index])
                    index = cursor.index(after: index)
                }
            }
            // Squid keeps every value of a repeated key; the first is the one it reads.
            if notes[String(key)] == nil { notes[String(key)] = value }
            cursor = cursor[index...]
        }
        return (notes, String(cursor.drop(while: { $0 == " " })))
    }

    private static func takeWord(_ text: inout Substring) -> Substring? {
        text = text.drop(while: { $0 == " " })
        guard !text.isEmpty else { return nil }
        let end = text.firstIndex(of: " ") ?? text.endIndex
        let word = text[..<end]
        text = text[end...]
        return word
    }
}

extension HelperReply {
    /// Undoes Squid's rfc1738_escape (`%XX` → the byte); a `%` not followed by two hex digits
    /// stays as it is, as in Squid's rfc1738_unescape.
    public static func rfc1738Unescape(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return text }
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = AuthHex.nibble(bytes[index + 1]), let low = AuthHex.nibble(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
