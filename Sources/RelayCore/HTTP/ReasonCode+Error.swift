/// HTTP parsing and framing fail with nothing more to say than the reason code itself (there
/// is no errno or library cause underneath pure byte checks), so the code *is* the error:
/// `Result<BodyFraming, ReasonCode>` lets callers switch on the exact code they put into the
/// refusal body and the audit row, with no wrapper to unpack.
extension ReasonCode: Error {}
