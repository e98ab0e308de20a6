import Testing

/// Every suite that starts `dynrelay` nests in here, so the whole integration run is
/// serialized: the suites share 2 cores with each other's relays and upstreams, and the
/// memory-bound test must not measure another test's traffic.
@Suite("dynrelay binary (integration)", .serialized)
struct IntegrationSuite {}
