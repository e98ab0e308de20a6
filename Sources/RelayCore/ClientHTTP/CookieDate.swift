/// The cookie-date algorithm of RFC 6265 §5.1.1: how user agents read `Expires`, which in
/// the wild comes in every date format ever written. Seconds since the Unix epoch, UTC.
enum CookieDate {
    /// The instant `text` names, or nil when the algorithm says to ignore the attribute.
    static func parse(_ text: String) -> Int64? {
        var time: (hour: Int, minute: Int, second: Int)?
        var dayOfMonth: Int?
        var month: Int?
        var year: Int?
        for token in text.utf8.split(whereSeparator: isDelimiter) {
            if time == nil, let found = parseTime(token) {
                time = found
            } else if dayOfMonth == nil, let found = leadingDigits(token, min: 1, max: 2) {
                dayOfMonth = found
            } else if month == nil, let found = parseMonth(token) {
                month = found
            } else if year == nil, let found = leadingDigits(token, min: 2, max: 4) {
                year = found
            }
        }
        guard let time, let dayOfMonth, let month, var year else { return nil }
        if year >= 70 && year <= 99 { year += 1900 } else if year >= 0 && year <= 69 { year += 2000 }
        guard dayOfMonth >= 1, dayOfMonth <= 31, year >= 1601,
              time.hour <= 23, time.minute <= 59, time.second <= 59,
              dayOfMonth <= daysIn(month: month, year: year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: dayOfMonth)
        return days * 86_400 + Int64(time.hour * 3600 + time.minute * 60 + time.second)
    }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte)
            || (0x5B...0x60).contains(byte) || (0x7B...0x7E).contains(byte)
    }

    /// `1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT ( non-digit *OCTET )`.
    private static func parseTime(_ token: Substring.UTF8View.SubSequence) -> (Int, Int, Int)? {
        var fields: [Int] = []
        var rest = token[...]
        for index in 0..<3 {
            let digits = rest.prefix { HTTPBytes.isDigit($0) }
            guard (1...2).contains(digits.count) else { return nil }
            fields.append(digits.reduce(0) { $0 * 10 + Int($1 - 0x30) })
            rest = rest[digits.endIndex...]
            if index < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        if let next = rest.first, HTTPBytes.isDigit(next) { return nil }
        return (fields[0], fields[1], fields[2])
    }

    /// `min*maxDIGIT ( non-digit *OCTET )`.
    private static func leadingDigits(_ token: Substring.UTF8View.SubSequence, min: Int, max: Int) -> Int? {
        let digits = token.prefix { HTTPBytes.isDigit($0) }
        guard digits.count >= min, digits.count <= max else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// The first three bytes, case-insensitively, name a month.
    private static func parseMonth(_ token: Substring.UTF8View.SubSequence) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3).map(HTTPBytes.asciiLowercased), as: UTF8.self)
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }

    /// "If the date does not exist" (§5.1.1 step 5): 31 February is refused, not rolled over.
    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
