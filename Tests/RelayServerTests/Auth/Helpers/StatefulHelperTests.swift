import Foundation
import Glibc
import RelayCore
import RelayIO
@testable import RelayServer
import Testing

/// ntlm_fake_auth (real NTLM messages, any password accepted) and negotiate_kerberos_auth
/// (garbage in, a clean refusal out) behind a StatefulHelperPool.
@Suite struct StatefulHelperTests {
    static let flags: NTLMNegotiateFlags = [.unicode, .requestTarget, .ntlm, .alwaysSign,
                                            .extendedSessionSecurity, .bits128, .bits56]

    /// NTLM NEGOTIATE (MS-NLMP §2.2.1.1) with no domain or workstation.
    static let negotiate = Array("NTLMSSP".utf8) + [0, 1, 0, 0, 0] + le32(flags.rawValue) + [UInt8](repeating: 0, count: 16)

    /// NTLM AUTHENTICATE (§2.2.1.3) laid out as clients send it: fields after a 64-byte header.
    static func authenticate(user: String, domain: String, workstation: String = "WS") -> [UInt8] {
        let utf16 = { (text: String) in text.utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] } }
        let fields = [[UInt8](repeating: 0, count: 24), [UInt8](repeating: 1, count: 24),
                      utf16(domain), utf16(user), utf16(workstation), []]
        var header = Array("NTLMSSP".utf8) + [0, 3, 0, 0, 0]
        var payload: [UInt8] = []
        for field in fields {
            header += le16(field.count) + le16(field.count) + le32(UInt32(64 + payload.count))
            payload += field
        }
        return header + le32(flags.rawValue) + payload
    }

    static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xff), UInt8(value >> 8 & 0xff)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xff) } }

    static func ntlmPool(processes: Int) throws -> StatefulHelperPool {
        StatefulHelperPool(scheme: .ntlm, command: ChildCommand(executable: try SquidHelpers.path("ntlm_fake_auth")),
                           configuration: HelperPoolConfiguration(processes: processes),
                           loop: SquidHelpers.loop, log: SquidHelpers.quietLog)
    }

    func send(_ conversation: HelperConversation, _ token: [UInt8], first: Bool) throws -> HelperTokenAnswer {
        try Answers.one { conversation.send(token: token, first: first, completion: $0) }
    }

    /// YR NEGOTIATE must come back as a CHALLENGE (type 2) for the client.
    func challenge(_ conversation: HelperConversation) throws {
        guard case .continue(let token) = try send(conversation, Self.negotiate, first: true) else {
            Issue.record("YR did not answer TT")
            return
        }
        #expect(Array(token.prefix(12)) == Array("NTLMSSP".utf8) + [0, 2, 0, 0, 0])
    }

    @Test func completesAnNTLMHandshake() throws {
        let pool = try Self.ntlmPool(processes: 1)
        defer { pool.close() }
        let conversation = try #require(pool.begin())
        try challenge(conversation)
        // ntlm_fake_auth answers the old way: `AF CORP\alice`, no token.
        #expect(try send(conversation, Self.authenticate(user: "alice", domain: "CORP"), first: false)
                == .done(user: "CORP\\alice", token: nil))
        conversation.finish()

        // The same process serves the next connection; YR starts afresh.
        let next = try #require(pool.begin())
        defer { next.finish() }
        try challenge(next)
        #expect(try send(next, Self.authenticate(user: "bob", domain: "CORP"), first: false)
                == .done(user: "CORP\\bob", token: nil))
        #expect(pool.pids().count == 1)
    }

    @Test func eachHandshakeHoldsItsOwnProcessUpToTheLimit() throws {
        let pool = try Self.ntlmPool(processes: 2)
        defer { pool.close() }
        let first = try #require(pool.begin())
        let second = try #require(pool.begin())
        #expect(pool.begin() == nil, "a third handshake must wait for a free helper (503)")
        try challenge(first)
        try challenge(second)
        // Interleaved: each continuation reaches the process that issued its challenge.
        #expect(try send(second, Self.authenticate(user: "bob", domain: "B"), first: false) == .done(user: "B\\bob", token: nil))
        #expect(try send(first, Self.authenticate(user: "alice", domain: "A"), first: false) == .done(user: "A\\alice", token: nil))
        first.finish()
        let third = try #require(eventuallyBegin(pool))
        defer { third.finish() }
        try challenge(third)
        second.finish()
        #expect(pool.pids().count == 2)
    }

    @Test func garbageAndOutOfOrderTokensFailCleanly() throws {
        let pool = try Self.ntlmPool(processes: 1)
        defer { pool.close() }
        let conversation = try #require(pool.begin())
        // A continuation with no handshake started never reaches the helper.
        guard case .broken = try send(conversation, Self.authenticate(user: "a", domain: "b"), first: false) else {
            Issue.record("KK before YR was sent to the helper")
            return
        }
        #expect(try send(conversation, [], first: false) == .failed(reason: "token empty"))
        try challenge(conversation)
        guard case .broken = try send(conversation, Array("garbage".utf8), first: false) else {
            Issue.record("a garbage AUTHENTICATE was not refused")
            return
        }
        // The helper is still in step for a new handshake.
        try challenge(conversation)
        conversation.finish()
    }

    @Test func aHelperKilledMidHandshakeBreaksItAndIsReplaced() throws {
        let pool = try Self.ntlmPool(processes: 1)
        defer { pool.close() }
        let conversation = try #require(pool.begin())
        try challenge(conversation)
        let pid = try #require(pool.pids().first)
        kill(pid, SIGKILL)
        #expect(eventually { processIsGone(pid) })
        // The new child never saw the NEGOTIATE: the continuation must not reach it.
        guard case .broken = try send(conversation, Self.authenticate(user: "alice", domain: "CORP"), first: false) else {
            Issue.record("a continuation reached a helper that never saw the handshake")
            return
        }
        conversation.finish()
        let next = try #require(eventuallyBegin(pool))
        defer { next.finish() }
        try challenge(next)
        #expect(try send(next, Self.authenticate(user: "alice", domain: "CORP"), first: false)
                == .done(user: "CORP\\alice", token: nil))
        #expect(pool.pids().first != pid)
    }

    @Test func droppingAConversationReleasesItsProcess() throws {
        let pool = try Self.ntlmPool(processes: 1)
        defer { pool.close() }
        do {
            let abandoned = try #require(pool.begin())
            try challenge(abandoned)
        }
        let next = try #require(eventuallyBegin(pool))
        defer { next.finish() }
        try challenge(next)
    }

    @Test func finishingWithATokenAtTheHelperReplacesTheChild() throws {
        // `sleep` never answers: the token stays at the helper when the connection goes away.
        let pool = StatefulHelperPool(scheme: .ntlm, command: ChildCommand(executable: "/bin/sleep", arguments: ["1000"]),
                                      configuration: HelperPoolConfiguration(processes: 1),
                                      loop: SquidHelpers.loop, log: SquidHelpers.quietLog)
        defer { pool.close() }
        let conversation = try #require(pool.begin())
        let answers = Answers<HelperTokenAnswer>()
        conversation.send(token: Self.negotiate, first: true, completion: answers.callback(0))
        #expect(eventually { pool.pids().count == 1 })
        let pid = try #require(pool.pids().first)
        conversation.finish()
        #expect(try answers.wait(1)[0] == .broken(reason: "helper handshake abandoned"))
        #expect(eventually { processIsGone(pid) }, "a child holding a dropped request must not serve the next one")
        #expect(pool.begin() != nil)
    }

    @Test func negotiateKerberosAuthRefusesAGarbageTokenCleanly() throws {
        let dir = try TempDir()
        try SquidHelpers.write("", to: dir.path("empty.keytab"))
        // `-k` with a missing file makes the helper exit at start; an empty keytab keeps it up.
        let command = ChildCommand(executable: try SquidHelpers.path("negotiate_kerberos_auth"),
                                    arguments: ["-s", "GSS_C_NO_NAME", "-k", dir.path("empty.keytab")],
                                    environment: ["KRB5_KTNAME": dir.path("empty.keytab")],
                                    standardError: .discard)
        let pool = StatefulHelperPool(scheme: .negotiate, command: command, configuration: HelperPoolConfiguration(processes: 1),
                                      loop: SquidHelpers.loop, log: SquidHelpers.quietLog)
        defer { pool.close() }
        let conversation = try #require(pool.begin())
        defer { conversation.finish() }
        for _ in 0..<2 {
            switch try send(conversation, Array("garbage".utf8), first: true) {
            case .broken(let reason): #expect(reason.hasPrefix("BH "))
            case .failed: break
            case let other: Issue.record("garbage Negotiate token answered \(other)")
            }
        }
        #expect(pool.pids().count == 1, "the helper must survive garbage")
    }

    func eventuallyBegin(_ pool: StatefulHelperPool) -> HelperConversation? {
        var conversation: HelperConversation?
        _ = eventually { conversation = pool.begin(); return conversation != nil }
        return conversation
    }
}
