import RelayIO

/// How a proxy connection's upstream is carried. A tunnel needs the plain socket's
/// descriptor to splice, so only `.plain` can become one: the relay's own TLS never
/// reaches a tunnel by construction.
enum UpstreamTransport {
    case plain(StreamSocket)
    /// The relay's own TLS to the app server.
    case tls(TLSStream)

    /// The stream requests and responses are read and written on.
    var stream: any RelayStream {
        switch self {
        case .plain(let socket): socket
        case .tls(let stream): stream
        }
    }
}
