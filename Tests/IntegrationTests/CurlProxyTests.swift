import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// Real curl through the relay: `-x` (absolute-form forwarding) and `-p` (CONNECT).
    @Suite("curl -x / -p")
    struct CurlProxyTests {
        @Test("curl -x: forwarded in origin-form, hop-by-hop headers gone, Via added, audited")
        func forwardsAbsoluteForm() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let size = 100_000
            let dump = relay.directory.path + "/headers"
            let result = try Curl.run([
                "-x", "http://127.0.0.1:\(relay.proxyPort)", "-U", "alice:secret",
                "-H", "Connection: X-Hop", "-H", "X-Hop: 1", "-H", "X-End-To-End: kept",
                "-D", dump, "http://127.0.0.1:\(origin.port)/bytes/\(size)?q=1",
            ])
            #expect(result.status == 0, "curl: \(result.stderr)")
            let headerText = (try? String(contentsOfFile: dump, encoding: .utf8)) ?? ""
            #expect(headerText.hasPrefix("HTTP/1.1 200"), "\(headerText)")
            #expect(result.stdout.count == size)
            #expect(SHA256Hasher.hex(result.stdout) == SHA256Hasher.hex(PatternBytes.make(count: size, seed: HTTPOrigin.responseSeed)),
                    "body is not byte-exact")
            let seen = Curl.headers(fromDump: headerText)
            #expect(seen["x-seen-path"] == "/bytes/\(size)?q=1", "origin-form target")
            #expect(seen["x-seen-via"] == "1.1 dynrelay")
            #expect(seen["x-seen-proxy-authorization"] == "absent")
            #expect(seen["x-seen-proxy-connection"] == "absent")
            #expect(seen["x-seen-x-hop"] == "absent", "a header named in Connection is hop-by-hop")
            #expect(seen["x-seen-x-end-to-end"] == "kept")
            #expect(seen["x-seen-host"] == "127.0.0.1:\(origin.port)")

            let target = "127.0.0.1:\(origin.port)"
            let rule = relay.rule(containing: "server 127.0.0.1:\(origin.port)")
            let open = relay.audit.waitForEvents(where: "event = 'request-open' AND target = ?", [target])
            #expect(open.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(open.first?["rule"] == rule)
            #expect(open.first?["decision"] == "allow")
            let close = relay.audit.waitForEvents(where: "event = 'request-close' AND target = ?", [target])
            #expect(close.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(close.first?["rule"] == rule)
            #expect(close.first?["status"] == "200")
            #expect(Int(close.first?["bytes_down"] ?? "") ?? 0 >= size, "bytes_down counts the response body")
            #expect(close.first?["duration_ms"] != nil)
        }

        /// curl with `curlFlags` fetches the origin's `/chunked/size` through the relay; checks
        /// curl succeeded and returns its result and the response headers it dumped.
        static func fetchChunked(_ size: Int, from origin: HTTPOrigin, through relay: RelayProcess,
                                 curlFlags: [String]) throws -> (ProcessResult, String) {
            let dump = relay.directory.path + "/headers"
            let result = try Curl.run(curlFlags + [
                "-x", "http://127.0.0.1:\(relay.proxyPort)", "-D", dump,
                "http://127.0.0.1:\(origin.port)/chunked/\(size)",
            ])
            #expect(result.status == 0, "curl: \(result.stderr)")
            return (result, (try? String(contentsOfFile: dump, encoding: .utf8)) ?? "")
        }

        @Test("curl -p -x: CONNECT tunnel, bytes untouched, tunnel-open/close audited")
        func tunnelsWithCurl() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let size = 300_000
            let (result, headerText) = try Self.fetchChunked(size, from: origin, through: relay, curlFlags: ["-p"])
            #expect(headerText.hasPrefix("HTTP/1.1 200 Connection established"), "\(headerText)")
            #expect(result.stdout.count == size)
            #expect(SHA256Hasher.hex(result.stdout) == SHA256Hasher.hex(PatternBytes.make(count: size, seed: HTTPOrigin.responseSeed)),
                    "body is not byte-exact")
            let seen = Curl.headers(fromDump: headerText)
            #expect(seen["x-seen-via"] == "absent", "a tunnel must not rewrite the stream")
            #expect(seen["x-seen-path"] == "/chunked/\(size)")

            let target = "127.0.0.1:\(origin.port)"
            let rule = relay.rule(containing: "server 127.0.0.1:\(origin.port)")
            let open = relay.audit.waitForEvents(where: "event = 'tunnel-open' AND target = ?", [target])
            #expect(open.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(open.first?["rule"] == rule)
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close' AND target = ?", [target])
            #expect(close.count == 1, "audit:\n\(relay.audit.dump())")
            #expect(close.first?["rule"] == rule)
            #expect(Int(close.first?["bytes_down"] ?? "") ?? 0 > size, "bytes_down = every byte the origin sent")
            #expect(Int(close.first?["bytes_up"] ?? "") ?? 0 > 0)
        }

        @Test("keep-alive: two requests on one client connection, one upstream connection")
        func keepAlive() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let url = "http://127.0.0.1:\(origin.port)/"
            let result = try Curl.run([
                "-x", "http://127.0.0.1:\(relay.proxyPort)", "-w", "connects=%{num_connects}\\n", url + "one", url + "two",
            ])
            #expect(result.status == 0, "curl: \(result.stderr)")
            #expect(result.stdoutText == "hello from origin\nconnects=1\nhello from origin\nconnects=0\n",
                    "the second request must reuse the client connection: \(result.stdoutText)")
            let requests = origin.requests
            #expect(requests.map(\.requestLine) == ["GET /one HTTP/1.1", "GET /two HTTP/1.1"])
            #expect(requests.map(\.connection) == [1, 1], "upstream keep-alive: both requests on one origin connection")
            let closes = relay.audit.waitForEvents(where: "event = 'request-close' AND target = ?", ["127.0.0.1:\(origin.port)"], count: 2)
            #expect(closes.count == 2, "audit:\n\(relay.audit.dump())")
        }

        @Test("curl --http1.0 -x: a chunked upstream answer arrives de-chunked, ended by close")
        func http10ClientGetsAChunkedBodyDechunked() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let size = 300_000
            let (result, headerText) = try Self.fetchChunked(size, from: origin, through: relay, curlFlags: ["--http1.0"])
            #expect(!headerText.lowercased().contains("transfer-encoding"), "\(headerText)")
            #expect(headerText.lowercased().contains("connection: close"), "\(headerText)")
            #expect(result.stdout.count == size)
            #expect(SHA256Hasher.hex(result.stdout) == SHA256Hasher.hex(PatternBytes.make(count: size, seed: HTTPOrigin.responseSeed)),
                    "de-chunked body is not byte-exact")
            let seen = Curl.headers(fromDump: headerText)
            #expect(seen["x-seen-version"] == "HTTP/1.1", "the relay speaks its own version upstream")
        }

        @Test("chunked upload of 64 MiB streams byte-exact")
        func chunkedUpload() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let size = 64 << 20
            let payload = PatternBytes.make(count: size, seed: 3)
            let expected = SHA256Hasher.hex(payload)
            let dump = relay.directory.path + "/headers"
            let result = try Curl.run([
                "-x", "http://127.0.0.1:\(relay.proxyPort)", "-T", "-", "-H", "Transfer-Encoding: chunked", "-H", "Expect:",
                "-D", dump, "http://127.0.0.1:\(origin.port)/upload",
            ], input: .bytes(payload), maxTime: 180)
            #expect(result.status == 0, "curl: \(result.stderr)")
            let seen = Curl.headers(fromDump: (try? String(contentsOfFile: dump, encoding: .utf8)) ?? "")
            #expect(seen["x-seen-body-length"] == String(size))
            #expect(seen["x-seen-body-sha256"] == expected, "the origin must receive the upload byte-exact")
            let close = relay.audit.waitForEvents(where: "event = 'request-close' AND target = ?", ["127.0.0.1:\(origin.port)"])
            #expect(Int(close.first?["bytes_up"] ?? "") ?? 0 >= size, "audit:\n\(relay.audit.dump())")
        }

        /// A memory bound, not a timing test: the origin stalls 2 s before reading, so a relay
        /// that buffers instead of applying backpressure would have to hold what curl pushes
        /// meanwhile. Peak RSS is sampled from /proc/<pid>/status every 20 ms.
        @Test("1 GiB Content-Length upload: relay RSS stays bounded")
        func gigabyteUploadMemoryBound() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let size = 1 << 30
            let file = relay.directory.path + "/gigabyte"
            // Sparse: a GiB of zeros that costs no disk and no time to write.
            let fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
            #expect(fd >= 0)
            #expect(ftruncate(fd, off_t(size)) == 0)
            close(fd)
            let zeros = SHA256Hasher()
            let mebibyte = [UInt8](repeating: 0, count: 1 << 20)
            for _ in 0..<(size >> 20) { zeros.update(mebibyte) }
            let expected = zeros.finalHex()

            // Warm up (first connection, audit statements, pipe pool) before the baseline.
            let warm = try Curl.run(["-x", "http://127.0.0.1:\(relay.proxyPort)", "http://127.0.0.1:\(origin.port)/warm"])
            #expect(warm.stdoutText == "hello from origin\n", "warm-up: \(warm.stderr)")
            let baseline = relay.residentKiB() ?? 0
            let peak = LockedBox(baseline)
            let sampling = LockedBox(true)
            let sampler = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                while sampling.get() {
                    if let now = relay.residentKiB(), now > peak.get() { peak.set(now) }
                    usleep(20_000)
                }
                sampler.signal()
            }
            let dump = relay.directory.path + "/headers"
            let result = try Curl.run([
                "-x", "http://127.0.0.1:\(relay.proxyPort)", "-T", file, "-H", "Expect:", "-H", "X-Origin-Stall-Ms: 2000",
                "-D", dump, "http://127.0.0.1:\(origin.port)/upload",
            ], maxTime: 300)
            sampling.set(false)
            _ = sampler.wait(timeout: .now() + 5)
            #expect(result.status == 0, "curl: \(result.stderr)")
            let seen = Curl.headers(fromDump: (try? String(contentsOfFile: dump, encoding: .utf8)) ?? "")
            #expect(seen["x-seen-body-length"] == String(size))
            #expect(seen["x-seen-body-sha256"] == expected)
            let peakKiB = peak.get()
            // Informational: the figures behind the bound, for README and regressions.
            print("dynrelay VmRSS during 1 GiB upload: baseline \(baseline) KiB, peak \(peakKiB) KiB")
            #expect(baseline > 0, "could not read VmRSS of pid \(relay.pid)")
            #expect(peakKiB - baseline < 16 * 1024, "RSS grew from \(baseline) KiB to \(peakKiB) KiB during a 1 GiB upload")
            #expect(peakKiB < 64 * 1024, "peak RSS \(peakKiB) KiB")
        }
    }
}
