import Testing
@testable import RelayCore

@Suite("HTTP field value scan and byte search")
struct HTTPFieldValueScanTests {
    @Test func plainBytesAreTheFieldValueBytesThatNeedNoThought() {
        for b in UInt8.min...UInt8.max {
            let expected = HTTPBytes.isFieldValueByte(b) && b != HTTPBytes.htab && b < 0x80
            #expect(HTTPFieldValueScan.isPlain(b) == expected, "byte \(b)")
        }
    }

    /// Every byte value at every position of a word otherwise plain, then of a word otherwise
    /// full of one non-plain byte, then random words: the word test must agree with the bytes.
    @Test func plainWordAgreesWithItsBytes() {
        let words = WordTestCases.words(fillers: [0x41, 0x20, 0x7E, 0x00, 0x1F, 0x7F, 0x80, 0xFF],
                                        interesting: [0x00, 0x09, 0x0D, 0x1F, 0x20, 0x21, 0x7E, 0x7F, 0x80, 0xFF, 0x41],
                                        seed: 0x5CA7)
        for word in words {
            #expect(HTTPFieldValueScan.isPlainWord(word) == WordTestCases.everyByte(of: word, HTTPFieldValueScan.isPlain),
                    "word \(word)")
        }
    }

    /// The scan must stop at the first byte a field value may not hold, and report non-ASCII
    /// bytes before it, wherever they fall relative to the eight-byte steps.
    @Test func scanStopsWhereAPlainLoopStops() {
        var rng = SplitMix64(state: 0xF1E1D)
        let rare: [UInt8] = [0x09, 0x80, 0xC3, 0xA9, 0xFF, 0x00, 0x7F, 0x0A, 0x1B]
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...40, using: &rng)
            var line: [UInt8] = (0..<length).map { _ in
                Int.random(in: 0..<6, using: &rng) == 0 ? rare.randomElement(using: &rng)! : UInt8.random(in: 0x20...0x7E, using: &rng)
            }
            line += [HTTPBytes.cr, HTTPBytes.lf]
            let from = Int.random(in: 0...length, using: &rng)
            var expectedStop = from
            var expectedNonASCII = false
            while HTTPBytes.isFieldValueByte(line[expectedStop]) {
                expectedNonASCII = expectedNonASCII || line[expectedStop] >= 0x80
                expectedStop += 1
            }
            let (stop, nonASCII) = line.withUnsafeBufferPointer {
                HTTPFieldValueScan.scan($0.baseAddress!, from: from, limit: length)
            }
            #expect(stop == expectedStop && nonASCII == expectedNonASCII, "\(line) from \(from)")
        }
    }

    @Test func byteSearchFindsTheFirstInRange() {
        var rng = SplitMix64(state: 0xC0FFEE)
        for _ in 0..<5_000 {
            let bytes: [UInt8] = (0..<Int.random(in: 0...80, using: &rng)).map { _ in
                [HTTPBytes.cr, HTTPBytes.lf, 0x41, 0x20].randomElement(using: &rng)!
            }
            let from = Int.random(in: 0...bytes.count, using: &rng)
            let to = Int.random(in: from...bytes.count, using: &rng)
            for target in [HTTPBytes.cr, HTTPBytes.lf] {
                let found = bytes.withUnsafeBytes { HTTPByteSearch.first(target, $0.baseAddress!, from: from, to: to) }
                #expect(found == bytes[from..<to].firstIndex(of: target), "\(bytes) \(from)..<\(to)")
            }
        }
        #expect(HTTPByteSearch.first(HTTPBytes.cr, UnsafeRawPointer(bitPattern: 8)!, from: 3, to: 3) == nil)
    }
}
