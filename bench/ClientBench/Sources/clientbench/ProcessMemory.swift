import Glibc

/// This process's memory as `/proc/self/status` reports it, in KiB.
enum ProcessMemory {
    /// Resident now (`VmRSS`).
    static var residentKiB: Int { field("VmRSS:") }
    /// The most ever resident (`VmHWM`).
    static var peakKiB: Int { field("VmHWM:") }

    private static func field(_ name: String) -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(cString: line)
            if text.hasPrefix(name) {
                return Int(text.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
            }
        }
        return 0
    }
}

/// Wall-clock seconds since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// `value` with `digits` decimals, for result lines.
func fixed(_ value: Double, _ digits: Int = 1) -> String {
    var factor = 1.0
    for _ in 0..<digits { factor *= 10 }
    let scaled = (value * factor).rounded() / factor
    return digits == 0 ? String(Int(scaled)) : String(scaled)
}
