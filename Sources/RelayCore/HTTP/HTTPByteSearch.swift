import Glibc

/// Finding the next CR or LF in a head, through glibc's `memchr`: it reads a vector register
/// at a time, where a Swift byte loop costs several instructions for every byte of a long
/// header line.
enum HTTPByteSearch {
    /// The offset of the first `byte` in `from..<to` from `base`, if any.
    static func first(_ byte: UInt8, _ base: UnsafeRawPointer, from: Int, to: Int) -> Int? {
        guard from < to, let hit = memchr(base + from, Int32(byte), to - from) else { return nil }
        return base.distance(to: UnsafeRawPointer(hit))
    }
}
