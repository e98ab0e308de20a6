import Glibc
import RelayClient
import RelayCore

/// `config`: the application configuration as JSON, from the first relay in priority
/// order that can be reached.
struct ConfigCommand {
    let invocation: ClientToolInvocation
    let credentials: ClientToolCredentials

    func run() async -> ClientToolExit {
        let infrastructure = RelayInfrastructure(relayTLS: ClientTLSOptions(caFile: invocation.relayCAFile))
        var last: RelayClientError?
        for relay in StatusCommand.byPriority(invocation.relays) {
            do throws(RelayClientError) {
                let document = try await infrastructure.applicationConfig(from: relay, credentials: credentials.proxy)
                ClientToolOutput.write(STDOUT_FILENO, document + (document.last == UInt8(ascii: "\n") ? [] : [10]))
                return .success
            } catch where error.code == .relayUnreachable || error.code == .relayTimeout {
                last = error
            } catch {
                return ClientTool.fail(error)
            }
        }
        return last.map(ClientTool.fail) ?? .relayUnreachable
    }
}
