/// The public suffix list (publicsuffix.org): the names under which anyone can register,
/// so that a cookie with `Domain=co.uk` cannot be set for every site in the UK.
///
/// The list is read from the text the Debian `publicsuffix` package installs (rules one a
/// line: normal, wildcard `*.`, exception `!`; `//` comments); the caller reads the file,
/// which keeps this type free of I/O. Without the file, `builtIn` covers the common
/// multi-label suffixes, and the list's implicit `*` rule makes every TLD a suffix anyway.
public struct PublicSuffixList: Sendable {
    /// Where Debian's `publicsuffix` package puts the list.
    public static let systemPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    private var rules: Set<String> = []
    /// `*.ck` is stored as `ck`: any one label under it is a suffix.
    private var wildcards: Set<String> = []
    /// `!www.ck` is stored as `www.ck`: not a suffix despite a wildcard above it.
    private var exceptions: Set<String> = []

    /// Parses the list's text. Lines that are not rules are skipped; Unicode rules are
    /// converted to `xn--` form so they compare with hosts.
    public init(parsing text: String) {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            // "Each line is only read up to the first whitespace".
            guard let rule = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first,
                  !rule.hasPrefix("//")
            else { continue }
            var text = Substring(rule.lowercased())
            var set = \PublicSuffixList.rules
            if text.hasPrefix("!") {
                text = text.dropFirst()
                set = \.exceptions
            } else if text.hasPrefix("*.") {
                text = text.dropFirst(2)
                set = \.wildcards
            }
            guard !text.isEmpty else { continue }
            let ascii = text.split(separator: ".", omittingEmptySubsequences: false).map(Punycode.asciiLabel).joined(separator: ".")
            self[keyPath: set].insert(ascii)
        }
    }

    /// The list the system file holds, or `builtIn` when there is no file (`contents` nil)
    /// or it held no rules.
    public init(systemFileContents contents: String?) {
        let parsed = contents.map(PublicSuffixList.init(parsing:))
        self = parsed.flatMap { $0.rules.isEmpty ? nil : $0 } ?? .builtIn
    }

    /// The fallback when the system list is absent: generic TLDs and the busiest
    /// second-level registries (every TLD is a suffix by the implicit `*` rule already).
    public static let builtIn = PublicSuffixList(parsing: """
        com
        net
        org
        edu
        gov
        mil
        int
        info
        biz
        io
        co
        uk
        co.uk
        org.uk
        me.uk
        ltd.uk
        plc.uk
        net.uk
        ac.uk
        gov.uk
        nhs.uk
        police.uk
        au
        com.au
        net.au
        org.au
        edu.au
        gov.au
        nz
        co.nz
        net.nz
        org.nz
        jp
        co.jp
        ne.jp
        or.jp
        ac.jp
        go.jp
        kr
        co.kr
        br
        com.br
        net.br
        cn
        com.cn
        net.cn
        org.cn
        in
        co.in
        za
        co.za
        mx
        com.mx
        tr
        com.tr
        tw
        com.tw
        hk
        com.hk
        sg
        com.sg
        de
        fr
        nl
        eu
        ca
        us
        """)

    /// The public suffix of a lowercase name (its registrable part's parent), by the
    /// list's algorithm: an exception rule wins, else the matching rule with most labels,
    /// else the last label.
    public func publicSuffix(of domain: String) -> String {
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard !labels.isEmpty else { return domain }
        for start in labels.indices {
            let candidate = labels[start...].joined(separator: ".")
            if exceptions.contains(candidate) {
                return labels[(start + 1)...].joined(separator: ".")
            }
        }
        for start in labels.indices {
            let candidate = labels[start...].joined(separator: ".")
            if rules.contains(candidate) { return candidate }
            if start + 1 < labels.count, wildcards.contains(labels[(start + 1)...].joined(separator: ".")) {
                return candidate
            }
        }
        return String(labels[labels.count - 1])
    }

    /// Whether `domain` is itself a public suffix.
    public func isPublicSuffix(_ domain: String) -> Bool {
        publicSuffix(of: domain) == domain
    }
}
