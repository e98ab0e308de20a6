import Foundation
import Testing
@testable import RelayCore

@Suite("Public suffix list")
struct PublicSuffixListTests {
    static let sample = PublicSuffixList(parsing: """
        // a comment
        com
        uk
        co.uk
        *.ck
        !www.ck
        jp
        *.kawasaki.jp
        !city.kawasaki.jp
        公司.cn
        github.io   trailing text after whitespace is ignored

        """)

    @Test(arguments: [
        ("example.com", "com"), ("com", "com"), ("a.b.example.co.uk", "co.uk"), ("co.uk", "co.uk"),
        ("foo.ck", "foo.ck"), ("a.foo.ck", "foo.ck"), ("www.ck", "ck"), ("a.www.ck", "ck"),
        ("x.kawasaki.jp", "x.kawasaki.jp"), ("city.kawasaki.jp", "kawasaki.jp"),
        ("shop.xn--55qx5d.cn", "xn--55qx5d.cn"), ("user.github.io", "github.io"),
        ("unlisted.zz", "zz"), ("zz", "zz"),
    ])
    func suffixByTheListsAlgorithm(domain: String, suffix: String) {
        #expect(Self.sample.publicSuffix(of: domain) == suffix)
    }

    @Test func punycodeMatchesRFC3492() {
        #expect(Punycode.asciiLabel("公司") == "xn--55qx5d")
        #expect(Punycode.asciiLabel("bücher") == "xn--bcher-kva")
        #expect(Punycode.asciiLabel("ελ") == "xn--qxam")
        #expect(Punycode.asciiLabel("рф") == "xn--p1ai")
        #expect(Punycode.asciiLabel("plain") == "plain")
        // RFC 3492 7.1 (L), Japanese: "3年B組金八先生"
        #expect(Punycode.asciiLabel("3年b組金八先生") == "xn--3b-ww4c5e180e575a65lsy2b")
    }

    @Test func builtInFallbackCoversTheCommonSuffixes() {
        let list = PublicSuffixList(systemFileContents: nil)
        #expect(list.isPublicSuffix("com"))
        #expect(list.isPublicSuffix("co.uk"))
        #expect(list.isPublicSuffix("anytld"))
        #expect(!list.isPublicSuffix("example.co.uk"))
        #expect(PublicSuffixList(systemFileContents: "// only comments\n").isPublicSuffix("co.uk"))
    }

    @Test func theDebianListParses() throws {
        let path = PublicSuffixList.systemPath
        // .ci/deps installs Debian's publicsuffix package.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let list = PublicSuffixList(systemFileContents: text)
        #expect(list.isPublicSuffix("com"))
        #expect(list.isPublicSuffix("co.uk"))
        #expect(list.isPublicSuffix("github.io"))
        #expect(list.isPublicSuffix("xn--55qx5d.cn"))
        #expect(list.isPublicSuffix("foo.ck"))
        #expect(!list.isPublicSuffix("www.ck"))
        #expect(!list.isPublicSuffix("example.com"))
        #expect(!list.isPublicSuffix("city.kawasaki.jp"))
        #expect(list.publicSuffix(of: "www.example.co.uk") == "co.uk")
    }
}
