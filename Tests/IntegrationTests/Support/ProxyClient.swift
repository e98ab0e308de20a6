import Foundation
import Glibc

/// A response read off a raw socket: status, headers, body.
struct RawResponse: Sendable {
    var status: Int
    var statusLine: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Raw HTTP/1.1 proxy client on a `TestSocket`: exactly the bytes the test writes reach the
/// relay, which curl would normalise away.
enum ProxyClient {
    /// Opens a connection to the relay and sends `CONNECT authority`; returns the socket
    /// and the response head (status 200 means the socket is now a tunnel).
    static func connect(relayPort: UInt16, authority: String) throws -> (TestSocket, RawResponse) {
        let socket = try TestSocket.connect(port: relayPort)
        try socket.write("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        let response = try readResponse(socket, bodyless: true)
        return (socket, response)
    }

    /// A tunnel that must be established; throws with the refusal otherwise.
    static func tunnel(relayPort: UInt16, authority: String) throws -> TestSocket {
        let (socket, response) = try connect(relayPort: relayPort, authority: authority)
        guard response.status == 200 else {
            throw HarnessError("CONNECT \(authority) answered \(response.statusLine): \(response.bodyText)")
        }
        return socket
    }

    /// Reads one response. `bodyless`: a 2xx answer to CONNECT has no body (RFC 9110 §9.3.6).
    /// Bodies: Content-Length, chunked, or until EOF.
    static func readResponse(_ socket: TestSocket, bodyless: Bool = false) throws -> RawResponse {
        guard let head = try socket.readHead() else {
            throw HarnessError("connection closed before a response head")
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        guard let statusLine = lines.first else { throw HarnessError("empty response head") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw HarnessError("bad status line '\(statusLine)'")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = RawResponse(status: status, statusLine: statusLine, headers: headers, body: [])
        if bodyless && (200..<300).contains(status) { return response }
        if let length = response.header("content-length").flatMap(Int.init) {
            response.body = try socket.readExactly(length)
        } else if response.header("transfer-encoding")?.lowercased() == "chunked" {
            while let line = try socket.readLine(), let size = Int(String(decoding: line, as: UTF8.self), radix: 16) {
                if size == 0 { _ = try socket.readLine(); break }
                response.body += try socket.readExactly(size)
                _ = try socket.readLine()
            }
        } else {
            response.body = try socket.readToEOF(limit: 1024 * 1024)
        }
        return response
    }

    /// A CONNECT tunnel and a connection to the relay's first static forward, both to the
    /// echo server on `echoPort`, each proven to relay (a `ping` comes back): two streams
    /// whose open rows are stored.
    static func relayingTunnelAndForward(_ relay: RelayProcess, echoPort: UInt16) throws -> (tunnel: TestSocket, forwarded: TestSocket) {
        let tunnel = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echoPort)")
        let forwarded = try TestSocket.connect(port: relay.forwardPorts[0])
        for socket in [tunnel, forwarded] {
            try socket.write("ping")
            guard try socket.readExactly(4) == Array("ping".utf8) else { throw HarnessError("the echo did not come back") }
        }
        return (tunnel, forwarded)
    }

    /// Sends `request` on a fresh connection and reads the answer; for refusals the relay
    /// must then close, which `expectClose` checks (bounded by the socket timeout).
    static func exchange(relayPort: UInt16, _ request: [UInt8]) throws -> (RawResponse, TestSocket) {
        let socket = try TestSocket.connect(port: relayPort)
        try socket.write(request)
        return (try readResponse(socket), socket)
    }

    static func exchange(relayPort: UInt16, _ request: String) throws -> (RawResponse, TestSocket) {
        try exchange(relayPort: relayPort, Array(request.utf8))
    }

    /// True when the peer closed (EOF or reset) within the socket timeout with nothing more
    /// than `allowing` stray bytes.
    static func closes(_ socket: TestSocket, allowing: Int = 0) -> Bool {
        var extra = 0
        while true {
            do {
                let chunk = try socket.read()
                if chunk.isEmpty { return true }
                extra += chunk.count
                if extra > allowing { return false }
            } catch let error as SocketError {
                return error.isReset
            } catch {
                return false
            }
        }
    }
}

/// curl, the real HTTP client: `-x` for forwarding, `-p` for CONNECT.
enum Curl {
    static var path: String { Subprocess.find("curl") ?? "/usr/bin/curl" }

    /// Runs curl with a hard `--max-time`; `--silent --show-error` keeps stderr for diagnosis.
    static func run(_ arguments: [String], input: Subprocess.Input = .none, maxTime: Int = 60,
                    environment: [String: String] = [:]) throws -> ProcessResult {
        let noProxies = ["http_proxy": "", "https_proxy": "", "HTTP_PROXY": "", "HTTPS_PROXY": "", "ALL_PROXY": "", "all_proxy": "", "no_proxy": "", "NO_PROXY": ""]
        return try Subprocess.run(path, ["--silent", "--show-error", "--max-time", "\(maxTime)", "--noproxy", ""] + arguments,
                           input: input, environment: noProxies.merging(environment) { _, new in new },
                           timeout: Double(maxTime + 15))
    }

    /// The header fields (lowercased names) of the last response in a `curl -D FILE` dump,
    /// skipping the proxy's `200 Connection established` of a `-p` tunnel.
    static func headers(fromDump dump: String) -> [String: String] {
        var result: [String: String] = [:]
        let blocks = dump.components(separatedBy: "\r\n\r\n").filter { $0.hasPrefix("HTTP/") }
        guard let last = blocks.last(where: { !$0.hasPrefix("HTTP/1.1 200 Connection established") && !$0.hasPrefix("HTTP/1.0 200 Connection established") }) else { return result }
        for line in last.components(separatedBy: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            result[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return result
    }
}
