import Foundation
import RelayClient
import RelayCore
import Testing

extension IntegrationSuite {
    /// Large bodies both ways through the relay: streamed, never held whole.
    @Suite("HTTP client streaming")
    struct HTTPClientStreamingTests {
        static let size = 256 << 20
        /// Growth of this process's resident memory allowed while moving `size` bytes: a few
        /// 256 KiB reads in flight, and room for other test targets running beside these
        /// (the growth measured alone is about 1 MiB).
        static let allowedGrowthKiB = 16 * 1024

        /// 64 KiB chunks adding up to `total` bytes, produced as they are asked for.
        struct Chunks: AsyncSequence, Sendable {
            let total: Int

            struct AsyncIterator: AsyncIteratorProtocol {
                var left: Int
                mutating func next() async -> [UInt8]? {
                    guard left > 0 else { return nil }
                    let count = Swift.min(left, 64 * 1024)
                    left -= count
                    return [UInt8](repeating: 0x5A, count: count)
                }
            }

            func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: total) }
        }

        @Test("a 256 MiB download streams through a few chunks' worth of memory")
        func download() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let client = try HTTPClientTests.client(relay)
            let before = ClientTransportTests.residentKiB()
            var peak = before
            let response = try await client.execute("GET", "http://127.0.0.1:\(origin.port)/big?n=\(Self.size)")
            var received = 0
            var reads = 0
            for try await chunk in response.body {
                received += chunk.count
                reads += 1
                if reads % 256 == 0 { peak = max(peak, ClientTransportTests.residentKiB()) }
            }
            #expect(received == Self.size)
            print("HTTP client 256 MiB download: resident memory grew \(peak - before) KiB")
            #expect(peak - before < Self.allowedGrowthKiB, "resident memory grew \(peak - before) KiB")
        }

        @Test("a 256 MiB chunked upload from an async sequence, and a file upload with Content-Length")
        func upload() async throws {
            let origin = try ScriptedHTTPOrigin.start()
            defer { origin.stop() }
            let relay = try HTTPClientTests.relay(origin.port)
            defer { relay.stop() }
            let client = try HTTPClientTests.client(relay)
            let url = try ClientURL(parsing: "http://127.0.0.1:\(origin.port)/upload")
            let before = ClientTransportTests.residentKiB()
            let response = try await client.execute(RelayHTTPClientRequest(method: "POST", url: url,
                                                                           body: .stream(Chunks(total: Self.size))))
            #expect(try await HTTPClientTests.text(response) == "POST \(Self.size)")
            let growth = ClientTransportTests.residentKiB() - before
            print("HTTP client 256 MiB upload: resident memory grew \(growth) KiB")
            #expect(growth < Self.allowedGrowthKiB, "resident memory grew \(growth) KiB")

            let path = relay.directory.path + "/upload.bin"
            try Data(repeating: 1, count: 3 << 20).write(to: URL(fileURLWithPath: path))
            let file = try await client.execute(RelayHTTPClientRequest(method: "PUT", url: url, body: try .file(path: path)))
            #expect(try await HTTPClientTests.text(file) == "PUT \(3 << 20)")
        }
    }
}
