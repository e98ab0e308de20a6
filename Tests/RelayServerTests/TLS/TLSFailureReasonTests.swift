import RelayCore
import RelayIO
import RelayServer
import Testing

@Suite struct TLSFailureReasonTests {
    @Test func upstreamKindsHaveTheirOwnReasons() {
        let expected: [TLSFailure.Kind: ReasonCode] = [
            .certificateExpired: .upstreamCertExpired, .certificateUntrusted: .upstreamCertUntrusted,
            .hostMismatch: .upstreamCertHostMismatch, .noSharedVersion: .upstreamTLSVersion,
            .securityLevel: .tlsSecurityLevel, .notTLS: .upstreamTLSFailed, .noClientCertificate: .upstreamTLSFailed,
            .other: .upstreamTLSFailed,
        ]
        for kind in TLSFailure.Kind.allCases {
            #expect(TLSFailure(kind, detail: "x").reason(asUpstream: true) == expected[kind], "\(kind)")
        }
    }

    @Test func listenerKindsHaveTheirOwnReasons() {
        let expected: [TLSFailure.Kind: ReasonCode] = [
            .notTLS: .notTLS, .noClientCertificate: .clientCertRequired, .noSharedVersion: .tlsVersionRefused,
            .securityLevel: .tlsSecurityLevel, .certificateExpired: .clientTLSFailed,
            .certificateUntrusted: .clientTLSFailed, .hostMismatch: .clientTLSFailed, .other: .clientTLSFailed,
        ]
        for kind in TLSFailure.Kind.allCases {
            #expect(TLSFailure(kind, detail: "x").reason(asUpstream: false) == expected[kind], "\(kind)")
        }
    }

    @Test func aVersionSetBecomesItsWireCodes() throws {
        let set = try TLSVersionSet.parse(["GDEnableTLS1.1"]).get()
        #expect(TLSProtocols(set).wireVersions == [0x0302, 0x0303, 0x0304])
        #expect(TLSProtocols(set).allowsLegacy)
    }
}
