import CGSSAPI
import Synchronization

/// One client connection's `Negotiate` handshake (RFC 4559) on the acceptor side.
///
/// A Negotiate context is bound to the TCP connection that carried its first token: the
/// connection owns exactly one of these and feeds it the tokens from successive
/// `Proxy-Authorization` headers. Calls are expected one at a time; the lock only makes
/// handing the context to a worker thread safe, it is never contended.
public final class GSSAcceptContext: Sendable {
    /// The largest token handed to GSS-API. Windows caps Kerberos tokens at 48 000 bytes
    /// by default (MaxTokenSize, 65 535 at most); anything beyond 64 KiB is not Kerberos.
    public static let maximumTokenSize = 64 * 1024

    private struct State {
        /// Set once a token completed or failed the handshake.
        var finished = false
        var handle: gss_ctx_id_t? = nil
    }

    private let credential: GSSAcceptorCredential
    private let state = Mutex(State())

    /// A handshake that will accept with `credential`'s keys.
    public init(credential: GSSAcceptorCredential) {
        self.credential = credential
    }

    deinit {
        state.withLock { GSSAcceptContext.release(&$0.handle) }
    }

    /// Feeds the decoded token from `Proxy-Authorization: Negotiate <base64>`.
    ///
    /// After `.complete` or `.failed` the handshake is over; any further token fails with
    /// `gss-context-finished` (a client re-authenticating on the same connection gets a
    /// fresh context from its owner).
    public func accept(token: [UInt8]) -> GSSAcceptResult {
        state.withLock { state in
            guard !state.finished else {
                return .failed(GSSError(code: GSSError.Code.contextFinished,
                                        message: "the Negotiate handshake on this connection is already over"))
            }
            let result = GSSAcceptContext.step(&state.handle, token: token, credential: credential.handle)
            if case .continueNeeded = result { return result }
            // Authentication needs nothing from the context once it is decided (no
            // wrap/unwrap), so give its keys back to the library now.
            state.finished = true
            GSSAcceptContext.release(&state.handle)
            return result
        }
    }

    private static func step(_ handle: inout gss_ctx_id_t?, token: [UInt8], credential: gss_cred_id_t) -> GSSAcceptResult {
        guard !token.isEmpty else {
            return .failed(GSSError(code: GSSError.Code.emptyToken, message: "Negotiate without a token"))
        }
        guard token.count <= maximumTokenSize else {
            return .failed(GSSError(code: GSSError.Code.tokenTooLarge,
                                    message: "token of \(token.count) bytes exceeds \(maximumTokenSize)"))
        }

        var minor: OM_uint32 = 0
        var sourceName = CGSSAPI_GSS_C_NO_NAME()
        var mech: gss_OID? = nil
        var output = gss_buffer_desc()
        var flags: OM_uint32 = 0
        // No delegated-credential pointer: MIT then discards any forwarded TGT, so a
        // client's delegation never lands in the relay's memory.
        let major = withGSSInputBuffer(token) { input in
            gss_accept_sec_context(&minor, &handle, credential, &input, CGSSAPI_GSS_C_NO_CHANNEL_BINDINGS(),
                                   &sourceName, &mech, &output, &flags, nil, nil)
        }
        let outputToken = output.takeBytes()
        defer {
            var releaseMinor: OM_uint32 = 0
            if sourceName != nil { gss_release_name(&releaseMinor, &sourceName) }
        }

        if CGSSAPI_GSS_ERROR(major) != 0 {
            return .failed(GSSError(code: GSSError.Code.gss, major: major, minor: minor, mech: mech))
        }
        if major & CGSSAPI_GSS_S_CONTINUE_NEEDED() != 0 {
            return .continueNeeded(outputToken: outputToken)
        }
        // An anonymous (PKINIT anonymous) client authenticated the KDC, not itself.
        if flags & OM_uint32(GSS_C_ANON_FLAG) != 0 {
            return .failed(GSSError(code: GSSError.Code.gss, message: "anonymous Kerberos principal refused"))
        }

        var nameMinor: OM_uint32 = 0
        var displayed = gss_buffer_desc()
        let nameMajor = gss_display_name(&nameMinor, sourceName, &displayed, nil)
        guard CGSSAPI_GSS_ERROR(nameMajor) == 0 else {
            return .failed(GSSError(code: GSSError.Code.gss, major: nameMajor, minor: nameMinor, mech: mech))
        }
        let principal = displayed.takeString()
        return .complete(principal: principal, outputToken: outputToken.isEmpty ? nil : outputToken)
    }

    private static func release(_ handle: inout gss_ctx_id_t?) {
        guard handle != nil else { return }
        var minor: OM_uint32 = 0
        gss_delete_sec_context(&minor, &handle, nil)
        handle = nil
    }
}
