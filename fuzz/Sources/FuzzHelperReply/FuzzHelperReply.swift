import FuzzSupport
import RelayCore

/// The Squid helper protocol on whatever a helper writes: its output splits into the same
/// lines however it is read, each line exactly the bytes before its (CR) LF; every answer
/// reader takes every line, channelled or not, and what they read holds together (notes
/// read back from their own quoting, a continuation token is non-empty, an authentication
/// names a user, an HA1 has a digest's length).
/// The same bytes, as client input, make request lines that stay one line and unescape to
/// what went in (`HelperRequestChecks`).
@main
enum FuzzHelperReply {
    static func main() {
        FuzzDriver.run(fuzzHelperReply)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHelperReply(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let output = Array(UnsafeBufferPointer(start: data, count: size))
    // A tight limit as well, so lines at and past it are within libFuzzer's input sizes.
    _ = SplitInvariance.check(output) { HelperLines.read(output, cuts: $0, maxLineLength: 16) }
    let lines = SplitInvariance.check(output) { HelperLines.read(output, cuts: $0, maxLineLength: 8192) }
    for line in lines.lines {
        for channelled in [false, true] {
            guard let (channel, reply) = HelperReply.parse(line, channelled: channelled) else { continue }
            invariant(channel.map { $0 >= 0 } ?? !channelled, "channel \(String(describing: channel))")
            HelperAnswers.check(reply)
        }
        HelperRequestChecks.check(line)
    }
    return 0
}

/// A helper's output through `HelperLineBuffer`, read in pieces ending at `cuts`.
struct HelperLines: Equatable {
    var lines: [[UInt8]] = []
    /// The buffer refused a line as too long (the helper is then treated as broken).
    var tooLong = false

    static func read(_ output: [UInt8], cuts: [Int], maxLineLength: Int) -> HelperLines {
        var buffer = HelperLineBuffer(maxLineLength: maxLineLength)
        var result = HelperLines()
        var start = 0
        var consumed = 0
        for end in cuts + [output.count] where end >= start {
            output.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
            start = end
            reading: while true {
                switch buffer.next() {
                case .line(let line):
                    // The line is the bytes up to the next LF, less one CR before it.
                    let newline = output[consumed...].firstIndex(of: UInt8(ascii: "\n"))
                    invariant(newline.map { $0 < end } == true, "a line before its newline arrived")
                    var expected = Array(output[consumed..<newline!])
                    if expected.last == UInt8(ascii: "\r") { expected.removeLast() }
                    invariant(line == expected && line.count <= maxLineLength, "line \(line), bytes \(expected)")
                    consumed = newline! + 1
                    result.lines.append(line)
                case .needMore:
                    break reading
                case .tooLong:
                    result.tooLong = true
                    return result
                }
            }
        }
        return result
    }
}

/// Every answer a parsed reply can be read as, and what each must hold.
enum HelperAnswers {
    static func check(_ reply: HelperReply) {
        invariant(!reply.code.isEmpty && !reply.code.contains(" "), "result word \(reply.code.debugDescription)")
        _ = reply.message
        _ = reply.words
        _ = HelperReply.rfc1738Unescape(reply.rest)
        let notes = reply.notes
        // Notes written back with Squid's quoting read back the same.
        let quoted = notes.sorted { $0.key < $1.key }.map { key, value in
            var text = key + "=\""
            for character in value {
                if character == "\"" || character == "\\" { text.append("\\") }
                text.append(character)
            }
            return text + "\""
        }
        if let (_, again) = HelperReply.parse(Array(("OK " + quoted.joined(separator: " ")).utf8), channelled: false) {
            invariant(again.notes == notes, "notes \(notes) read back as \(again.notes)")
        }

        _ = HelperVerdict(reply: reply)
        if case .ha1(let bytes) = HelperDigestAnswer(reply: reply) {
            invariant(bytes.count == 16 || bytes.count == 32, "an HA1 of \(bytes.count) bytes")
        }
        for scheme in [AuthConfig.Scheme.ntlm, .negotiate] {
            switch HelperTokenAnswer(reply: reply, scheme: scheme, maxTokenLength: 12 * 1024) {
            case .continue(let token):
                invariant(!token.isEmpty, "an empty continuation token")
            case .done(let user, _):
                // An empty final token is read as none where it is used.
                invariant(!user.isEmpty, "authenticated nobody")
            case .failed, .broken:
                break
            }
        }
    }
}
