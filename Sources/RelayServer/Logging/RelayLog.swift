import Glibc
import RelayIO

/// One line per event on stderr: journald stamps and indexes it, and a human can read it.
///
/// When stderr is the journal's stream each line starts with its syslog priority as
/// sd-daemon(3) spells it (`<3>` … `<7>`), which journald strips and stores as the entry's
/// priority, so `journalctl -p warning` finds what went wrong. A terminal, a pipe or a file
/// gets the plain line.
///
/// Never pass a secret here: the line format only takes words ops need (event, session,
/// client, target, rule, reason).
public struct RelayLog: Sendable {
    /// How serious a line is, and how much to say: a line is written when its level is at or
    /// above the configured one. The raw values are the syslog priorities journald stores.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7

        /// `DYNRELAY_LOG`'s spelling of each level, or nil for any other word.
        public init?(name: String) {
            guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }

        /// The word `DYNRELAY_LOG` takes for this level.
        public var name: String {
            switch self {
            case .error: "error"
            case .warning: "warning"
            case .notice: "notice"
            case .info: "info"
            case .debug: "debug"
            }
        }

        /// More severe sorts first, as syslog numbers them: `.error < .warning`.
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    /// The least severe level written.
    public let level: Level
    /// Whether lines carry their `<N>` priority prefix (stderr is the journal's stream).
    public let prefixesPriority: Bool

    /// A log writing `level` and everything more severe; `prefixesPriority` defaults to
    /// whether this process's stderr is the journal.
    public init(level: Level, prefixesPriority: Bool = JournalStream.standardErrorIsJournal) {
        self.level = level
        self.prefixesPriority = prefixesPriority
    }

    /// Writes `dynrelay: <message>` when `at` is enabled.
    public func log(_ at: Level, _ message: @autoclosure () -> String) {
        guard let line = rendered(at, message) else { return }
        Self.writeToStandardError(line)
    }

    /// Writes `dynrelay: <message>` at info priority whatever the level: the line that says
    /// the daemon is up (`ready listeners=…`), which scripts and supervisors without
    /// sd_notify wait for, must not depend on how much else is said.
    public func announce(_ message: String) {
        Self.writeToStandardError(Self.format(.info, "dynrelay: " + message + "\n", prefixed: prefixesPriority))
    }

    /// The bytes `log` writes, or nil when `at` is below the configured level.
    func rendered(_ at: Level, _ message: () -> String) -> String? {
        guard at <= level else { return nil }
        return Self.format(at, "dynrelay: " + message() + "\n", prefixed: prefixesPriority)
    }

    /// Writes a command's own message (a failure, a warning) to stderr, each line with the
    /// priority of `level` when stderr is the journal (`ExecStartPre=dynrelay check-config`
    /// lands there), as it is otherwise.
    public static func write(_ level: Level, _ text: String) {
        writeToStandardError(format(level, text, prefixed: JournalStream.standardErrorIsJournal))
    }

    /// `text` with `<N>` before every line when `prefixed`: journald reads the prefix per
    /// line, so a line without one would get the unit's default priority.
    static func format(_ level: Level, _ text: String, prefixed: Bool) -> String {
        guard prefixed else { return text }
        let prefix = "<\(level.rawValue)>"
        var out = ""
        var atLineStart = true
        for character in text.unicodeScalars {
            if atLineStart && character != "\n" { out += prefix }
            out.unicodeScalars.append(character)
            atLineStart = character == "\n"
        }
        return out
    }

    /// Writes `text` to fd 2 whole, retrying short writes, with no prefix: for prompts and
    /// for text that is already formatted.
    public static func writeToStandardError(_ text: String) {
        var line = text
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                // Not `systemCall`: a closed stderr (EBADF) loses the text, it does not stop the process.
                let written = retryingInterruptions { Glibc.write(2, bytes.baseAddress! + offset, bytes.count - offset) }
                if written < 0 { return }
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
