import COpenSSL

/// What OpenSSL's callbacks record for one connection, reached from its `SSL` through
/// ex_data slot 0 (OpenSSL's application data): the alerts seen, which tell a close_notify
/// from a bare TCP EOF and explain a failed handshake, and the upstream key new client
/// sessions are cached under. Loop-confined with its connection, which owns it and frees
/// the `SSL` first.
final class TLSConnectionHooks {
    let sessionCache: TLSSessionCache?
    let sessionKey: String?
    var receivedCloseNotify = false
    /// The last fatal or warning alert received or sent, other than close_notify (`SSL_AD_*`).
    var alertReceived: Int32?
    var alertSent: Int32?
    /// The content type and major version of the first record received: whether the peer
    /// spoke TLS at all, which OpenSSL's "wrong version number" does not say.
    var firstRecord: (contentType: UInt8, major: UInt8)?

    init(sessionCache: TLSSessionCache?, sessionKey: String?) {
        self.sessionCache = sessionCache
        self.sessionKey = sessionKey
    }

    func attach(to ssl: OpaquePointer) {
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_info_callback(ssl, recordAlert)
        SSL_set_msg_callback(ssl, recordFirstHeader)
    }

    /// Stops watching record headers: called once the handshake is done, so the stream's
    /// records cost no callback.
    func detachHeaderWatch(from ssl: OpaquePointer) {
        SSL_set_msg_callback(ssl, nil)
    }

    /// True when the first record received is not a TLS record (plaintext, an SSLv2 hello),
    /// false when it is, nil before any arrived.
    var firstRecordIsNotTLS: Bool? {
        firstRecord.map { !(0x14...0x18).contains($0.contentType) || $0.major != 3 }
    }

    static func of(_ ssl: OpaquePointer) -> TLSConnectionHooks? {
        guard let pointer = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<TLSConnectionHooks>.fromOpaque(pointer).takeUnretainedValue()
    }
}

/// OpenSSL reports each record header it reads (before checking its version) as a
/// pseudo content type; the first one is kept.
private let recordFirstHeader: @convention(c) (Int32, Int32, Int32, UnsafeRawPointer?, Int, OpaquePointer?,
                                                UnsafeMutableRawPointer?) -> Void = { written, _, contentType, bytes, length, ssl, _ in
    guard written == 0, contentType == SSL3_RT_HEADER, length >= 2, let bytes, let ssl,
          let hooks = TLSConnectionHooks.of(ssl), hooks.firstRecord == nil else { return }
    hooks.firstRecord = (bytes.load(as: UInt8.self), bytes.load(fromByteOffset: 1, as: UInt8.self))
}

/// For alerts, `value` is the alert level << 8 | its description.
private let recordAlert: @convention(c) (OpaquePointer?, Int32, Int32) -> Void = { ssl, location, value in
    guard let ssl, location & SSL_CB_ALERT != 0, let hooks = TLSConnectionHooks.of(ssl) else { return }
    let description = value & 0xFF
    if location & SSL_CB_READ != 0 {
        if description == SSL_AD_CLOSE_NOTIFY { hooks.receivedCloseNotify = true } else { hooks.alertReceived = description }
    } else if description != SSL_AD_CLOSE_NOTIFY {
        hooks.alertSent = description
    }
}
