/// One whitespace-separated word of a config line and the column it starts at.
struct ConfigToken: Sendable, Equatable {
    var text: String
    /// 1-based column in Unicode scalars.
    var column: Int
}

/// A non-empty config line, comments removed.
struct ConfigLine: Sendable {
    var number: Int
    var tokens: [ConfigToken]
}

/// Splits config text into lines of tokens.
///
/// Works on Unicode scalars, not Characters: Swift fuses "\r\n" into one Character,
/// which would hide the line break and shift every column after a combining mark.
enum ConfigLexer {
    static func lines(of text: String) -> [ConfigLine] {
        var lines: [ConfigLine] = []
        var tokens: [ConfigToken] = []
        var current = String.UnicodeScalarView()
        var start = 0
        var lineNumber = 1
        var column = 0
        var inComment = false

        func flush() {
            if !current.isEmpty {
                tokens.append(ConfigToken(text: String(current), column: start))
                current = String.UnicodeScalarView()
            }
        }

        for scalar in text.unicodeScalars {
            if scalar == "\n" {
                flush()
                if !tokens.isEmpty { lines.append(ConfigLine(number: lineNumber, tokens: tokens)) }
                tokens = []
                lineNumber += 1
                column = 0
                inComment = false
                continue
            }
            column += 1
            if inComment { continue }
            switch scalar {
            case "#":
                flush()
                inComment = true
            case " ", "\t", "\r":
                flush()
            default:
                if current.isEmpty { start = column }
                current.append(scalar)
            }
        }
        flush()
        if !tokens.isEmpty { lines.append(ConfigLine(number: lineNumber, tokens: tokens)) }
        return lines
    }
}
