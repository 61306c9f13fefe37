import CSodium

/// libsodium, made ready once per process (`sodium_init`), for the store's encryption.
enum Sodium {
    /// Whether libsodium initialized (it fails only when the system has no source of randomness).
    private static let initialized: Bool = sodium_init() >= 0

    /// Throws ``EncryptionError/unavailable(_:)`` unless libsodium is ready.
    static func ready() throws(EncryptionError) {
        guard initialized else {
            throw .unavailable("libsodium could not initialize (no source of randomness on this system)")
        }
    }

    /// `count` random bytes from the system's generator.
    static func randomBytes(_ count: Int) throws(EncryptionError) -> [UInt8] {
        try ready()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return bytes
    }
}
