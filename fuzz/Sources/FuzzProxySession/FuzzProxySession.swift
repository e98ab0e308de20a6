import FuzzSupport
import RelayCore

/// `ProxySession` driven by a script of events a real environment could produce given the
/// actions the session returned so far (`SessionScript`), checked after every step by
/// `SessionWorld`: no trap, nothing but audit rows after the session ends, no upstream
/// byte or tunnel before a committed open row, no connection to an address the rules
/// guard, one upstream at a time, a balanced header timer, no proxy credentials upstream.
/// At the end of the script the connection is lost, every owed commit is answered, and
/// then every stored open row must have its close row (or have become a tunnel) and every
/// tunnel place must have gone back.
@main
enum FuzzProxySession {
    static func main() {
        FuzzDriver.run(fuzzProxySession)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzProxySession(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var script = SessionScript(FuzzInput(data, size))
    script.run()
    return 0
}
