#if canImport(Glibc)
import Foundation
import CBenchOpenSSL

/// The TLS upstream of bench/tls (`serve --tls`): the same sink/echo protocol as
/// `EchoServer`, inside TLS. A thread per connection with blocking sockets: the relay under
/// test is what is measured, and blocking OpenSSL calls keep this side simple and correct.
/// A connection may open with one cleartext `P` before its ClientHello (the uninspected
/// reference tunnels of bench/tls); the byte is dropped.
enum TLSEchoServer {
    static func run(_ options: Options) throws {
        let host = try options.string("host", default: "127.0.0.1")
        let port = UInt16(try options.int("port"))
        let context = try TLSContext.server(certificate: try options.string("cert"), key: try options.string("key"))
        let listener = try EchoServer.listen(on: Endpoint(host: host, port: port))
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) & ~O_NONBLOCK)
        printError("relaybench: serving TLS on \(host):\(port)\n")
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                // EMFILE and friends: wait for descriptors to free up instead of spinning.
                usleep(10_000)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { serve(fd, context: context) }
            // Idle tunnels park thousands of these threads; OpenSSL needs far less stack.
            thread.stackSize = 256 << 10
            thread.start()
        }
    }

    private static func serve(_ fd: Int32, context: TLSContext) {
        defer { close(fd) }
        var first: UInt8 = 0
        let peeked = recv(fd, &first, 1, Int32(MSG_PEEK))
        guard peeked == 1 else { return }
        if first == UInt8(ascii: "P") { _ = recv(fd, &first, 1, 0) }
        guard let ssl = SSL_new(context.context) else { return }
        defer { SSL_free(ssl) }
        guard SSL_set_fd(ssl, fd) == 1, SSL_accept(ssl) == 1 else {
            ERR_clear_error()
            return
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 64)
        defer { buffer.deallocate() }
        var sink: Bool?
        var sunk = 0
        while true {
            let n = Int(SSL_read(ssl, buffer.baseAddress!, Int32(buffer.count)))
            guard n > 0 else { break }
            var payload = n
            if sink == nil {
                sink = buffer[0] == UInt8(ascii: "S")
                if sink == true { payload -= 1 }
            }
            if sink == true {
                let acks = (sunk + payload) / EchoServer.ackInterval - sunk / EchoServer.ackInterval
                sunk += payload
                if acks > 0 {
                    let reply = [UInt8](repeating: UInt8(ascii: "K"), count: acks)
                    guard SSL_write(ssl, reply, Int32(acks)) == Int32(acks) else { break }
                }
            } else {
                guard SSL_write(ssl, buffer.baseAddress!, Int32(n)) == Int32(n) else { break }
            }
        }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
    }
}
#endif
