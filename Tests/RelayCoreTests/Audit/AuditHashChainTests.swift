import Dispatch
import Foundation
import RelayCore
import Testing

@Suite struct AuditHashChainTests {
    /// SHA-256 / HMAC-SHA-256 of 32 zero bytes ‖ `AuditFixtures.fullCanonical`, computed
    /// outside this code base (Python hashlib/hmac).
    static let fullVectorSHA256 = "5ab98df7a9ae67f5d39112c23d26ce7048c0d23919b51334a863139128fe50b5"
    static let fullVectorHMAC = "41bd6f9caa77d0a9b595aacb91f5d694e7a0fba6aa5986076751f013378a3923"
    static let key = Array("audit-key-0123456789".utf8)

    @Test func genesisIsSixtyFourZeros() {
        #expect(AuditHashChain.genesis == String(repeating: "0", count: 64))
        #expect(AuditHashChain.isWellFormed(hashHex: AuditHashChain.genesis))
        #expect(!AuditHashChain.isWellFormed(hashHex: "00"))
        #expect(!AuditHashChain.isWellFormed(hashHex: String(repeating: "g", count: 64)))
    }

    @Test func matchesFixedVectors() {
        let canonical = Array(AuditFixtures.fullCanonical.utf8)
        #expect(AuditHashChain().next(prevHashHex: AuditHashChain.genesis, canonical: canonical) == Self.fullVectorSHA256)
        #expect(AuditHashChain(key: Self.key).next(prevHashHex: AuditHashChain.genesis, canonical: canonical) == Self.fullVectorHMAC)
    }

    /// A three-link chain checked against the `openssl` command line, which hashes the raw
    /// previous-hash bytes followed by the canonical row exactly as the contract says.
    @Test func matchesOpenSSLCommandLineAcrossLinks() throws {
        let chain = AuditHashChain()
        let keyed = AuditHashChain(key: Self.key)
        var prev = AuditHashChain.genesis
        var prevKeyed = AuditHashChain.genesis
        for seq in Int64(1)...3 {
            var record = AuditFixtures.full
            record.bytesUp = seq * 1000
            let canonical = AuditCanonical.encode(seq: seq, ts: AuditFixtures.ts, record)
            let hash = chain.next(prevHashHex: prev, canonical: canonical)
            let keyedHash = keyed.next(prevHashHex: prevKeyed, canonical: canonical)
            #expect(hash == (try openssl(["dgst", "-sha256", "-r"], input: Self.bytes(hex: prev) + canonical)))
            let hexKey = Self.key.map { String(format: "%02x", $0) }.joined()
            #expect(keyedHash == (try openssl(["dgst", "-sha256", "-r", "-mac", "HMAC", "-macopt", "hexkey:\(hexKey)"],
                                             input: Self.bytes(hex: prevKeyed) + canonical)))
            prev = hash
            prevKeyed = keyedHash
        }
    }

    @Test func keyedDiffersFromUnkeyedAndByKey() {
        let canonical = Array(AuditFixtures.fullCanonical.utf8)
        let plain = AuditHashChain().next(prevHashHex: AuditHashChain.genesis, canonical: canonical)
        let a = AuditHashChain(key: Self.key).next(prevHashHex: AuditHashChain.genesis, canonical: canonical)
        // Not `key + [0]`: HMAC zero-pads short keys, so that one would collide by design.
        let b = AuditHashChain(key: Self.key + [1]).next(prevHashHex: AuditHashChain.genesis, canonical: canonical)
        #expect(Set([plain, a, b]).count == 3)
        #expect(AuditHashChain(key: Self.key).isKeyed)
        #expect(!AuditHashChain().isKeyed)
    }

    @Test func previousHashIsPartOfTheInput() {
        let canonical = Array(AuditFixtures.fullCanonical.utf8)
        let chain = AuditHashChain()
        let other = String(repeating: "0", count: 63) + "1"
        #expect(chain.next(prevHashHex: AuditHashChain.genesis, canonical: canonical)
            != chain.next(prevHashHex: other, canonical: canonical))
        // Upper-case hex spells the same bytes, so it links the same way.
        let lower = chain.next(prevHashHex: AuditHashChain.genesis, canonical: canonical)
        #expect(chain.next(prevHashHex: lower, canonical: canonical)
            == chain.next(prevHashHex: lower.uppercased(), canonical: canonical))
    }

    @Test func emptyCanonicalHashesPreviousBytesOnly() throws {
        // SHA-256 of 32 zero bytes.
        #expect(AuditHashChain().next(prevHashHex: AuditHashChain.genesis, canonical: [])
            == "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925")
    }

    /// Shared fetched algorithms and keyed template are used from many threads at once.
    @Test func concurrentUseGivesTheSameResults() {
        let canonical = Array(AuditFixtures.fullCanonical.utf8)
        let plain = AuditHashChain()
        let keyed = AuditHashChain(key: Self.key)
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            for _ in 0..<100 {
                if plain.next(prevHashHex: AuditHashChain.genesis, canonical: canonical) != Self.fullVectorSHA256
                    || keyed.next(prevHashHex: AuditHashChain.genesis, canonical: canonical) != Self.fullVectorHMAC {
                    failures.add()
                }
            }
        }
        #expect(failures.count == 0)
    }

    // MARK: - Helpers

    private final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.withLock { value += 1 } }
        var count: Int { lock.withLock { value } }
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    private func openssl(_ arguments: [String], input: [UInt8]) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("audit-hash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("input.bin")
        try Data(input).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments + [file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        // `-r` prints "<hex> *<file>".
        return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
    }
}
