/// The one rule for resolved addresses, shared by CONNECT, forwarded requests and static forwards.
extension Registry {
    /// Resolve once, check every address, connect only to checked ones. One address the rules
    /// refuse makes the whole answer suspect (a rebinding attempt looks exactly like this), so
    /// the first refusal is returned together with the address that caused it. `localHost`
    /// (the relay's own addresses and listeners) is nil only where the host is not known.
    public func checkAll(_ addresses: [IPAddress], port: UInt16, allowRule: String, localHost: LocalHost?)
        -> (refusal: (address: IPAddress, rule: String?, reason: ReasonCode)?, ordered: [IPAddress]) {
        for address in addresses {
            if case .deny(let rule, let reason) = checkResolved(address: address, port: port, allowRule: allowRule, localHost: localHost) {
                return ((address, rule, reason), [])
            }
        }
        return (nil, addresses)
    }
}
