import CBenchOpenSSL

/// The message digests the Digest and NTLM clients need, each fetched from OpenSSL once and
/// shared by every client thread: OpenSSL 3 takes a lock per implicit fetch (ENGINEERING.md
/// trap 8). Immutable after `init`; `EVP_MD` objects may be used from any thread.
final class Hashes: @unchecked Sendable {
    enum Algorithm: Sendable {
        case md5, sha256
    }

    private let md5: OpaquePointer
    private let sha256: OpaquePointer

    init() throws {
        guard let md5 = EVP_MD_fetch(nil, "MD5", nil), let sha256 = EVP_MD_fetch(nil, "SHA256", nil) else {
            throw ProxyAuthError(description: "OpenSSL: cannot fetch MD5/SHA256: \(Self.drainErrors())")
        }
        self.md5 = md5
        self.sha256 = sha256
    }

    deinit {
        EVP_MD_free(md5)
        EVP_MD_free(sha256)
    }

    func digest(_ algorithm: Algorithm, _ bytes: [UInt8]) -> [UInt8] {
        Self.digest(algorithm == .md5 ? md5 : sha256, bytes)
    }

    /// A digest context one thread reuses for every request: `EVP_Digest` creates and frees
    /// one per call.
    final class Context {
        let ctx: OpaquePointer

        init() {
            ctx = EVP_MD_CTX_new()!
        }

        deinit {
            EVP_MD_CTX_free(ctx)
        }
    }

    /// The digest of `input` into `output` (at least 32 bytes) through `context`; returns its
    /// length.
    func digest(_ algorithm: Algorithm, _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
                context: Context) -> Int {
        precondition(output.count >= 32)
        var size: UInt32 = 0
        let ok = EVP_DigestInit_ex2(context.ctx, algorithm == .md5 ? md5 : sha256, nil) == 1
            && EVP_DigestUpdate(context.ctx, input.baseAddress, input.count) == 1
            && EVP_DigestFinal_ex(context.ctx, output.baseAddress!.assumingMemoryBound(to: UInt8.self), &size) == 1
        precondition(ok, "EVP digest failed: \(Self.drainErrors())")
        return Int(size)
    }

    /// Lowercase hex of the digest, as RFC 7616 computes every intermediate value.
    func hex(_ algorithm: Algorithm, _ text: String) -> String {
        digest(algorithm, Array(text.utf8)).hexString
    }

    /// HMAC-MD5 (RFC 2104) over the fetched MD5: NTLMv2's only primitive. Written out rather
    /// than through EVP_MAC, which would fetch "HMAC" and "MD5" again on every call.
    func hmacMD5(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? digest(.md5, key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = digest(.md5, block.map { $0 ^ 0x36 } + message)
        return digest(.md5, block.map { $0 ^ 0x5c } + inner)
    }

    /// MD4 lives in OpenSSL 3's legacy provider, which must be loaded by name; loading any
    /// provider explicitly stops the implicit default one, so both are loaded. Called once
    /// at startup (the NT hash of the password does not change per tunnel).
    static func md4(_ bytes: [UInt8]) throws -> [UInt8] {
        guard OSSL_PROVIDER_load(nil, "legacy") != nil, OSSL_PROVIDER_load(nil, "default") != nil else {
            throw ProxyAuthError(description: "OpenSSL: cannot load the legacy provider (MD4): \(drainErrors())")
        }
        guard let md4 = EVP_MD_fetch(nil, "MD4", nil) else {
            throw ProxyAuthError(description: "OpenSSL: no MD4: \(drainErrors())")
        }
        defer { EVP_MD_free(md4) }
        return digest(md4, bytes)
    }

    private static func digest(_ md: OpaquePointer, _ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBufferPointer { EVP_Digest(input.baseAddress, input.count, $0.baseAddress, &size, md, nil) }
        }
        precondition(ok == 1, "EVP_Digest failed: \(drainErrors())")
        return Array(out[0..<Int(size)])
    }

    private static func drainErrors() -> String {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            messages.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "no OpenSSL error queued" : messages.joined(separator: "; ")
    }
}

extension Array where Element == UInt8 {
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
