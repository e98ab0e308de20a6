import Foundation
import Glibc

/// An `openssl s_server` or `s_client` process on loopback: stdin a pipe the test writes
/// (closing it ends an s_client in order), stdout and stderr into a file the test reads.
/// Every wait is bounded; `stop` kills what is still running.
final class OpenSSLPeer: @unchecked Sendable {  // used from the test thread only
    private let process = Process()
    private let input = Pipe()
    private let outputPath: String

    private init(_ arguments: [String], inputFile: String? = nil) throws {
        outputPath = TLSTestCertificates.shared.path("peer-\(UInt64.random(in: 0...UInt64.max)).log")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardInput = inputFile.flatMap { FileHandle(forReadingAtPath: $0) } ?? input
        _ = FileManager.default.createFile(atPath: outputPath + ".err", contents: nil)
        // Apart, so that what it prints of the stream stays byte-exact.
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)!
        process.standardError = FileHandle(forWritingAtPath: outputPath + ".err")!
        try process.run()
    }

    deinit { stop() }

    /// `openssl s_server` on 127.0.0.1, an ephemeral port; returns once it listens.
    /// `-rev` makes it answer each line with the line reversed.
    static func server(_ arguments: [String]) throws -> (peer: OpenSSLPeer, port: UInt16) {
        let peer = try OpenSSLPeer(["s_server", "-accept", "127.0.0.1:0", "-rev"] + arguments)
        var port: UInt16?
        let listening = eventually(within: .seconds(10)) {
            guard let line = peer.output.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT") }),
                  let value = line.split(separator: ":").last.flatMap({ UInt16($0) }) else { return false }
            port = value
            return true
        }
        guard listening, let port else { throw TLSTestCertificates.CommandFailed(description: "s_server: \(peer.output)") }
        return (peer, port)
    }

    /// `openssl s_client` to 127.0.0.1:`port`; `inputFile` is what it sends instead of
    /// what the test writes (it ends the stream at the file's end).
    static func client(port: UInt16, _ arguments: [String], inputFile: String? = nil) throws -> OpenSSLPeer {
        try OpenSSLPeer(["s_client", "-connect", "127.0.0.1:\(port)"] + arguments, inputFile: inputFile)
    }

    /// What it printed, stdout then stderr, as text.
    var output: String {
        ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: outputPath + ".err", encoding: .utf8)) ?? "")
    }

    /// Everything it printed on stdout, as bytes.
    var outputBytes: [UInt8] {
        FileManager.default.contents(atPath: outputPath).map { [UInt8]($0) } ?? []
    }

    func send(_ text: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// Closes its stdin: an s_client sends close_notify and exits.
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Waits (bounded) for the process to exit; false if it is still running.
    @discardableResult
    func waitForExit(within timeout: Duration = .seconds(10)) -> Bool {
        eventually(within: timeout) { !process.isRunning }
    }

    /// Kills it at once (SIGKILL: no close_notify, the kernel sends a bare FIN).
    func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        waitForExit()
    }

    /// Ends it at once. SIGKILL, not SIGTERM: the test process may block SIGTERM (a signal
    /// source elsewhere in it), and a child inherits the mask.
    func stop() {
        closeInput()
        kill()
    }
}
