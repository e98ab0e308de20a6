// GDHttpRequest's (XMLHttpRequest's) shape: open, setRequestHeader, send, onReadyStateChange.
// GETs URL through the relays and prints each state, then the status and the body.
//
//   DYNRELAY_RELAYS='http://relay1.corp.example:3128' DYNRELAY_USER=alice DYNRELAY_PASSWORD=secret \
//   example-http-request http://app1.corp.example:8080/hello
import Dispatch
import Foundation
import RelayClient
import RelayCore

@main
enum HTTPRequestExample {
    static func main() {
        let arguments = CommandLine.arguments
        let url = arguments.count > 1 ? arguments[1] : "http://app1.corp.example:8080/hello"
        let environment = ProcessInfo.processInfo.environment
        let relays: [RelayEndpoint]
        do {
            relays = try RelayList.parse(environmentValue: environment["DYNRELAY_RELAYS"] ?? "http://relay1.corp.example:3128")
        } catch {
            print("bad DYNRELAY_RELAYS: \(error)")
            exit(2)
        }
        let client = RelayHTTPClient(configuration: RelayHTTPClientConfiguration(
            relays: relays,
            proxyCredentials: environment["DYNRELAY_USER"].map {
                ClientCredentials(user: $0, password: environment["DYNRELAY_PASSWORD"])
            }))
        let request = RelayHTTPRequest(client: client, callbackQueue: DispatchQueue(label: "example.callbacks"))
        let done = DispatchSemaphore(value: 0)
        request.onReadyStateChange = { request, state in
            print("readyState: \(state)")
            guard state == .DONE else { return }
            if let error = request.error {
                // status 0 and a RelayHTTPError: relay-refused 403 not-registered, proxy-auth-failed 407, ...
                print("failed: \(error.code) status=\(error.httpStatus ?? 0) reason=\(error.reasonCode ?? "-")")
            } else {
                print("status: \(request.status) \(request.statusText)")
                print("Content-Type: \(request.getResponseHeader("Content-Type") ?? "-")")
                print(request.responseText ?? "", terminator: "")
            }
            done.signal()
        }
        guard request.open(method: "GET", url: url) else {  // async by default
            print("cannot open \(url): \(request.error.map { "\($0)" } ?? "")")
            exit(2)
        }
        request.setRequestHeader("Accept", "text/plain")
        request.send()
        done.wait()
        exit(request.error == nil && request.status == 200 ? 0 : 1)
    }
}
