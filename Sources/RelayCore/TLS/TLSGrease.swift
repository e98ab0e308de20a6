/// GREASE (RFC 8701): reserved values clients put in every list so that servers and
/// middleboxes learn to ignore what they do not know. They never name a real version,
/// suite or extension, so every list the inspector reads skips them.
enum TLSGrease {
    /// `0x?A?A` with both bytes equal: the sixteen 16-bit GREASE values.
    static func contains(_ value: UInt16) -> Bool {
        value & 0x0F0F == 0x0A0A && value >> 8 == value & 0xFF
    }
}
