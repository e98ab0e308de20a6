/// The Punycode encoder of RFC 3492 (§6.3), for the one place Unicode names reach the
/// client: the public suffix list writes IDN rules in Unicode, while hosts arrive as
/// `xn--` labels, so each rule is converted before it can be compared.
enum Punycode {
    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700
    private static let initialBias = 72, initialN = 128

    /// A label as IDNA writes it: unchanged when ASCII, else `xn--` and its Punycode.
    /// The input is taken as already mapped and normalised (lowercase, NFC), as the list is.
    static func asciiLabel(_ label: Substring) -> String {
        if label.unicodeScalars.allSatisfy(\.isASCII) { return String(label) }
        return "xn--" + encode(label.unicodeScalars.map { Int($0.value) })
    }

    static func encode(_ input: [Int]) -> String {
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN, delta = 0, bias = initialBias
        while handled < input.count {
            let next = input.filter { $0 >= n }.min()!
            delta += (next - n) * (handled + 1)
            n = next
            for codePoint in input {
                if codePoint < n { delta += 1 }
                guard codePoint == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, pointCount: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 0x61 + value : 0x30 + value - 26)))
    }

    private static func adapt(_ delta: Int, pointCount: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / pointCount
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
