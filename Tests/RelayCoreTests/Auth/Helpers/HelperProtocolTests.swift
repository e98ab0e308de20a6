import RelayCore
import Testing

/// The pure pieces of the helper protocol, through their public API: request lines, answer
/// lines, line framing.
@Suite struct HelperProtocolTests {
    func text(_ result: Result<[UInt8], HelperInputError>) -> String? {
        (try? result.get()).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func basicLinesAreEscapedAsSquidEscapesThem() {
        #expect(text(HelperRequestLine.basic(user: "alice", password: "p a%s")) == "alice p%20a%25s")
        #expect(text(HelperRequestLine.basic(user: "dö", password: "#<>\"'~`{}|\\^[]")) ==
                "d%C3%B6 %23%3C%3E%22%27%7E%60%7B%7D%7C%5C%5E%5B%5D")
        // RFC 1738 "reserved" characters pass, as with Squid.
        #expect(text(HelperRequestLine.basic(user: "a@b.c", password: ":/?;=&+$,")) == "a@b.c :/?;=&+$,")
        for bad in ["\n", "\r", "\0", "\t", "\u{7f}", "\u{1b}"] {
            #expect(HelperRequestLine.basic(user: "a\(bad)b", password: "x") == .failure(.controlCharacter))
            #expect(HelperRequestLine.basic(user: "ab", password: "x\(bad)") == .failure(.controlCharacter))
        }
    }

