#!/usr/bin/env python3
"""bench/client's upload origin: reads each request's whole Content-Length body into one
reused buffer (nothing kept), then answers `200` with the byte count it read, so a client
that stopped early is seen. One thread per connection; loopback only.

usage: http-sink.py PORT
"""
import socket
import socketserver
import sys


class Sink(socketserver.BaseRequestHandler):
    def handle(self):
        conn = self.request
        buffer = bytearray(1 << 20)
        view = memoryview(buffer)
        pending = b""
        while True:
            while b"\r\n\r\n" not in pending:
                data = conn.recv(65536)
                if not data:
                    return
                pending += data
            head, _, pending = pending.partition(b"\r\n\r\n")
            length = None
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length is None:
                conn.sendall(b"HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            received = min(len(pending), length)
            pending = pending[received:]
            while received < length:
                count = conn.recv_into(view, min(len(buffer), length - received))
                if count == 0:
                    return
                received += count
            body = b"received %d\n" % received
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


if __name__ == "__main__":
    with Server(("127.0.0.1", int(sys.argv[1])), Sink) as server:
        server.serve_forever()
