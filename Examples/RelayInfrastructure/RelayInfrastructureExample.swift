// Checks that the proxy infrastructure is reachable before an app opens a socket: asks each
// relay for its status, then the first serving relay for the application configuration (the
// servers this user may reach).
//
//   DYNRELAY_RELAYS='https://relay1.corp.example:3129;priority=1,http://relay2.corp.example:3128;priority=2' \
//   DYNRELAY_RELAY_CA=/etc/ssl/corp-relay-ca.pem DYNRELAY_USER=alice DYNRELAY_PASSWORD=secret \
//   example-relay-infrastructure
import Foundation
import RelayClient
import RelayCore

@main
enum RelayInfrastructureExample {
    static func main() async {
        exit(await checkRelays())
    }
}

/// Prints each relay's status and the configuration of the first that serves; returns the exit status.
func checkRelays() async -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    let relays: [RelayEndpoint]
    do {
        relays = try RelayList.parse(environmentValue: environment["DYNRELAY_RELAYS"]
            ?? "https://relay1.corp.example:3129;priority=1,http://relay2.corp.example:3128;priority=2")
    } catch {
        print("bad DYNRELAY_RELAYS: \(error)")
        return 2
    }
    let infrastructure = RelayInfrastructure(relayTLS: ClientTLSOptions(caFile: environment["DYNRELAY_RELAY_CA"]))
    var serving: RelayEndpoint?
    for relay in relays.sorted(by: { $0.priority < $1.priority }) {
        do throws(RelayClientError) {
            let status = try await infrastructure.status(of: relay)  // no credentials needed
            print("\(relay): \(status.status) version=\(status.version) instance=\(status.instance)")
            if status.isServing, serving == nil { serving = relay }
        } catch {
            // relay-unreachable, relay-timeout, not-offered (another kind of proxy, such as squid)
            print("\(relay): \(error.code)")
        }
    }
    guard let serving else {
        print("no relay serves")
        return 1
    }
    let credentials = environment["DYNRELAY_USER"].map { ClientCredentials(user: $0, password: environment["DYNRELAY_PASSWORD"]) }
    do throws(RelayClientError) {
        let config = try await infrastructure.applicationConfig(from: serving, credentials: credentials)
        print("config from \(serving): \(String(decoding: config, as: UTF8.self))")
        return 0
    } catch {
        print("failed: \(error.code) status=\(error.httpStatus ?? 0) reason=\(error.reasonCode ?? "-")")
        return 1
    }
}
