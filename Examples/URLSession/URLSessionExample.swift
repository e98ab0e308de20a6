// An app that keeps URLSession. On Linux, FoundationNetworking (libcurl underneath) goes
// through dynrelay only when http_proxy / https_proxy name it:
//
//   http_proxy=http://alice:secret@relay1.corp.example:3128 \
//   https_proxy=http://alice:secret@relay1.corp.example:3128 \
//   example-urlsession https://app1.corp.example/profile
//
// With --proxy-dictionary RELAY-URL it sets connectionProxyDictionary instead, which
// FoundationNetworking on Linux ignores: the request goes straight to the server.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@main
enum URLSessionExample {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let configuration = URLSessionConfiguration.ephemeral
        if arguments.first == "--proxy-dictionary", arguments.count > 1,
           let relay = URLComponents(string: arguments[1]), let host = relay.host, let port = relay.port {
            // CFNetwork's keys (kCFNetworkProxiesHTTPEnable, ...), as Apple platforms read them.
            configuration.connectionProxyDictionary = [
                "HTTPEnable": 1, "HTTPProxy": host, "HTTPPort": port,
                "HTTPSEnable": 1, "HTTPSProxy": host, "HTTPSPort": port,
            ]
            arguments.removeFirst(2)
        }
        guard let url = URL(string: arguments.first ?? "https://app1.corp.example/profile") else {
            print("bad URL")
            exit(2)
        }
        let session = URLSession(configuration: configuration)
        do {
            let (data, response) = try await session.data(from: url)
            print("status: \((response as? HTTPURLResponse)?.statusCode ?? 0)")
            print(String(decoding: data, as: UTF8.self), terminator: "")
            exit(0)
        } catch let error as URLError {
            print("failed: URLError \(error.code.rawValue)")
            exit(1)
        } catch {
            print("failed: \(error)")
            exit(1)
        }
    }
}
