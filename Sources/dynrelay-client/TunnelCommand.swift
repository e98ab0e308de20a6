import Foundation
import Glibc
import RelayClient
import RelayCore

/// `tunnel HOST:PORT`: stdin into the tunnel, the tunnel to stdout. EOF on stdin half-closes
/// the tunnel; the command ends once the server has closed its side.
struct TunnelCommand {
    let invocation: ClientToolInvocation
    let credentials: ClientToolCredentials

    func run(_ host: String, _ port: UInt16) async -> ClientToolExit {
        let options = RelayTunnelOptions(
            relays: RelaySelector(invocation.relays), proxyCredentials: credentials.proxy,
            relayTLS: ClientTLSOptions(caFile: invocation.relayCAFile),
            serverTLS: invocation.endToEndTLS
                ? ClientTLSOptions(versions: invocation.tlsVersions ?? .default, caFile: invocation.caFile) : nil)
        let tunnel = RelayTunnel(options: options)
        do throws(RelayClientError) {
            try await tunnel.connect(host: host, port: port)
        } catch {
            return ClientTool.fail(error)
        }
        let upload = Task {
            do throws(RelayClientError) {
                for await chunk in StandardInput.chunks() { try await tunnel.write(chunk) }
                try await tunnel.shutdownWrite()
            } catch where error.code != .closed && error.code != .cancelled {
                ClientToolOutput.error("dynrelay-client: sending: \(error)")
            } catch {}
        }
        defer { upload.cancel() }
        while true {
            let bytes: [UInt8]
            do throws(RelayClientError) {
                bytes = try await tunnel.read()
            } catch {
                await tunnel.close()
                return ClientTool.fail(error)
            }
            if bytes.isEmpty { break }
            guard ClientToolOutput.write(STDOUT_FILENO, bytes) else { break }
        }
        await tunnel.close()
        return .success
    }
}

/// Stdin as chunks, read on a thread of its own: a blocking read must not hold one of the
/// few threads Swift concurrency runs tasks on.
enum StandardInput {
    static func chunks() -> AsyncStream<[UInt8]> {
        AsyncStream(bufferingPolicy: .bufferingOldest(4)) { continuation in
            let thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    // A full buffer drops nothing: wait until the tunnel has taken a chunk.
                    while case .dropped = continuation.yield(Array(buffer[..<count])) { usleep(1000) }
                }
                continuation.finish()
            }
            thread.start()
        }
    }
}
