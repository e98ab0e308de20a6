import Foundation

/// An app server for keep-alive over the relay's own TLS: Python on a loopback port that
/// speaks TLS to a client whose first byte is a handshake record and plain HTTP to any
/// other, keeps each connection open for up to ten requests, and answers each with a body
/// naming the connection and the request on it (`tls connection 1 request 2`): which upstream
/// link a request rode is then in the response itself.
enum KeepAliveTLSOrigin {
    private static let script = #"""
        import socket, ssl, sys, threading
        port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(16)

        def serve(connection, number):
            connection.settimeout(10)
            kind = "plain"
            if connection.recv(1, socket.MSG_PEEK) == b"\x16":
                connection = context.wrap_socket(connection, server_side=True)
                kind = "tls"
            pending = b""
            for request in range(1, 11):
                while b"\r\n\r\n" not in pending:
                    data = connection.recv(4096)
                    if not data:
                        return
                    pending += data
                pending = pending.split(b"\r\n\r\n", 1)[1]
                body = f"{kind} connection {number} request {request}\n".encode()
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

        for number in range(1, 1001):
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection, number), daemon=True).start()
        """#

    /// Starts it with the certificate and key it serves.
    static func start(cert: String, key: String) throws -> TLSAppServer {
        try TLSAppServer(executable: "/usr/bin/python3") { port in ["-c", script, "\(port)", cert, key] }
    }
}
