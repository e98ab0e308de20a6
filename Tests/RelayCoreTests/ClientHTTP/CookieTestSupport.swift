import Synchronization
@testable import RelayCore

/// A wall clock the test moves by hand, seconds since the epoch.
final class ManualCookieClock: Sendable {
    private let seconds: Mutex<Int64>

    init(_ start: Int64 = 1_700_000_000) { seconds = Mutex(start) }

    var now: Int64 { seconds.withLock { $0 } }

    func advance(_ delta: Int64) { seconds.withLock { $0 += delta } }

    func jar(_ suffixes: PublicSuffixList = .builtIn) -> CookieJar {
        CookieJar(publicSuffixes: suffixes, clock: { [self] in now })
    }
}

func testURL(_ text: String) -> ClientURL {
    // Test URLs are literals; a typo should stop the test at once.
    try! ClientURL(parsing: text)
}
