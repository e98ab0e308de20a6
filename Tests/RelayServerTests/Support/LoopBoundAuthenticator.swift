import RelayCore
import RelayIO
@testable import RelayServer

/// A `ConnectionAuthenticator` belongs to its connection's loop: a test holds one bound to
/// that loop and drives it there, as `ClientConnection` does.
extension ConnectionAuthenticator {
    /// An authenticator for a connection on `loop`, made on the test thread and handed to the loop.
    static func bound(shared: ProxyAuthenticator, loop: EventLoop, clientAddress: String) -> LoopBound<ConnectionAuthenticator> {
        LoopBound(sending: ConnectionAuthenticator(shared: shared, loop: loop, clientAddress: clientAddress), on: loop)
    }
}

extension LoopBound where Value == ConnectionAuthenticator {
    /// Authenticates `request` on the authenticator's loop, from any thread; `completion`
    /// runs on that loop.
    func authenticate(_ request: ProxyAuthRequest, completion: @escaping @Sendable (ProxyAuthOutcome) -> Void) {
        loop.execute { value.authenticate(request, completion: completion) }
    }
}
