/// What goes wrong with a store's encryption: its key, the record of it the store keeps, and
/// sealed entries.
public enum EncryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The cryptographic library cannot be used on this system.
    case unavailable(String)
    /// Key material of the wrong size, or derivation parameters out of range.
    case invalidKey(String)
    /// A sealed value failed authentication: the wrong key, a damaged byte, or a value moved from
    /// where it was sealed (another key or type).
    case sealBroken(String)
    /// The store is encrypted and no key was given.
    case keyMissing
    /// The key given is not the store's (or the passphrase is not).
    case wrongKey
    /// A key was given for a store that is not encrypted.
    case notEncrypted
    /// The store was encrypted by a newer version of Lode, whose format this one does not know.
    case newerFormat(Int)
    /// The store's record of its encryption (in `@meta`) is damaged: a salt cut short, a missing key
    /// check.
    case damagedKeyRecord(String)
    /// The store's key is being changed (``Store/changeEncryption(at:from:to:fileMode:progress:)``)
    /// by a process still running.
    case keyChangeInProgress
    /// A change of the store's key needs the store closed everywhere; something (named) has it open.
    case storeOpen(String)
    /// An index of an encrypted store was asked for in key order: its keys are stored hashed, so
    /// it finds whole values but cannot be walked.
    case unorderedIndex(type: String, index: String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .unavailable(let reason): return "encryption is unavailable: \(reason)"
        case .invalidKey(let reason): return "invalid encryption key: \(reason)"
        case .sealBroken(let reason): return "a sealed value does not open: \(reason)"
        case .keyMissing: return "the store is encrypted: give its key (the configuration's encryption)"
        case .wrongKey: return "the key given does not open the store (a wrong key or passphrase)"
        case .notEncrypted:
            return
                "the store is not encrypted, and a key was given (encrypt it with changeEncryption(at:from:to:), or open it without a key)"
        case .newerFormat(let format):
            return "the store is encrypted in format \(format), newer than this version of Lode knows (1)"
        case .damagedKeyRecord(let reason):
            return "the store's record of its encryption is damaged: \(reason)"
        case .keyChangeInProgress:
            return "the store's key is being changed by a process still running; open it after"
        case .unorderedIndex(let type, let index):
            return
                "index \(index) of \(type) keeps hashed keys in an encrypted store: it finds whole values, it cannot be walked in order"
        case .storeOpen(let opener):
            return
                "the store's key cannot change while it is open (\(opener) has it open): close it everywhere first"
        }
    }
}
