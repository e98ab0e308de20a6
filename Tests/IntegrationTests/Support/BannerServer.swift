import Foundation

/// A server that speaks first, as SSH and SMTP do: sends `banner` as soon as it accepts, then
/// echoes whatever comes until the client's FIN.
final class BannerServer: UpstreamServer, @unchecked Sendable {
    static let banner = Array("SSH-2.0-dynrelay_test\r\n".utf8)

    override init() throws {
        try super.init()
        start()
    }

    override func handle(_ socket: TestSocket, connection: Int) {
        guard (try? socket.write(Self.banner)) != nil else { return }
        while let chunk = try? socket.read(), !chunk.isEmpty {
            if (try? socket.write(chunk)) == nil { break }
        }
        socket.shutdownWrite()
    }
}
