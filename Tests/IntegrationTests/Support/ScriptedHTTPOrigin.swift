import Foundation

/// An app server in Python whose every path behaves exactly one way, for the HTTP client's
/// tests: keep-alive bodies naming the connection and request (`conn 1 req 2`), chunked
/// and close-delimited bodies, a bad chunk size, a Content-Length shorter than the body, a
/// reset mid-body, cookies, redirects, Basic auth, and large bodies both ways.
enum ScriptedHTTPOrigin {
    static let basicUser = "bob"
    static let basicPassword = "builder"

    private static let script = #"""
        import base64, hashlib, re, socket, ssl, struct, sys, threading, time
        port = int(sys.argv[1])
        context = None
        if len(sys.argv) > 3:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        expected = "Basic " + base64.b64encode(b"bob:builder").decode()

        def digest_ok(method, value, algorithm):
            if not value.startswith("Digest "):
                return False
            p = dict((k, a or b) for k, a, b in re.findall(r'(\w+)=(?:"([^"]*)"|([^\s,]*))', value[7:]))
            if p.get("algorithm", "MD5") != algorithm:
                return False
            h = {"MD5": hashlib.md5, "SHA-256": hashlib.sha256}[algorithm]
            if p.get("username") != "bob" or p.get("nonce") != "n0nce" or p.get("qop") != "auth":
                return False
            H = lambda text: h(text.encode()).hexdigest()
            ha1 = H("bob:origin:builder")
            ha2 = H(method + ":" + p.get("uri", ""))
            return p.get("response") == H(":".join([ha1, p["nonce"], p.get("nc", ""), p.get("cnonce", ""), "auth", ha2]))

        def reply(c, status, body, headers=()):
            head = "HTTP/1.1 %s\r\nContent-Length: %d\r\n" % (status, len(body))
            for h in headers:
                head += h + "\r\n"
            c.sendall(head.encode() + b"\r\n" + body)

        def read_body(c, pending, fields):
            total = 0
            if "content-length" in fields:
                left = int(fields["content-length"])
                take = min(left, len(pending)); pending = pending[take:]; left -= take; total += take
                while left > 0:
                    data = c.recv(min(left, 1 << 20))
                    if not data: raise EOFError
                    left -= len(data); total += len(data)
                return total, pending
            if fields.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    while b"\r\n" not in pending:
                        data = c.recv(65536)
                        if not data: raise EOFError
                        pending += data
                    line, pending = pending.split(b"\r\n", 1)
                    size = int(line.split(b";")[0], 16)
                    while len(pending) < size + 2:
                        data = c.recv(1 << 20)
                        if not data: raise EOFError
                        pending += data
                    total += size; pending = pending[size + 2:]
                    if size == 0: return total, pending
            return 0, pending

        def serve(c, number):
            c.settimeout(30)
            if context is not None and c.recv(1, socket.MSG_PEEK) == b"\x16":
                c = context.wrap_socket(c, server_side=True)
            pending = b""
            for request in range(1, 101):
                while b"\r\n\r\n" not in pending:
                    data = c.recv(65536)
                    if not data: return
                    pending += data
                head, pending = pending.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ")
                fields = {}
                for line in lines[1:]:
                    name, value = line.split(":", 1)
                    fields[name.strip().lower()] = value.strip()
                size, pending = read_body(c, pending, fields)
                path = target.split("?")[0]
                if path == "/hello":
                    reply(c, "200 OK", b"conn %d req %d" % (number, request))
                elif path == "/chunked":
                    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\n\r\n")
                elif path == "/badchunk":
                    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\nxx\r\n0\r\n\r\n")
                elif path == "/short":
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforge")
                elif path == "/close":
                    c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
                    c.close(); return
                elif path == "/reset":
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
                    time.sleep(0.3)  # the head reaches the client before the reset does
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    c.close(); return
                elif path == "/setcookie":
                    reply(c, "200 OK", b"set", ["Set-Cookie: mine=1; Path=/", "Set-Cookie: other=2; Domain=other.example",
                                                 "Set-Cookie: suffix=3; Domain=com"])
                elif path == "/cookie":
                    reply(c, "200 OK", fields.get("cookie", "none").encode())
                elif path == "/redirect":
                    location = target.split("to=", 1)[1]
                    reply(c, "302 Found", b"moved", ["Location: " + location])
                elif path == "/loop":
                    reply(c, "302 Found", b"again", ["Location: /loop"])
                elif path == "/echo-auth":
                    reply(c, "200 OK", fields.get("authorization", "none").encode())
                elif path == "/basic":
                    if fields.get("authorization") == expected:
                        reply(c, "200 OK", b"welcome bob")
                    else:
                        reply(c, "401 Unauthorized", b"who are you", ['WWW-Authenticate: Basic realm="origin"'])
                elif path in ("/digest", "/digest-md5"):
                    # /digest offers both and accepts only SHA-256: the client must pick the stronger.
                    algorithm = "MD5" if path == "/digest-md5" else "SHA-256"
                    if digest_ok(method, fields.get("authorization", ""), algorithm):
                        reply(c, "200 OK", b"welcome digest bob")
                    else:
                        offers = ["SHA-256", "MD5"] if algorithm == "SHA-256" else ["MD5"]
                        reply(c, "401 Unauthorized", b"who are you",
                              ['WWW-Authenticate: Digest realm="origin", qop="auth", algorithm=%s, nonce="n0nce"' % a
                               for a in offers])
                elif path == "/bye":
                    reply(c, "200 OK", b"conn %d req %d" % (number, request))
                    time.sleep(0.2)
                    c.close(); return
                elif path == "/big":
                    total = int(target.split("n=", 1)[1])
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
                    block = b"z" * (1 << 20)
                    while total > 0:
                        piece = block[:min(total, len(block))]
                        c.sendall(piece); total -= len(piece)
                elif path == "/upload":
                    reply(c, "200 OK", b"%s %d" % (method.encode(), size))
                else:
                    reply(c, "404 Not Found", b"no such path")

        number = 0
        while True:
            c, _ = listener.accept()
            number += 1
            threading.Thread(target=serve, args=(c, number), daemon=True).start()
        """#

    /// Starts it on a free loopback port; with `cert` and `key` it also speaks TLS to a
    /// client whose first byte is a handshake record. The readiness probe is connection 1.
    static func start(cert: String? = nil, key: String? = nil) throws -> TLSAppServer {
        try TLSAppServer(executable: "/usr/bin/python3") { port in
            ["-c", script, "\(port)"] + (cert.flatMap { cert in key.map { [cert, $0] } } ?? [])
        }
    }
}

/// The scripted origin speaking TLS too, with a certificate for `localhost` and 127.0.0.1
/// from a throwaway CA.
struct TLSScriptedOrigin {
    let pki: TestPKI
    let server: TLSAppServer
    var port: UInt16 { server.port }
    /// The CA to trust for it.
    var caFile: String { pki.caFile }

    init() throws {
        pki = try TestPKI()
        let identity = try pki.issue("origin", names: TestPKI.loopbackNames)
        server = try ScriptedHTTPOrigin.start(cert: identity.cert, key: identity.key)
    }

    func stop() {
        server.stop()
    }
}
