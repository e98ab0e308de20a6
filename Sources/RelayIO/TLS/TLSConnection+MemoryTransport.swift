import COpenSSL

/// Moving ciphertext in and out of a connection made with `init(memoryTransportWith:role:)`.
/// OpenSSL reads records from one memory buffer and appends the records it writes to the
/// other; these calls are the owner's side of both. They do nothing once the connection is
/// freed.
extension TLSConnection {
    /// Hands OpenSSL ciphertext the transport delivered; the next step reads it.
    public func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard let ssl = handle, let input = SSL_get_rbio(ssl), bytes.count > 0 else { return }
        // A memory BIO takes everything it is given (it grows), so one call is enough.
        _ = BIO_write(input, bytes.baseAddress, Int32(clamping: bytes.count))
    }

    /// The transport ended: once what was received is read, OpenSSL sees the end of the
    /// stream instead of waiting for more.
    public func receiveCiphertextEnd() {
        guard let ssl = handle, let input = SSL_get_rbio(ssl) else { return }
        _ = crelay_BIO_set_mem_eof_return(input, 0)
    }

    /// Bytes of ciphertext OpenSSL wrote that the owner has not taken yet.
    public var pendingCiphertext: Int {
        guard let ssl = handle, let output = SSL_get_wbio(ssl) else { return 0 }
        return Int(BIO_ctrl_pending(output))
    }

    /// Takes up to `maxBytes` of the ciphertext OpenSSL wrote, oldest first, for the owner
    /// to send in that order; empty when there is none.
    public func takeCiphertext(maxBytes: Int) -> [UInt8] {
        let count = min(pendingCiphertext, maxBytes)
        guard count > 0, let ssl = handle, let output = SSL_get_wbio(ssl) else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let read = BIO_read(output, buffer.baseAddress, Int32(count))
            initialized = max(0, Int(read))
        }
    }
}
