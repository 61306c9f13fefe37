/// What goes wrong with a store's encryption keys and sealed records.
package enum EncryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The cryptographic library cannot be used on this system.
    case unavailable(String)
    /// Key material of the wrong size, or derivation parameters out of range.
    case invalidKey(String)
    /// A sealed value failed authentication: the wrong key, a damaged byte, or a value moved from
    /// where it was sealed (another key or type).
    case sealBroken(String)

    /// What went wrong, in words.
    package var description: String {
        switch self {
        case .unavailable(let reason): return "encryption is unavailable: \(reason)"
        case .invalidKey(let reason): return "invalid encryption key: \(reason)"
        case .sealBroken(let reason): return "a sealed value does not open: \(reason)"
        }
    }
}
