import CGSSAPI

extension gss_buffer_desc {
    /// Copies the buffer out and releases it: every buffer GSS-API hands back is the
    /// library's allocation and must go back through `gss_release_buffer`.
    mutating func takeBytes() -> [UInt8] {
        defer {
            var minor: OM_uint32 = 0
            gss_release_buffer(&minor, &self)
        }
        guard length > 0, let value else { return [] }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// `takeBytes` as UTF-8 text (display names and status messages).
    mutating func takeString() -> String {
        String(decoding: takeBytes(), as: UTF8.self)
    }
}

/// Runs `body` with a `gss_buffer_desc` that borrows `bytes` without copying. GSS-API
/// declares input buffers non-const, but only reads them.
func withGSSInputBuffer<R>(_ bytes: [UInt8], _ body: (inout gss_buffer_desc) -> R) -> R {
    var bytes = bytes
    return bytes.withUnsafeMutableBytes { raw in
        var buffer = gss_buffer_desc(length: raw.count, value: raw.baseAddress)
        return body(&buffer)
    }
}
