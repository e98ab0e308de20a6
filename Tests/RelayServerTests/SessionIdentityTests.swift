import Testing
@testable import RelayServer

/// Session ids: 16 lowercase hex digits, distinct within a process.
@Suite struct SessionIdentityTests {
    @Test func idsAreSixteenLowercaseHexDigitsAndDistinct() {
        let generator = SessionIDGenerator()
        var seen: Set<String> = []
        for _ in 0..<20_000 {
            let id = generator.next()
            #expect(id.utf8.count == 16)
            #expect(id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }, "\(id)")
            seen.insert(id)
        }
        #expect(seen.count == 20_000)
        // Every nibble position takes several values: no digit is stuck (a shift or padding bug).
        let ids = Array(seen.prefix(200))
        for position in 0..<16 {
            let digits = Set(ids.map { Array($0.utf8)[position] })
            #expect(digits.count > 4, "position \(position)")
        }
    }
}