    @Test func digestAndTokenLines() {
        #expect(text(HelperRequestLine.digest(user: "sp ace", realm: "Corp")) == "\"sp ace\":\"Corp\"")
        #expect(text(HelperRequestLine.token([1, 2, 3], first: true, maxLineLength: 1024)) == "YR AQID")
        #expect(text(HelperRequestLine.token([], first: true, maxLineLength: 1024)) == "YR")
        #expect(text(HelperRequestLine.token([0xff], first: false, maxLineLength: 1024)) == "KK /w==")
        #expect(HelperRequestLine.token([], first: false, maxLineLength: 1024) == .failure(.empty))
        #expect(HelperRequestLine.token([UInt8](repeating: 0, count: 766), first: false, maxLineLength: 1024)
                == .failure(.tooLong))
        #expect(text(HelperRequestLine.token([UInt8](repeating: 0, count: 765), first: false, maxLineLength: 1024)) != nil)
    }

    func reply(_ line: String, channelled: Bool = false) -> (Int?, HelperReply)? {
        HelperReply.parse(Array(line.utf8), channelled: channelled)
    }

    @Test func answerLinesOfBothProtocolGenerations() throws {
        let (channel, ok) = try #require(reply("12 OK user=\"a \\\"b\\\"\" group=x", channelled: true))
        #expect(channel == 12)
        #expect(ok.code == "OK" && ok.notes == ["user": "a \"b\"", "group": "x"])
        #expect(try #require(reply("ERR Wrong password")).1.message == "Wrong password")
        #expect(try #require(reply("ERR message=\"No such user\"")).1.message == "No such user")
        #expect(try #require(reply("OK ha1=\"abc\"")).1.notes == ["ha1": "abc"])
        #expect(try #require(reply("AF CORP\\alice")).1.words == ["CORP\\alice"])
        #expect(reply("OK", channelled: true) == nil)
        #expect(reply("x OK", channelled: true) == nil)
        #expect(reply("") == nil)
        #expect(HelperReply.rfc1738Unescape("a%20b%zz%4") == "a b%zz%4")
    }

    func answer(_ line: String, scheme: AuthConfig.Scheme = .negotiate) throws -> HelperTokenAnswer {
        HelperTokenAnswer(reply: try #require(reply(line)).1, scheme: scheme, maxTokenLength: 1024)
    }

    @Test func tokenAnswers() throws {
        #expect(try answer("TT AQID") == .continue([1, 2, 3]))
        #expect(try answer("TT token=AQID") == .continue([1, 2, 3]))
        #expect(try answer("OK token=AQID user=al%20ice") == .done(user: "al ice", token: [1, 2, 3]))
        #expect(try answer("AF oQMKAQA= bob") == .done(user: "bob", token: [0xA1, 0x03, 0x0A, 0x01, 0x00]))
        #expect(try answer("NA bad password") == .failed(reason: "bad password"))
        #expect(try answer("ERR") == .failed(reason: nil))
        #expect(try answer("BH oops") == .broken(reason: "BH oops"))
        #expect(try answer("TT !!!!") == .broken(reason: "TT without a valid token"))
        #expect(try answer("OK token=AQID") == .broken(reason: "OK without a user"))
        #expect(try answer("YR") == .broken(reason: "unexpected answer YR"))
        #expect(HelperTokenAnswer.continue([1, 2]).description == "continue(2 bytes)")
    }

    /// Samba's ntlm_auth answers `AF DOMAIN\user` with the name unquoted, spaces and all
    /// (seen from the real helper in the integration test): for NTLM the rest of the line is
    /// the user, never a token, even when its first word happens to be valid base64.
    @Test func anNTLMHelpersAFIsTheUserAloneSpacesAndAll() throws {
        #expect(try answer("AF DYNRELAYTEST\\grace", scheme: .ntlm) == .done(user: "DYNRELAYTEST\\grace", token: nil))
        #expect(try answer("AF DYNRELAYTEST\\john smith", scheme: .ntlm) == .done(user: "DYNRELAYTEST\\john smith", token: nil))
        #expect(try answer("AF john smith  ", scheme: .ntlm) == .done(user: "john smith", token: nil))
        #expect(try answer("AF AQID bob", scheme: .ntlm) == .done(user: "AQID bob", token: nil))
        #expect(try answer("AF", scheme: .ntlm) == .broken(reason: "AF without a user"))
        #expect(try answer("NA NT_STATUS_LOGON_FAILURE", scheme: .ntlm) == .failed(reason: "NT_STATUS_LOGON_FAILURE"))
        #expect(try answer("BH NT_STATUS_UNSUCCESSFUL NT_STATUS_UNSUCCESSFUL", scheme: .ntlm)
                == .broken(reason: "BH NT_STATUS_UNSUCCESSFUL NT_STATUS_UNSUCCESSFUL"))
    }

    /// A Negotiate helper's older `AF` is `<token> <user>` (the user is the rest of the
    /// line), `* <user>` when it has no token (Samba's gss-spnego), or the user alone. A first
    /// word is a token only if it decodes to a GSS-API output token: `AF john smith` is the
    /// user `john smith`, not the user `smith` with a token "john".
    @Test func aNegotiateHelpersAFIsATokenThenTheUser() throws {
        let spnego: [UInt8] = [0xA1, 0x03, 0x0A, 0x01, 0x00]
        let encoded = AuthCrypto.base64Encode(spnego)
        #expect(try answer("AF \(encoded) CORP\\john smith") == .done(user: "CORP\\john smith", token: spnego))
        #expect(try answer("AF * CORP\\john smith") == .done(user: "CORP\\john smith", token: nil))
        #expect(try answer("AF alice@EXAMPLE.TEST") == .done(user: "alice@EXAMPLE.TEST", token: nil))
        #expect(try answer("AF john smith") == .done(user: "john smith", token: nil))
        #expect(try answer("AF AQID bob") == .done(user: "AQID bob", token: nil), "[1, 2, 3] is no GSS token")
    }

    @Test func linesSplitAtEveryOffsetAndOverlongOnesAreRefused() {
        let stream = Array("OK a\r\nERR b\nBH\n".utf8)
        for cut in 0...stream.count {
            var buffer = HelperLineBuffer(maxLineLength: 16)
            var lines: [String] = []
            for part in [stream[..<cut], stream[cut...]] {
                Array(part).withUnsafeBytes { buffer.append($0) }
                while case .line(let line) = buffer.next() { lines.append(String(decoding: line, as: UTF8.self)) }
            }
            #expect(lines == ["OK a", "ERR b", "BH"], "cut at \(cut)")
        }
        var buffer = HelperLineBuffer(maxLineLength: 4)
        Array("OK 12345".utf8).withUnsafeBytes { buffer.append($0) }
        #expect(buffer.next() == .tooLong)
    }
}
