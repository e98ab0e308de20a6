// Sends one line to HOST PORT through the relays, half-closes, and prints the whole reply.
//
//   DYNRELAY_RELAYS='https://relay1.corp.example:3129;priority=1,http://relay2.corp.example:3128;priority=2' \
//   DYNRELAY_RELAY_CA=/etc/ssl/corp-relay-ca.pem DYNRELAY_USER=alice DYNRELAY_PASSWORD=secret \
//   example-relay-tunnel app1.corp.example 7000 hello
import Foundation
import RelayClient
import RelayCore

@main
enum RelayTunnelExample {
    static func main() async {
        let arguments = CommandLine.arguments
        let host = arguments.count > 1 ? arguments[1] : "app1.corp.example"
        let port = arguments.count > 2 ? UInt16(arguments[2]) ?? 7000 : 7000
        let line = arguments.count > 3 ? arguments[3] : "hello"
        exit(await exchange(line, host: host, port: port))
    }
}

/// Opens a tunnel with failover between the relays of `DYNRELAY_RELAYS`; returns the exit status.
func exchange(_ line: String, host: String, port: UInt16) async -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    let relays: RelaySelector
    do {
        // Priority 1 first, at random among equals; a relay that fails sits out a back-off.
        relays = RelaySelector(try RelayList.parse(environmentValue: environment["DYNRELAY_RELAYS"]
            ?? "https://relay1.corp.example:3129;priority=1,http://relay2.corp.example:3128;priority=2"))
    } catch {
        print("bad DYNRELAY_RELAYS: \(error)")
        return 2
    }
    var options = RelayTunnelOptions(relays: relays)
    options.proxyCredentials = environment["DYNRELAY_USER"].map {
        ClientCredentials(user: $0, password: environment["DYNRELAY_PASSWORD"])
    }
    options.relayTLS = ClientTLSOptions(caFile: environment["DYNRELAY_RELAY_CA"])  // https:// relays

    let tunnel = RelayTunnel(options: options)
    do throws(RelayClientError) {
        try await tunnel.connect(host: host, port: port)
        print("\(tunnel.state) through \(tunnel.relay.map { "\($0)" } ?? "?")")
        try await tunnel.write(Array((line + "\n").utf8))
        try await tunnel.shutdownWrite()  // half-close: the server sees EOF, its reply still arrives
        var reply: [UInt8] = []
        while case let bytes = try await tunnel.read(), !bytes.isEmpty {
            reply += bytes
        }
        await tunnel.close()
        print("reply: \(String(decoding: reply, as: UTF8.self))", terminator: "")
        return 0
    } catch {
        await tunnel.close()
        switch error.code {
        case .relayRefused:      // the destination's answer, the same on every relay: no failover
            print("the relay refused \(host):\(port)")
        case .proxyAuthFailed:   // credentials refused once are not sent again
            print("the relay refused the credentials")
        case .relayUnreachable, .relayTimeout:  // every relay was tried
            print("no relay could be reached")
        default:
            print("the tunnel failed")
        }
        print("failed: \(error.code) status=\(error.httpStatus ?? 0) reason=\(error.reasonCode ?? "-")")
        return 1
    }
}
