import Foundation
import Testing
@testable import RelayCore

/// The loader against a real temporary directory: globs, relative paths, unreadable files.
@Suite("ConfigFileLoader")
struct ConfigFileLoaderTests {
    /// A fresh directory with `files` written into it; removed by the caller.
    private func directory(_ files: [String: String]) throws -> String {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("dynrelay-config-\(UUID().uuidString)").path
        for (name, text) in files {
            let path = base + "/" + name
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        return base
    }

    private func loadError(_ path: String) -> String? {
        do {
            _ = try ConfigFileLoader.load(path: path)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("loads includes relative to the including file, globbed and sorted")
    func loads() throws {
        let dir = try directory([
            "dynrelay.conf": "listen 127.0.0.1:0\ninclude conf.d/*.conf\ninclude empty.d/*.conf\n",
            "conf.d/20-b.conf": "server b.example:443\n",
            "conf.d/10-a.conf": "server a.example:443\ninclude ../more/x.conf\n",
            "more/x.conf": "deny *:25\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = try ConfigFileLoader.load(path: dir + "/dynrelay.conf")
        #expect(config.sourceFiles == [dir + "/dynrelay.conf", dir + "/conf.d/10-a.conf", dir + "/conf.d/../more/x.conf",
                                       dir + "/conf.d/20-b.conf"])
        #expect(config.rules.map(\.rule) == [dir + "/conf.d/10-a.conf:1", dir + "/conf.d/../more/x.conf:1",
                                             dir + "/conf.d/20-b.conf:1"])
    }

    @Test("missing, cyclic, non-regular and non-UTF-8 files are errors with locations")
    func failures() throws {
        let dir = try directory([
            "missing.conf": "listen 127.0.0.1:0\ninclude nope.conf\n",
            "self.conf": "listen 127.0.0.1:0\ninclude ./self.conf\n",
            "dir.conf": "listen 127.0.0.1:0\ninclude sub\n",
            "sub/x.conf": "",
            "latin1.conf": "listen 127.0.0.1:0\ninclude latin1.d/*.conf\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/latin1.d", withIntermediateDirectories: true)
        try Data([0x23, 0xE9, 0x0A]).write(to: URL(fileURLWithPath: dir + "/latin1.d/x.conf"))
        #expect(loadError(dir + "/absent.conf") == "\(dir)/absent.conf:1:1: cannot read '\(dir)/absent.conf': No such file or directory")
        #expect(loadError(dir + "/missing.conf") == "\(dir)/missing.conf:2:9: cannot read '\(dir)/nope.conf': No such file or directory")
        #expect(loadError(dir + "/self.conf") == "\(dir)/self.conf:2:9: include cycle: \(dir)/self.conf -> \(dir)/./self.conf")
        #expect(loadError(dir + "/dir.conf") == "\(dir)/dir.conf:2:9: cannot read '\(dir)/sub': not a regular file")
        #expect(loadError(dir + "/latin1.conf") == "\(dir)/latin1.conf:2:9: cannot read '\(dir)/latin1.d/x.conf': not valid UTF-8")
    }
}
