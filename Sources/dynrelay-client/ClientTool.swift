import Dispatch
import Foundation
import RelayClient
import RelayCore

/// `dynrelay-client`: the client library as a command, for developers and ops (what
/// `curl -x`, `nc -X connect` and `openssl s_client -proxy` are otherwise).
enum ClientTool {
    static func main() -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let result = ExitCodeBox()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            result.set(await run(arguments, environment: ProcessInfo.processInfo.environment))
            done.signal()
        }
        done.wait()
        exit(result.value.rawValue)
    }

    static func run(_ arguments: [String], environment: [String: String]) async -> ClientToolExit {
        if let first = arguments.first, ["help", "--help", "-h"].contains(first) {
            // Asked for, the usage is the answer: stdout and success, as `dynrelay help` does.
            _ = ClientToolOutput.write(STDOUT_FILENO, Array((ClientToolInvocation.usage + "\n").utf8))
            return .success
        }
        let invocation: ClientToolInvocation
        do throws(ClientToolUsageError) {
            invocation = try ClientToolInvocation.parse(arguments, environment: environment)
        } catch {
            ClientToolOutput.error("dynrelay-client: \(error.message)\n\(ClientToolInvocation.usage)")
            return .usage
        }
        let credentials: ClientToolCredentials
        do throws(ClientToolUsageError) {
            credentials = try ClientToolCredentials(invocation)
        } catch {
            ClientToolOutput.error("dynrelay-client: \(error.message)")
            return .usage
        }
        switch invocation.command {
        case .fetch(let url): return await FetchCommand(invocation: invocation, credentials: credentials).run(url)
        case .tunnel(let host, let port): return await TunnelCommand(invocation: invocation, credentials: credentials).run(host, port)
        case .status: return await StatusCommand(invocation: invocation).run()
        case .config: return await ConfigCommand(invocation: invocation, credentials: credentials).run()
        }
    }

    /// Reports `error` on stderr with the relay's reason code, and returns its exit code.
    static func fail(_ error: RelayClientError) -> ClientToolExit {
        ClientToolOutput.error("dynrelay-client: \(error)" + (error.reasonCode.map { "\nreason: \($0)" } ?? ""))
        return ClientToolExit(error)
    }

    /// Reports `error` on stderr with the relay's reason code, and returns its exit code.
    static func fail(_ error: RelayHTTPError) -> ClientToolExit {
        let reason = error.reasonCode ?? error.transport?.reasonCode
        ClientToolOutput.error("dynrelay-client: \(error)" + (reason.map { "\nreason: \($0)" } ?? ""))
        return ClientToolExit(error)
    }
}

/// The exit code, set once by the task that runs the command.
private final class ExitCodeBox: @unchecked Sendable {  // written before the semaphore signals, read after
    private(set) var value = ClientToolExit.protocolError

    func set(_ code: ClientToolExit) {
        value = code
    }
}
