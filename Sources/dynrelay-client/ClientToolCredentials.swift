import Glibc
import RelayClient
import RelayCore

/// The proxy and server credentials of a command line. With `--password-stdin` the proxy
/// password is stdin's first line (when `--proxy-user` is given) and the server password
/// the next; read byte by byte, so what follows on stdin stays for `tunnel`. A user without
/// a password, and no user at all, authenticate by Negotiate from the Kerberos credential
/// cache (`KRB5CCNAME`) if the relay asks.
struct ClientToolCredentials {
    let proxy: ClientCredentials
    let server: ClientCredentials?

    init(_ invocation: ClientToolInvocation) throws(ClientToolUsageError) {
        let negotiate = GSSNegotiateInitiator.factory(credentialCache: nil)
        var proxyPassword: String?
        var serverPassword: String?
        if invocation.passwordFromStdin {
            guard invocation.proxyUser != nil || invocation.serverUser != nil else {
                throw ClientToolUsageError(message: "--password-stdin needs --proxy-user or --server-user")
            }
            if invocation.proxyUser != nil { proxyPassword = try Self.readLine("the proxy password") }
            if invocation.serverUser != nil { serverPassword = try Self.readLine("the server password") }
        }
        if let user = invocation.proxyUser {
            proxy = ClientCredentials(user: user, password: proxyPassword, negotiate: negotiate)
        } else {
            proxy = ClientCredentials.kerberos(negotiate)
        }
        server = invocation.serverUser.map { ClientCredentials(user: $0, password: serverPassword, negotiate: negotiate) }
    }

    /// One line of stdin without its line end; at most 4 KiB.
    private static func readLine(_ what: String) throws(ClientToolUsageError) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 4096 {
            let count = read(STDIN_FILENO, &byte, 1)
            if count == 1 {
                if byte == UInt8(ascii: "\n") { break }
                line.append(byte)
            } else if count == 0 || errno != EINTR {
                guard !line.isEmpty else { throw ClientToolUsageError(message: "--password-stdin: no line for \(what)") }
                break
            }
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
    }
}
