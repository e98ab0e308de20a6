/// How NTLM compares user names: case-insensitively, the way Windows does.
public enum NTLMUserName {
    /// The form under which two names are the same account for NTLM: Windows' one-unit
    /// uppercasing (`RtlUpcaseUnicodeString`), as NTOWFv2 itself uses. A user store keys
    /// its NTLM lookups by this and refuses a second name that folds to the same key.
    public static func comparisonKey(_ name: String) -> String {
        NTLMVerifier.windowsUppercased(name)
    }
}
