import Dispatch
import Testing
@testable import RelayCore

/// The relay's own host: which endpoints are its listeners and which addresses its own.
@Suite("LocalHost")
struct LocalHostTests {
    static func listener(_ text: String, _ port: UInt16) -> ListenAddress {
        ListenAddress(host: text.contains(":") ? v6(text) : v4(text), port: port)
    }

    static func localHost() -> LocalHost {
        let localHost = LocalHost()
        localHost.update(interfaceAddresses: [v4("127.0.0.1"), v4("10.0.0.5"), v6("::1"), v6("2001:db8::5"), v6("fe80::5")])
        localHost.update(listeners: [listener("0.0.0.0", 3128), listener("127.0.0.1", 3129), listener("2001:db8::5", 3130)])
        return localHost
    }

    @Test("an unspecified listener is reached at every local address", arguments: [
        "127.0.0.1", "127.9.9.9", "10.0.0.5", "0.0.0.0", "::1", "::", "2001:db8::5", "fe80::5",
        "::ffff:127.0.0.1", "::ffff:10.0.0.5", "64:ff9b::a00:5", "2002:a00:5::",
    ])
    func unspecifiedListener(address: String) {
        let ip = address.contains(":") ? v6(address) : v4(address)
        #expect(Self.localHost().isRelayEndpoint(ip, port: 3128), "\(address)")
        #expect(!Self.localHost().isRelayEndpoint(ip, port: 3127), "\(address): not a listening port")
    }

    @Test func aBoundListenerIsReachedAtItsAddressOnly() {
        let localHost = Self.localHost()
        #expect(localHost.isRelayEndpoint(v4("127.0.0.1"), port: 3129))
        #expect(localHost.isRelayEndpoint(v6("::ffff:127.0.0.1"), port: 3129))
        #expect(localHost.isRelayEndpoint(v4("0.0.0.0"), port: 3129), "the unspecified destination is the host itself")
        #expect(!localHost.isRelayEndpoint(v4("127.0.0.2"), port: 3129))
        #expect(!localHost.isRelayEndpoint(v4("10.0.0.5"), port: 3129))
        #expect(localHost.isRelayEndpoint(v6("2001:db8::5"), port: 3130))
        #expect(!localHost.isRelayEndpoint(v6("::1"), port: 3130))
    }

    @Test func otherHostsAreNeverEndpoints() {
        let localHost = Self.localHost()
        for address in [v4("10.0.0.6"), v4("192.0.2.1"), v6("2001:db8::6")] {
            #expect(!localHost.isRelayEndpoint(address, port: 3128), "\(address)")
            #expect(!localHost.isOwnAddress(address), "\(address)")
        }
    }

    @Test func ownAddressesSeeThroughEmbeddedIPv4() {
        let localHost = Self.localHost()
        #expect(localHost.isOwnAddress(v4("10.0.0.5")))
        #expect(localHost.isOwnAddress(v6("::ffff:10.0.0.5")))
        #expect(localHost.isOwnAddress(v6("64:ff9b::a00:5")))
        #expect(localHost.isOwnAddress(v6("fe80::5")))
        #expect(localHost.namesOnlyOwnAddress(CIDR(address: v4("10.0.0.5"))))
        #expect(!localHost.namesOnlyOwnAddress(CIDR(base: v4("10.0.0.0"), prefix: 8)!))
    }

    @Test func anUpdateReplacesTheWholeSnapshot() {
        let localHost = Self.localHost()
        localHost.update(listeners: [Self.listener("10.0.0.5", 8080)])
        #expect(!localHost.isRelayEndpoint(v4("127.0.0.1"), port: 3128))
        #expect(localHost.isRelayEndpoint(v4("10.0.0.5"), port: 8080))
        localHost.update(interfaceAddresses: [])
        #expect(!localHost.isOwnAddress(v4("10.0.0.5")))
        #expect(!LocalHost().isRelayEndpoint(v4("0.0.0.0"), port: 3128), "a host that knows nothing has no endpoints")
    }

    /// Loops read it while the server replaces it: reads and writes interleave freely, and
    /// the last update is what stays.
    @Test func readsRaceUpdates() {
        let localHost = LocalHost()
        let a = [Self.listener("0.0.0.0", 1000)], b = [Self.listener("0.0.0.0", 2000)]
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for round in 0..<2_000 {
                if worker == 0 {
                    localHost.update(listeners: round % 2 == 0 ? a : b)
                    localHost.update(interfaceAddresses: round % 2 == 0 ? [v4("10.0.0.5")] : [])
                } else {
                    _ = localHost.isRelayEndpoint(v4("10.0.0.5"), port: round % 2 == 0 ? 1000 : 2000)
                    _ = localHost.isOwnAddress(v4("10.0.0.5"))
                }
            }
        }
        #expect(localHost.isRelayEndpoint(v4("127.0.0.1"), port: 2000))
        #expect(!localHost.isRelayEndpoint(v4("127.0.0.1"), port: 1000))
        #expect(!localHost.isOwnAddress(v4("10.0.0.5")))
    }
}
