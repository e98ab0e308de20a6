import FuzzSupport
import RelayClient
import RelayCore

/// The client side of CONNECT on whatever a proxy answers: the same outcome however the
/// answer is split into reads; an established tunnel hands over exactly the bytes after
/// the head; a refusal carries the status the head had.
@main
enum FuzzConnectHandshake {
    static func main() {
        FuzzDriver.run(fuzzConnectHandshake)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzConnectHandshake(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let answer = Array(UnsafeBufferPointer(start: data, count: size))
    // Where the leftover stops depends on the read that completed the head, and whether a
    // refusal's connection can be kept depends on whether bytes past its body came in the
    // same read (they make it unusable); nothing else may.
    _ = SplitInvariance.check(answer) { ConnectExchange.run(answer, cuts: $0).splitIndependent }
    let whole = ConnectExchange.run(answer, cuts: [])

    var parser = HTTPResponseHeadParser()
    let head = answer.withUnsafeBytes { parser.parse($0) }
    switch (whole, head) {
    case (.established(let leftover), .complete(let parsed, let length)):
        invariant((200..<300).contains(parsed.status), "established on \(parsed.status)")
        invariant(leftover == Array(answer[length...]), "leftover \(leftover.count) bytes, \(answer.count - length) after the head")
    case (.established, _):
        invariant(false, "established without a complete head: \(head)")
    case (.failed(let failure), .complete(let parsed, _)):
        invariant(failure.status == parsed.status && !(200..<300).contains(parsed.status),
                  "refused with \(failure.status), head had \(parsed.status)")
    case (.failed(let failure), _):
        invariant(failure.status == 0, "refused with \(failure.status) without a head")
    }
    return 0
}

/// One CONNECT handshake against a scripted answer, used as its contract allows: `start`
/// once, `receive` until an outcome, `receiveEOF` if the answer ends first.
enum ConnectExchange: Equatable {
    case established(leftover: [UInt8])
    case failed(ProxyConnectHandshake.Failure)

    /// The outcome without what a split may change: the leftover of an established tunnel,
    /// and whether a refused connection can be kept.
    var splitIndependent: ConnectExchange {
        switch self {
        case .established: return .established(leftover: [])
        case .failed(var failure):
            failure.keepsConnection = false
            return .failed(failure)
        }
    }

    static func run(_ answer: [UInt8], cuts: [Int]) -> ConnectExchange {
        var handshake = ProxyConnectHandshake(host: "app1.corp.example", port: 443,
                                              extraHeaders: [(name: "Proxy-Authorization", value: "Basic dTpw")])
        let request = handshake.start()
        invariant(request.starts(with: Array("CONNECT app1.corp.example:443 HTTP/1.1\r\n".utf8)), "request \(request)")
        var start = 0
        for end in cuts + [answer.count] where end >= start {
            switch handshake.receive(Array(answer[start..<end])) {
            case .needMore: start = end
            case .established(let leftover): return .established(leftover: leftover)
            case .failed(let failure): return .failed(failure)
            }
        }
        return .failed(handshake.receiveEOF())
    }
}
