import Foundation
import Glibc
@testable import RelayServer
import Testing

/// What journald and a terminal each get from a log line: the `<N>` priority prefix only on
/// the journal's own stream, the priority each level maps to, and which lines a level lets out.
@Suite struct RelayLogTests {
    @Test func levelsAreTheSyslogPrioritiesJournaldStores() {
        #expect(RelayLog.Level.allCases.map(\.rawValue) == [3, 4, 5, 6, 7])
        #expect(RelayLog.Level.allCases.map(\.name) == ["error", "warning", "notice", "info", "debug"])
        for level in RelayLog.Level.allCases {
            #expect(RelayLog.Level(name: level.name) == level)
        }
        #expect(RelayLog.Level(name: "Notice") == nil)
        #expect(RelayLog.Level(name: "warn") == nil)
        #expect(RelayLog.Level(name: "") == nil)
    }

    @Test func aLevelLetsOutItselfAndWhatIsMoreSevere() {
        let log = RelayLog(level: .notice, prefixesPriority: false)
        #expect(log.rendered(.error, { "e" }) == "dynrelay: e\n")
        #expect(log.rendered(.warning, { "w" }) == "dynrelay: w\n")
        #expect(log.rendered(.notice, { "n" }) == "dynrelay: n\n")
        #expect(log.rendered(.info, { "i" }) == nil)
        #expect(log.rendered(.debug, { "d" }) == nil)
        let quiet = RelayLog(level: .error, prefixesPriority: false)
        #expect(quiet.rendered(.warning, { "w" }) == nil)
        var built = false
        _ = quiet.rendered(.info, { built = true; return "i" })
        #expect(!built, "a line below the level is never built")
    }

    @Test func theJournalGetsThePriorityPrefixATerminalDoesNot() {
        let journal = RelayLog(level: .debug, prefixesPriority: true)
        #expect(journal.rendered(.error, { "reload refused" }) == "<3>dynrelay: reload refused\n")
        #expect(journal.rendered(.warning, { "warning: x" }) == "<4>dynrelay: warning: x\n")
        #expect(journal.rendered(.notice, { "refused session=1" }) == "<5>dynrelay: refused session=1\n")
        #expect(journal.rendered(.info, { "open session=1" }) == "<6>dynrelay: open session=1\n")
        #expect(journal.rendered(.debug, { "helper" }) == "<7>dynrelay: helper\n")
        let terminal = RelayLog(level: .debug, prefixesPriority: false)
        #expect(terminal.rendered(.error, { "reload refused" }) == "dynrelay: reload refused\n")
    }

    @Test func everyLineOfAMessageCarriesThePrefix() {
        #expect(RelayLog.format(.error, "a\nb\n", prefixed: true) == "<3>a\n<3>b\n")
        #expect(RelayLog.format(.error, "a\n\nb", prefixed: true) == "<3>a\n\n<3>b")
        #expect(RelayLog.format(.warning, "", prefixed: true) == "")
        #expect(RelayLog.format(.error, "a\nb\n", prefixed: false) == "a\nb\n")
    }

    @Test func journalStreamMatchesOnlyItsOwnDeviceAndInode() {
        #expect(JournalStream.matches("2049:131074", device: 2049, inode: 131_074))
        #expect(!JournalStream.matches("2049:131075", device: 2049, inode: 131_074))
        #expect(!JournalStream.matches("2048:131074", device: 2049, inode: 131_074))
        for malformed in ["", ":", "2049", "2049:", ":131074", "2049:131074:1", " 2049:131074", "2049:131074\n",
                          "+2049:131074", "0x801:131074", "2049:-1", "99999999999999999999:1"] {
            #expect(!JournalStream.matches(malformed, device: 2049, inode: 131_074), "\(malformed)")
        }
    }

    @Test func aDescriptorIsTheJournalOnlyWhenItsFstatMatches() throws {
        let path = NSTemporaryDirectory() + "relaylog-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer { close(fd); unlink(path) }
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        let value = "\(info.st_dev):\(info.st_ino)"
        #expect(JournalStream.describes(fd: fd, journalStream: value))
        #expect(!JournalStream.describes(fd: fd, journalStream: nil))
        #expect(!JournalStream.describes(fd: fd, journalStream: "\(info.st_dev):\(info.st_ino + 1)"))
        // Inherited by a child whose stderr went elsewhere: the variable alone is not enough.
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        #expect(!JournalStream.describes(fd: pipeEnds[1], journalStream: value))
        #expect(!JournalStream.describes(fd: -1, journalStream: value))
    }
}
