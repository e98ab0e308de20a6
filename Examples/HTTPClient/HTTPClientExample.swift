// GETs URL through the relays and prints the status and the body. http:// URLs go to the
// relay as absolute-form requests; https:// URLs through CONNECT, TLS to the server end to end.
//
//   DYNRELAY_RELAYS='https://relay1.corp.example:3129;priority=1,http://relay2.corp.example:3128;priority=2' \
//   DYNRELAY_RELAY_CA=/etc/ssl/corp-relay-ca.pem DYNRELAY_USER=alice DYNRELAY_PASSWORD=secret \
//   example-http-client https://app1.corp.example/profile
import Foundation
import RelayClient
import RelayCore

@main
enum HTTPClientExample {
    static func main() async {
        let arguments = CommandLine.arguments
        exit(await fetch(arguments.count > 1 ? arguments[1] : "https://app1.corp.example/profile"))
    }
}

/// Fetches `url`; returns the exit status.
func fetch(_ url: String) async -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    let relays: [RelayEndpoint]
    do {
        relays = try RelayList.parse(environmentValue: environment["DYNRELAY_RELAYS"]
            ?? "https://relay1.corp.example:3129;priority=1,http://relay2.corp.example:3128;priority=2")
    } catch {
        print("bad DYNRELAY_RELAYS: \(error)")
        return 2
    }
    let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
        relays: relays,
        proxyCredentials: environment["DYNRELAY_USER"].map {
            ClientCredentials(user: $0, password: environment["DYNRELAY_PASSWORD"])
        },
        tls: ClientTLSOptions(caFile: environment["APP_CA"]),               // the app server, end to end
        relayTLS: ClientTLSOptions(caFile: environment["DYNRELAY_RELAY_CA"])))  // https:// relays
    do throws(RelayHTTPError) {
        let response = try await client.execute("GET", url)
        let body = try await response.body.collect(upTo: 1 << 20)
        print("status: \(response.status)")
        print(String(decoding: body, as: UTF8.self), terminator: "")
        return (200..<300).contains(response.status) ? 0 : 1
    } catch {
        switch error.code {
        case .relayRefused:     // the relay's own refusal, never the server's answer
            print("the relay refused \(url)")
        case .proxyAuthFailed:
            print("the relay refused the credentials")
        case .transport:        // the connection failed: relay-unreachable, tls-cert-untrusted, ...
            print("transport: \(error.transport.map { "\($0.code)" } ?? "-")")
        default:
            print("the request failed")
        }
        print("failed: \(error.code) status=\(error.httpStatus ?? 0) reason=\(error.reasonCode ?? "-")")
        return 1
    }
}
