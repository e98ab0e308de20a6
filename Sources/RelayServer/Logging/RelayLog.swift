import Glibc

/// One line per event on stderr: journald stamps and indexes it, and a human can read it.
///
/// Never pass a secret here: the line format only takes words ops need (event, session,
/// client, target, rule, reason).
public struct RelayLog: Sendable {
    /// How much to say.
    public enum Level: Int, Sendable, Comparable {
        case error = 0, notice = 1, info = 2, debug = 3
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public let level: Level

    public init(level: Level) {
        self.level = level
    }

    /// Writes `dynrelay: <message>` when `at` is enabled.
    public func log(_ at: Level, _ message: @autoclosure () -> String) {
        guard at <= level else { return }
        Self.writeToStandardError("dynrelay: " + message() + "\n")
    }

    /// Writes `text` to fd 2 whole, retrying short writes (used by the CLI too).
    public static func writeToStandardError(_ text: String) {
        var line = text
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

extension RelayLog {
    /// A client-supplied word (a claimed user name) made safe for a one-line `key=value`
    /// log: printable ASCII other than space, quote and backslash passes as is; anything
    /// else is quoted with `\xNN` escapes, so no name can forge a field or a line.
    static func quoted(_ text: String) -> String {
        let safe = !text.isEmpty && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5c }
        if safe { return text }
        var out = "\""
        for byte in text.utf8 {
            if byte >= 0x20 && byte < 0x7f && byte != 0x22 && byte != 0x5c {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out + "\""
    }
}
