import Glibc
import RelayClient
import RelayCore

/// `status`: each relay's status in priority order, and which would be used: a serving
/// relay of the best priority that has one (the library picks at random among equals).
/// Non-zero when none serves.
struct StatusCommand {
    let invocation: ClientToolInvocation

    func run() async -> ClientToolExit {
        let infrastructure = RelayInfrastructure(relayTLS: ClientTLSOptions(caFile: invocation.relayCAFile))
        var serving: [RelayEndpoint] = []
        var failures: [ClientToolExit] = []
        for relay in Self.byPriority(invocation.relays) {
            var line = "\(relay.url.scheme.rawValue)://\(relay.url.authority) priority=\(relay.priority): "
            do throws(RelayClientError) {
                let status = try await infrastructure.status(of: relay)
                line += "\(status.status) version=\(status.version) instance=\(status.instance)"
                if status.isServing { serving.append(relay) } else { failures.append(.relayUnreachable) }
            } catch {
                line += "\(error.code) (\(error.message))"
                failures.append(ClientToolExit(error))
            }
            ClientToolOutput.write(STDOUT_FILENO, Array((line + "\n").utf8))
        }
        guard let best = serving.first else {
            ClientToolOutput.write(STDOUT_FILENO, Array("would use: none\n".utf8))
            return failures.allSatisfy { $0 == .notOffered } ? .notOffered : .relayUnreachable
        }
        let peers = serving.filter { $0.priority == best.priority }.count
        let choice = peers > 1 ? " (one of \(peers) serving at priority \(best.priority), picked at random)" : ""
        ClientToolOutput.write(STDOUT_FILENO,
                               Array("would use: \(best.url.scheme.rawValue)://\(best.url.authority)\(choice)\n".utf8))
        return .success
    }

    /// Highest priority first; the order given among equals.
    static func byPriority(_ relays: [RelayEndpoint]) -> [RelayEndpoint] {
        relays.enumerated().sorted { ($0.element.priority, $0.offset) < ($1.element.priority, $1.offset) }.map(\.element)
    }
}
