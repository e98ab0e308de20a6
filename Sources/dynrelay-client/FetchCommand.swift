import Glibc
import RelayClient
import RelayCore

/// `fetch URL`: the body to stdout (or `-o`), the head too with `-i`; 0 on a 2xx.
struct FetchCommand {
    let invocation: ClientToolInvocation
    let credentials: ClientToolCredentials

    func run(_ address: String) async -> ClientToolExit {
        guard let url = try? ClientURL(parsing: address) else { return .usage }
        var headers = HTTPHeaders()
        for header in invocation.headers {
            let colon = header.firstIndex(of: ":")!
            headers.append(name: String(header[..<colon]),
                           value: header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = RelayHTTPBody.empty
        if let file = invocation.dataFile {
            do throws(RelayHTTPError) {
                body = try RelayHTTPBody.file(path: file)
            } catch {
                ClientToolOutput.error("dynrelay-client: --data-binary @\(file): \(error.message)")
                return .localFile
            }
        }
        let output: Int32
        if let file = invocation.outputFile {
            output = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard output >= 0 else {
                ClientToolOutput.error("dynrelay-client: -o \(file): \(String(cString: strerror(errno)))")
                return .localFile
            }
        } else {
            output = STDOUT_FILENO
        }
        defer { if output != STDOUT_FILENO { close(output) } }
        let configuration = RelayHTTPClientConfiguration(
            relays: invocation.relays, proxyCredentials: credentials.proxy, serverCredentials: credentials.server,
            tls: ClientTLSOptions(versions: invocation.tlsVersions ?? .default, caFile: invocation.caFile),
            relayTLS: ClientTLSOptions(caFile: invocation.relayCAFile),
            cookies: true, cookieFile: invocation.cookieJar)
        let client = RelayHTTPClient(configuration: configuration)
        defer { client.closeIdleConnections() }
        let request = RelayHTTPClientRequest(method: invocation.method ?? (invocation.dataFile == nil ? "GET" : "POST"),
                                             url: url, headers: headers, body: body, serverCredentials: credentials.server)
        do throws(RelayHTTPError) {
            let response = try await client.execute(request)
            if invocation.includeHeaders {
                var head = "HTTP/1.1 \(response.status) \(response.reason)\r\n"
                for header in response.headers { head += "\(header.name): \(header.value)\r\n" }
                ClientToolOutput.write(output, Array((head + "\r\n").utf8))
            }
            do {
                for try await chunk in response.body {
                    guard ClientToolOutput.write(output, chunk) else {
                        await response.body.cancel()
                        ClientToolOutput.error("dynrelay-client: cannot write the body: \(String(cString: strerror(errno)))")
                        return .localFile
                    }
                }
            } catch let error as RelayHTTPError {
                return ClientTool.fail(error)
            } catch {
                ClientToolOutput.error("dynrelay-client: \(error)")
                return .protocolError
            }
            guard (200..<300).contains(response.status) else {
                ClientToolOutput.error("dynrelay-client: \(url.authority) answered \(response.status) \(response.reason)")
                return .httpStatus
            }
            return .success
        } catch {
            return ClientTool.fail(error)
        }
    }
}
