import COpenSSL

/// Drains OpenSSL's thread-local error queue into one line, for crash and error messages.
func drainOpenSSLErrors() -> String {
    var lines: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        lines.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return lines.isEmpty ? "no OpenSSL error queued" : lines.joined(separator: "; ")
}
