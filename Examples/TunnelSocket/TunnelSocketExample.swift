// GDSocket's shape: a delegate told onOpen, onRead, onClose, onErr. Sends one line to HOST PORT
// through the relays, prints the first line that comes back, and disconnects.
//
//   DYNRELAY_RELAYS='http://relay1.corp.example:3128,http://relay2.corp.example:3128' \
//   DYNRELAY_USER=alice DYNRELAY_PASSWORD=secret example-tunnel-socket app1.corp.example 7000 hello
import Dispatch
import Foundation
import RelayClient
import RelayCore
import Synchronization

@main
enum TunnelSocketExample {
    static func main() {
        let arguments = CommandLine.arguments
        let host = arguments.count > 1 ? arguments[1] : "app1.corp.example"
        let port = arguments.count > 2 ? UInt16(arguments[2]) ?? 7000 : 7000
        let line = arguments.count > 3 ? arguments[3] : "hello"
        let environment = ProcessInfo.processInfo.environment
        let relays: RelaySelector
        do {
            relays = RelaySelector(try RelayList.parse(environmentValue: environment["DYNRELAY_RELAYS"]
                ?? "http://relay1.corp.example:3128,http://relay2.corp.example:3128"))
        } catch {
            print("bad DYNRELAY_RELAYS: \(error)")
            exit(2)
        }
        let credentials = environment["DYNRELAY_USER"].map {
            ClientCredentials(user: $0, password: environment["DYNRELAY_PASSWORD"])
        }
        let socket = TunnelSocket(host: host, port: port,
                                  options: RelayTunnelOptions(relays: relays, proxyCredentials: credentials))
        let delegate = LineExchange(line: line)
        socket.delegate = delegate  // held weakly, as GDSocket does: keep your own reference
        socket.connect()
        delegate.finished.wait()
        exit(delegate.status)
    }
}

/// Writes `line` once the socket opens and disconnects after the first line read back.
/// The socket calls it on its own serial queue, one call at a time.
final class LineExchange: TunnelSocketDelegate {
    let line: String
    let finished = DispatchSemaphore(value: 0)
    private let received = Mutex<[UInt8]>([])
    private let exitStatus = Mutex<Int32>(1)

    init(line: String) {
        self.line = line
    }

    var status: Int32 { exitStatus.withLock { $0 } }

    func onOpen(_ socket: TunnelSocket) {
        print("open through \(socket.tunnel.relay.map { "\($0)" } ?? "?")")
        socket.writeStream.write(line + "\n")
        socket.write()
    }

    func onRead(_ socket: TunnelSocket) {
        let bytes = socket.readStream.unreadData()
        let soFar = received.withLock { $0 += bytes; return $0 }
        guard soFar.last == UInt8(ascii: "\n") else { return }
        print("read: \(String(decoding: soFar, as: UTF8.self))", terminator: "")
        exitStatus.withLock { $0 = 0 }
        socket.disconnect()  // onClose follows
    }

    func onClose(_ socket: TunnelSocket) {
        print("closed")
        finished.signal()
    }

    func onErr(_ socket: TunnelSocket, error: RelayClientError) {
        // The last call: the tunnel did not open (relay-refused, proxy-auth-failed, ...) or broke.
        print("failed: \(error.code) status=\(error.httpStatus ?? 0) reason=\(error.reasonCode ?? "-")")
        finished.signal()
    }
}
