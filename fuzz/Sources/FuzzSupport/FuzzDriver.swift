import CLibFuzzer
import Glibc

/// Runs libFuzzer from a target's `@main`.
///
/// SwiftPM renames an executable's entry point to `<Target>_main` and links it as `main`
/// (so tests can link executables), which displaces the `main` libFuzzer brings. Each
/// target's `@main` therefore starts libFuzzer's driver itself, on the command line it was
/// given (`-max_total_time=N corpus/` and the rest).
public enum FuzzDriver {
    /// Fuzzes `testOneInput` (the target's `LLVMFuzzerTestOneInput`) and exits with
    /// libFuzzer's status.
    public static func run(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
    }
}
