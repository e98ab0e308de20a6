/// 64 KiB buffers (four TLS records' worth of cleartext) lent to TLS relays, one per
/// direction while its bytes move, and kept for the next instead of freed: a loop lends
/// them at every burst of every relay.
/// Loop-confined, one per loop. At most `keep` idle buffers stay.
public final class RelayBufferPool {
    /// The size of each buffer: four TLS records' cleartext.
    public static let bufferSize = 64 * 1024
    private var idle: [UnsafeMutableRawBufferPointer] = []
    private let keep: Int
    /// Buffers lent and not yet given back.
    public private(set) var lent = 0

    /// A pool keeping at most `keep` idle buffers.
    public init(keep: Int = 64) {
        self.keep = keep
    }

    deinit {
        for buffer in idle { buffer.deallocate() }
    }

    func take() -> UnsafeMutableRawBufferPointer {
        lent += 1
        return idle.popLast() ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 16)
    }

    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        lent -= 1
        if idle.count < keep { idle.append(buffer) } else { buffer.deallocate() }
    }
}
