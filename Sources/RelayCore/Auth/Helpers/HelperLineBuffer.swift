/// Splits a helper's output into lines, refusing one longer than `maxLineLength`: a helper
/// that writes that much without a newline is broken, and waiting longer would only grow
/// memory. A trailing CR is dropped (some helpers are ported from Windows).
public struct HelperLineBuffer: Sendable {
    /// What the buffered bytes hold next.
    public enum Next: Sendable, Equatable {
        /// One whole line, without its newline (or CR LF).
        case line([UInt8])
        /// No newline yet, and the partial line is within the limit.
        case needMore
        /// A line (whole or partial) longer than `maxLineLength`.
        case tooLong
    }

    /// Longest line accepted, without its newline.
    public let maxLineLength: Int
    private var bytes: [UInt8] = []
    /// Where the next line starts; consumed bytes are dropped in batches, not per line.
    private var start = 0
    /// Bytes before this offset hold no newline: do not scan them twice.
    private var scanned = 0

    /// An empty buffer.
    public init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    /// Adds bytes read from the helper.
    public mutating func append(_ chunk: UnsafeRawBufferPointer) {
        if start > 0 && start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
            scanned = 0
        }
        bytes.append(contentsOf: chunk)
    }

    /// Takes the next whole line, if one is buffered.
    public mutating func next() -> Next {
        var index = max(start, scanned)
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                var end = index
                if end > start && bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                guard end - start <= maxLineLength else { return .tooLong }
                let line = Array(bytes[start..<end])
                start = index + 1
                scanned = start
                if start > 4096 && start * 2 > bytes.count {
                    bytes.removeFirst(start)
                    start = 0
                    scanned = 0
                }
                return .line(line)
            }
            index += 1
        }
        scanned = index
        // A CR last may be the first half of this line's CR LF, which the limit leaves out.
        let pending = bytes.count - start - (bytes.last == UInt8(ascii: "\r") ? 1 : 0)
        return pending > maxLineLength ? .tooLong : .needMore
    }
}
