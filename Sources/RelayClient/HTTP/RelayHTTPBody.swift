import Glibc
import RelayCore

/// A request body: bytes in memory, a file read as it is sent, or an async sequence of
/// chunks read once. A known length goes out as `Content-Length`, an unknown one chunked;
/// neither a file nor a stream is ever held whole in memory.
public struct RelayHTTPBody: Sendable {
    /// Writes the body's bytes, piece by piece, through `write`.
    typealias Producer = @Sendable (_ write: ([UInt8]) async throws(RelayHTTPError) -> Void) async throws(RelayHTTPError) -> Void

    /// Bytes the body is read in from a file.
    static let fileReadSize = 256 * 1024

    /// The length in bytes when known up front.
    public let length: UInt64?
    /// Whether the body can be sent again (after a challenge or a redirect, on another relay).
    public let kind: RequestBodyKind
    let produce: Producer

    private init(length: UInt64?, kind: RequestBodyKind, produce: @escaping Producer) {
        self.length = length
        self.kind = kind
        self.produce = produce
    }

    /// No body.
    public static let empty = RelayHTTPBody(length: nil, kind: .none) { _ throws(RelayHTTPError) in }

    /// These bytes.
    public static func bytes(_ bytes: [UInt8]) -> RelayHTTPBody {
        RelayHTTPBody(length: UInt64(bytes.count), kind: .replayable) { write throws(RelayHTTPError) in
            if !bytes.isEmpty { try await write(bytes) }
        }
    }

    /// The file at `path`, read as it is sent; its size at this call is its `Content-Length`.
    public static func file(path: String) throws(RelayHTTPError) -> RelayHTTPBody {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw RelayHTTPError(.invalidRequest, "cannot read body file \(path): \(String(cString: strerror(errno)))")
        }
        let size = UInt64(info.st_size)
        return RelayHTTPBody(length: size, kind: .replayable) { write throws(RelayHTTPError) in
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw RelayHTTPError(.invalidRequest, "cannot open body file \(path)") }
            defer { close(fd) }
            var left = size
            while left > 0 {
                // Each piece is read into an array of its own, which goes to the stream as
                // it is: no copy between the file and the socket beyond the kernel's.
                var count = 0
                let piece = [UInt8](unsafeUninitializedCapacity: Int(min(UInt64(fileReadSize), left))) { buffer, initialized in
                    count = read(fd, buffer.baseAddress, buffer.count)
                    initialized = max(count, 0)
                }
                if count < 0, errno == EINTR { continue }
                // A file that shrank while sent would leave the announced length unmet.
                guard count > 0 else { throw RelayHTTPError(.invalidRequest, "body file \(path) ended early") }
                left -= UInt64(count)
                try await write(piece)
            }
        }
    }

    /// The chunks of `sequence`, read once as they are sent: `length` when the caller knows
    /// it (the sequence must then yield exactly that many bytes), else chunked.
    public static func stream<S: AsyncSequence & Sendable>(_ sequence: S, length: UInt64? = nil) -> RelayHTTPBody
        where S.Element == [UInt8] {
        RelayHTTPBody(length: length, kind: .oneShot) { write throws(RelayHTTPError) in
            var sent: UInt64 = 0
            do {
                for try await chunk in sequence {
                    sent += UInt64(chunk.count)
                    if let length, sent > length { throw RelayHTTPError(.invalidRequest, "body stream is longer than its length") }
                    if !chunk.isEmpty { try await write(chunk) }
                }
            } catch let error as RelayHTTPError {
                throw error
            } catch {
                throw RelayHTTPError(.invalidRequest, "body stream failed: \(error)")
            }
            if let length, sent != length { throw RelayHTTPError(.invalidRequest, "body stream is shorter than its length") }
        }
    }
}
