import Foundation
import RelayIO
import Testing

extension RelayIOSuite {
    @Suite struct TLSContextSetupTests {
        private var files: TLSTestCertificates { .shared }

        @Test func aMissingCertificateNamesTheFileAndOpenSSLsReason() throws {
            let missing = files.path("absent.pem")
            #expect {
                try TLSContext.server(certificateFile: missing, keyFile: files.key("server"), versions: .modern)
            } throws: { error in
                guard let error = error as? TLSSetupError else { return false }
                return error.kind == .certificate && error.file == missing
                    && error.description.hasPrefix("cannot read certificate \(missing): ")
                    && error.description.contains("No such file")
            }
        }

        @Test func aKeyOfAnotherCertificateIsRefused() throws {
            #expect {
                try TLSContext.server(certificateFile: files.certificate("server"), keyFile: files.key("stray"),
                                      versions: .modern)
            } throws: { error in
                guard let error = error as? TLSSetupError else { return false }
                return error.kind == .keyMismatch && error.description.contains("does not match certificate")
            }
        }

        @Test func anUnreadableCAFileIsRefused() throws {
            #expect {
                try TLSContext.client(caFile: files.path("absent-ca.pem"), versions: .modern)
            } throws: { error in
                (error as? TLSSetupError)?.kind == .caFile
            }
            #expect {
                try TLSContext.server(certificateFile: files.certificate("server"), keyFile: files.key("server"),
                                      clientCAFile: files.key("server"), versions: .modern)
            } throws: { error in
                (error as? TLSSetupError)?.kind == .caFile
            }
        }

        @Test func anEmptyVersionSetIsRefused() throws {
            #expect {
                try TLSContext.client(versions: TLSProtocols(wire: [0x0300]))
            } throws: { error in
                (error as? TLSSetupError)?.kind == .versions
            }
        }

        @Test func protocolsKeepOnlyTLSVersionsInOrder() {
            let set = TLSProtocols(wire: [0x0304, 0x0300, 0x0302, 0x0304, 0x7A7A])
            #expect(set.wireVersions == [0x0302, 0x0304])
            #expect(set.allowsLegacy)
            #expect(!TLSProtocols.modern.allowsLegacy)
            #expect(set.description == "TLSv1.1 TLSv1.3")
        }

        @Test func certificateExpiryIsTheFirstCertificatesNotAfter() throws {
            let expired = try TLSCertificateFile.expiry(path: files.certificate("expired"))
            // 2020-02-01T00:00:00Z.
            #expect(expired.notAfter == 1_580_515_200)
            #expect(expired.daysUntilExpiry(now: 1_580_515_200 - 14 * 86_400) == 14)
            #expect(expired.daysUntilExpiry(now: 1_580_515_200 - 86_399) == 0)
            #expect(expired.daysUntilExpiry(now: 1_580_515_201) == -1)
            #expect(expired.daysUntilExpiry < -365)
            let valid = try TLSCertificateFile.expiry(path: files.certificate("server"))
            // Issued for 30 days.
            #expect((29...30).contains(valid.daysUntilExpiry))
        }

        @Test func expiryOfAFileWithoutACertificateFails() throws {
            #expect {
                try TLSCertificateFile.expiry(path: files.key("server"))
            } throws: { error in
                (error as? TLSSetupError)?.kind == .certificate
            }
        }
    }
}
