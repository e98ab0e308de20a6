import FuzzSupport
import RelayCore

/// The host normaliser on request-host text, bracketed and not: a host it accepts is a
/// fixed point (its text normalises to itself in one step), a name is lowercase, bounded
/// and without a trailing dot, and a refusal is one of the two host reasons. The strict
/// IPv4 and IPv6 readers it builds on print what they read.
@main
enum FuzzHostNormalizer {
    static func main() {
        FuzzDriver.run(fuzzHostNormalizer)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHostNormalizer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    for bracketed in [false, true] {
        switch HostNormalizer.normalize(text, bracketed: bracketed) {
        case .success(let host):
            let again = HostNormalizer.normalize(host.description, bracketed: false)
            invariant(again == .success(host), "\(text.debugDescription) became \(host), which normalises to \(again)")
            if case .name(let name) = host {
                invariant(name.utf8.count <= HostNormalizer.maxNameLength && name == name.lowercased() && !name.hasSuffix("."),
                          "name \(name.debugDescription)")
            }
            if bracketed {
                var isIPv6 = false
                if case .ipv6 = host { isIPv6 = true }
                invariant(isIPv6, "a bracketed host became \(host)")
            }
        case .failure(let error):
            invariant([.ambiguousHost, .badTarget].contains(error.reason), "refused with \(error.reason)")
        }
    }
    if let address = IPv4Address(strict: text) {
        invariant(address.description == text, "IPv4 \(text.debugDescription) prints as \(address)")
    }
    if let address = IPv6Address(text: text) {
        invariant(IPv6Address(text: address.description) == address, "IPv6 \(text.debugDescription) prints as \(address)")
        invariant(IPv6Address(bytes: address.bytes) == address, "IPv6 \(address) does not survive its bytes")
    }
    return 0
}
