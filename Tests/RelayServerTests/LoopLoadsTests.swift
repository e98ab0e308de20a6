import Testing
@testable import RelayServer

/// Where accepted connections live: clients arriving one by one at the same loop spread
/// over all loops, and a connection stays where it was accepted unless another loop holds
/// fewer.
@Suite("loop loads")
struct LoopLoadsTests {
    @Test("four streams accepted one by one on loop 0 of two: two on each")
    func sequentialArrivalsSpread() {
        let loads = LoopLoads(loops: 2)
        let placed = (0..<4).map { _ in loads.place(acceptedOn: 0) }
        #expect(placed == [0, 1, 0, 1])
        #expect(loads.count(0) == 2 && loads.count(1) == 2)
    }

    @Test("a tie keeps the connection on the loop that accepted it")
    func tieStays() {
        let loads = LoopLoads(loops: 3)
        #expect(loads.place(acceptedOn: 2) == 2)
        #expect(loads.place(acceptedOn: 0) == 0)
        #expect(loads.place(acceptedOn: 1) == 1)
        #expect(loads.place(acceptedOn: 1) == 1)
        #expect(loads.place(acceptedOn: 1) == 0, "loop 1 holds two, loop 0 one: the least loaded, the first of equals")
    }

    @Test("released connections make room: the next one goes where the load fell")
    func releaseMovesPlacement() {
        let loads = LoopLoads(loops: 2)
        for _ in 0..<4 { _ = loads.place(acceptedOn: 0) }
        loads.release(1)
        loads.release(1)
        #expect(loads.place(acceptedOn: 0) == 1)
        #expect(loads.count(0) == 2 && loads.count(1) == 1)
    }

    @Test("one loop: everything stays")
    func singleLoop() {
        let loads = LoopLoads(loops: 1)
        #expect((0..<5).map { _ in loads.place(acceptedOn: 0) } == [0, 0, 0, 0, 0])
        #expect(loads.count(0) == 5)
    }
}
