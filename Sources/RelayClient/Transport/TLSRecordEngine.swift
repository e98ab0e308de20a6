import RelayIO
import Synchronization

/// The OpenSSL side of a `TLSClientStream`: a `TLSConnection` over memory buffers behind a
/// lock, so the reading and the writing task may each step it (OpenSSL allows one call at a
/// time on a connection; its error queue is per thread, and each step starts and drains it
/// within the lock). The lock is never held across a suspension.
final class TLSRecordEngine: Sendable {
    /// What one read step came to.
    enum ReadStep: Sendable {
        case bytes([UInt8])
        /// close_notify: the server ended its direction in order.
        case end
        /// The stream below ended without close_notify: possibly a cut.
        case cut
        /// OpenSSL needs more records from the stream below.
        case needsInput
        case failed(TLSFailure)
    }

    private struct State {
        let connection: TLSConnection
        /// Why the stream no longer works (closed or cancelled).
        var ended: RelayClientError?
    }

    private let state: Mutex<State>

    init(_ connection: sending TLSConnection) {
        state = Mutex(State(connection: connection))
    }

    /// Reads a property of the connection (version, cipher).
    func withConnection<T: Sendable>(_ body: (TLSConnection) -> T) -> T {
        state.withLock { body($0.connection) }
    }

    var endReason: RelayClientError? { state.withLock { $0.ended } }

    /// Marks the stream ended (the first reason stays).
    func end(_ reason: RelayClientError) {
        state.withLock { state in
            if state.ended == nil { state.ended = reason }
        }
    }

    func read(maxBytes: Int) throws(RelayClientError) -> ReadStep {
        try state.withLock { state throws(RelayClientError) -> ReadStep in
            if let ended = state.ended { throw ended }
            var result = TLSReadResult.wantRead
            let bytes = [UInt8](unsafeUninitializedCapacity: max(1, min(maxBytes, TLSClientStream.cleartextChunk))) { buffer, count in
                result = state.connection.read(into: UnsafeMutableRawBufferPointer(buffer))
                if case .bytes(let read) = result { count = read } else { count = 0 }
            }
            switch result {
            case .bytes: return .bytes(bytes)
            // Over memory buffers a read never waits to write: what it wrote is taken after.
            case .wantRead, .wantWrite: return .needsInput
            case .closed: return .end
            case .eof: return .cut
            case .failed(let failure): return .failed(failure)
            }
        }
    }

    /// Encrypts `bytes` (at most a record's worth) into the outgoing buffer; how many it took.
    func write(_ bytes: ArraySlice<UInt8>) throws(RelayClientError) -> Int {
        try state.withLock { state throws(RelayClientError) -> Int in
            if let ended = state.ended { throw ended }
            let result = bytes.withUnsafeBytes { state.connection.write($0) }
            switch result {
            case .wrote(let count): return count
            // A memory buffer always takes the records; a write that asks to read first
            // (a renegotiation, which these contexts refuse) makes no progress.
            case .wantRead, .wantWrite:
                throw RelayClientError(.tlsFailed, "TLS write: OpenSSL asked to wait, which memory buffers never need")
            case .failed(let failure):
                throw RelayClientError(failure, doing: "TLS write")
            }
        }
    }

    /// Queues close_notify.
    func sendCloseNotify() throws(RelayClientError) {
        try state.withLock { state throws(RelayClientError) in
            if let ended = state.ended { throw ended }
            state.connection.shutdown()
        }
    }

    /// Hands OpenSSL what the stream below delivered; empty means it ended.
    func receive(_ records: [UInt8]) {
        state.withLock { state in
            if records.isEmpty {
                state.connection.receiveCiphertextEnd()
            } else {
                records.withUnsafeBytes { state.connection.receiveCiphertext($0) }
            }
        }
    }

    var hasPendingRecords: Bool { state.withLock { $0.connection.pendingCiphertext > 0 } }

    /// Takes up to `maxBytes` of the records OpenSSL wrote, to send in this order.
    func takeRecords(maxBytes: Int) throws(RelayClientError) -> [UInt8] {
        try state.withLock { state throws(RelayClientError) -> [UInt8] in
            if let ended = state.ended { throw ended }
            return state.connection.takeCiphertext(maxBytes: maxBytes)
        }
    }
}
