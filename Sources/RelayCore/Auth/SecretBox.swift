import COpenSSL

/// Authenticated encryption for small secrets at rest (the user store's HA1s and NT
/// hashes, which are password-equivalent): AES-256-GCM through OpenSSL's EVP interface.
///
/// A sealed value is `version ‖ nonce(12) ‖ ciphertext ‖ tag(16)`, with a fresh random
/// nonce per seal. The version byte and the caller's associated data are authenticated but
/// not stored: binding each value to where it belongs (say user name and column) means a
/// blob copied into another row or column no longer opens. `open` answers nil for anything
/// that is not exactly what `seal` produced under the same key and associated data, so a
/// caller fails closed without learning why.
///
/// Random nonces are safe here: 2^32 seals under one key keep the collision chance below
/// NIST's bound (SP 800-38D §8.3), and a user store seals a few values per password change.
public struct SecretBox: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Key length in bytes (AES-256).
    public static let keyLength = 32
    /// Bytes a sealed value adds to its plaintext: version, nonce and tag.
    public static let overhead = 1 + nonceLength + tagLength

    static let formatVersion: UInt8 = 1
    static let nonceLength = 12
    static let tagLength = 16

    private let key: [UInt8]
    /// Decryption contexts holding this key's schedule: a login opens one value, and
    /// building and keying a context costs more than decrypting 16–32 bytes.
    private let decryptors: OpenSSLContextPool

    /// A key for another purpose derived from this one (HMAC-SHA-256 under `label`), so one
    /// secret serves several uses without any of them revealing it.
    public func derivedKey(label: String) -> [UInt8] {
        AuthCrypto.hmacSHA256(key: key, data: Array(label.utf8))
    }

    /// A box for `key`; nil unless it is exactly `keyLength` bytes.
    public init?(key: [UInt8]) {
        guard key.count == Self.keyLength else { return nil }
        self.key = key
        decryptors = Self.decryptors(key: key)
    }

    /// `plaintext` sealed under a fresh random nonce, bound to `associatedData`.
    public func seal(_ plaintext: [UInt8], associatedData: [UInt8]) -> [UInt8] {
        seal(plaintext, associatedData: associatedData, nonce: AuthCrypto.randomBytes(count: Self.nonceLength))
    }

    /// `seal` with a chosen nonce, for known-answer tests only: reusing a nonce under one
    /// key gives away the XOR of the plaintexts and lets the tag be forged.
    func seal(_ plaintext: [UInt8], associatedData: [UInt8], nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == Self.nonceLength)
        let (ciphertext, tag) = Self.encrypt(key: key, nonce: nonce,
                                             associatedData: [Self.formatVersion] + associatedData,
                                             plaintext: plaintext)
        return [Self.formatVersion] + nonce + ciphertext + tag
    }

    /// The plaintext of `sealed`, or nil when it is malformed, of another format version,
    /// sealed under another key or other associated data, or altered in any bit.
    public func open(_ sealed: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard sealed.count >= Self.overhead, sealed[0] == Self.formatVersion else { return nil }
        // Decrypted in place from the sealed bytes: each login opens one of these, and every
        // copied-out part would be an array allocation (see `decrypt`).
        return sealed.withUnsafeBytes { bytes in
            associatedData.withUnsafeBytes { data in
                withUnsafeBytes(of: Self.formatVersion) { version in
                    let tagStart = bytes.count - Self.tagLength
                    return Self.decrypt(with: decryptors, nonce: UnsafeRawBufferPointer(rebasing: bytes[1..<(1 + Self.nonceLength)]),
                                        associatedData: version, data,
                                        ciphertext: UnsafeRawBufferPointer(rebasing: bytes[(1 + Self.nonceLength)..<tagStart]),
                                        tag: UnsafeRawBufferPointer(rebasing: bytes[tagStart...]))
                }
            }
        }
    }

    /// Never the key: a box interpolated into a log line must not leak it.
    public var description: String { "SecretBox(key: <redacted>)" }
    /// Same as `description`.
    public var debugDescription: String { description }
    /// No children, so `dump` and debuggers' summaries do not print the key either.
    public var customMirror: Mirror { Mirror(self, children: [:]) }

    // MARK: - AES-256-GCM

    /// Raw AES-256-GCM with a 96-bit nonce: (ciphertext, 16-byte tag).
    static func encrypt(key: [UInt8], nonce: [UInt8], associatedData: [UInt8],
                        plaintext: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8]) {
        precondition(key.count == keyLength && nonce.count == nonceLength)
        precondition(plaintext.count <= Int(Int32.max) - 32 && associatedData.count <= Int(Int32.max))
        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new: \(drainOpenSSLErrors())") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        // GCM is a stream mode: the ciphertext is as long as the plaintext. The spare block
        // keeps the buffer non-empty so Final always has a valid pointer.
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: tagLength)
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        var scratch: Int32 = 0
        // The default GCM IV length is 12 bytes, which is the nonce length here.
        var ok = EVP_EncryptInit_ex2(ctx, AuthAlgorithms.shared.aes256GCM, key, nonce, nil) == 1
        if ok, !associatedData.isEmpty {
            ok = EVP_EncryptUpdate(ctx, nil, &scratch, associatedData, Int32(associatedData.count)) == 1
        }
        ok = ok && output.withUnsafeMutableBufferPointer { out in
            if !plaintext.isEmpty {
                guard EVP_EncryptUpdate(ctx, out.baseAddress, &written, plaintext, Int32(plaintext.count)) == 1 else { return false }
            }
            return EVP_EncryptFinal_ex(ctx, out.baseAddress! + Int(written), &finalWritten) == 1
        }
        ok = ok && tag.withUnsafeMutableBytes {
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), $0.baseAddress)
        } == 1
        // Failing to encrypt with a fixed algorithm and valid lengths is a broken OpenSSL.
        guard ok, Int(written + finalWritten) == plaintext.count else {
            fatalError("AES-256-GCM seal failed: \(drainOpenSSLErrors())")
        }
        return (Array(output[0..<plaintext.count]), tag)
    }

    /// Raw AES-256-GCM decryption; nil when the tag does not verify.
    static func decrypt(key: [UInt8], nonce: [UInt8], associatedData: [UInt8],
                        ciphertext: [UInt8], tag: [UInt8]) -> [UInt8]? {
        precondition(nonce.count == nonceLength)
        return nonce.withUnsafeBytes { nonce in
            associatedData.withUnsafeBytes { data in
                ciphertext.withUnsafeBytes { ciphertext in
                    tag.withUnsafeBytes { tag in
                        decrypt(with: decryptors(key: key), nonce: nonce, associatedData: data,
                                UnsafeRawBufferPointer(start: nil, count: 0), ciphertext: ciphertext, tag: tag)
                    }
                }
            }
        }
    }

    /// AES-256-GCM decryption contexts keyed with `key` (no IV yet).
    private static func decryptors(key: [UInt8]) -> OpenSSLContextPool {
        precondition(key.count == keyLength)
        return OpenSSLContextPool(make: {
            guard let ctx = EVP_CIPHER_CTX_new(),
                  EVP_DecryptInit_ex2(ctx, AuthAlgorithms.shared.aes256GCM, key, nil, nil) == 1
            else { fatalError("AES-256-GCM key setup failed: \(drainOpenSSLErrors())") }
            return ctx
        }, free: { EVP_CIPHER_CTX_free($0) })
    }

    /// The decryption on borrowed bytes with a keyed context from `contexts`; the associated
    /// data is the two parts in order. Allocates only the plaintext it returns.
    private static func decrypt(with contexts: OpenSSLContextPool, nonce: UnsafeRawBufferPointer,
                                associatedData first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
                                ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer) -> [UInt8]? {
        precondition(nonce.count == nonceLength)
        guard tag.count == tagLength, ciphertext.count <= Int(Int32.max) - 32,
              first.count <= Int(Int32.max), second.count <= Int(Int32.max)
        else { return nil }
        let ctx = contexts.borrow()
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        var scratch: Int32 = 0
        // A NULL cipher and key keep the context's key; the nonce starts a new message.
        var ok = EVP_DecryptInit_ex2(ctx, nil, nil, nonce.bindMemory(to: UInt8.self).baseAddress, nil) == 1
        // GCM takes the associated data in as many updates as it comes in.
        func addAssociatedData(_ part: UnsafeRawBufferPointer) -> Bool {
            part.isEmpty
                || EVP_DecryptUpdate(ctx, nil, &scratch, part.bindMemory(to: UInt8.self).baseAddress, Int32(part.count)) == 1
        }
        ok = ok && addAssociatedData(first) && addAssociatedData(second)
        guard ok else {
            ERR_clear_error()
            contexts.discard(ctx)
            return nil
        }
        // The spare byte keeps the buffer non-empty, so Final always has a valid pointer.
        let plaintext = [UInt8](unsafeUninitializedCapacity: ciphertext.count + 1) { out, count in
            count = 0
            if !ciphertext.isEmpty {
                guard EVP_DecryptUpdate(ctx, out.baseAddress, &written, ciphertext.bindMemory(to: UInt8.self).baseAddress,
                                        Int32(ciphertext.count)) == 1 else { ok = false; return }
            }
            // OpenSSL copies the expected tag; it never writes through this pointer.
            guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength),
                                      UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1 else { ok = false; return }
            // Final is where GCM checks the tag; what Update wrote is not trusted before it.
            ok = EVP_DecryptFinal_ex(ctx, out.baseAddress! + Int(written), &finalWritten) > 0
            if ok { count = Int(written + finalWritten) }
        }
        guard ok, plaintext.count == ciphertext.count else {
            // A bad tag queues an error; leave the thread's queue clean for the next caller,
            // and do not reuse a context whose message failed.
            ERR_clear_error()
            contexts.discard(ctx)
            return nil
        }
        contexts.giveBack(ctx)
        return plaintext
    }
}
