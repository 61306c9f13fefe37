import CSodium

/// The key of an encrypted store: 32 bytes, kept in memory libsodium guards (locked out of swap
/// where the system allows, and zeroed when the key is released). Make one at random and keep it
/// in the platform's key store, or derive one from a passphrase.
public final class StoreKey: @unchecked Sendable, Equatable {
    /// The key's length in bytes.
    public static let length = 32

    // Unchecked Sendable: the bytes are written once, in `init`, and only read after.
    private let bytes: UnsafeMutableRawPointer

    private init(filling body: (UnsafeMutableRawBufferPointer) throws(EncryptionError) -> Void)
        throws(EncryptionError)
    {
        try Sodium.ready()
        guard let memory = sodium_malloc(Self.length) else {
            throw .unavailable("no memory for a key (sodium_malloc)")
        }
        bytes = memory
        do {
            try body(UnsafeMutableRawBufferPointer(start: memory, count: Self.length))
        } catch {
            sodium_free(memory)
            throw error
        }
        sodium_mprotect_readonly(memory)
    }

    deinit {
        // sodium_free zeroes the bytes before it frees them.
        sodium_free(bytes)
    }

    /// Keys are equal when they are the same object (their bytes are never compared outside
    /// libsodium).
    public static func == (lhs: StoreKey, rhs: StoreKey) -> Bool { lhs === rhs }

    /// A new key of 32 random bytes from the system's generator.
    public static func random() throws(EncryptionError) -> StoreKey {
        try StoreKey { buffer throws(EncryptionError) in randombytes_buf(buffer.baseAddress!, buffer.count) }
    }

    /// A key of these 32 bytes (copied; the caller's copy is the caller's to wipe).
    ///
    /// - Throws: ``EncryptionError/invalidKey(_:)`` unless there are exactly 32 bytes.
    public convenience init(bytes source: some Collection<UInt8>) throws(EncryptionError) {
        guard source.count == Self.length else {
            throw .invalidKey("a store key is \(Self.length) bytes, not \(source.count)")
        }
        try self.init { buffer throws(EncryptionError) in
            for (offset, byte) in source.enumerated() { buffer[offset] = byte }
        }
    }

    /// The key a passphrase gives with `salt` and `parameters` (Argon2id, memory-hard): the same
    /// passphrase, salt and parameters give the same key.
    ///
    /// - Throws: ``EncryptionError/invalidKey(_:)`` for a salt that is not 16 bytes or parameters
    ///   libsodium refuses, ``EncryptionError/unavailable(_:)`` when the derivation runs out of memory.
    public convenience init(passphrase: String, salt: [UInt8], parameters: KeyDerivation)
        throws(EncryptionError)
    {
        guard salt.count == Int(crypto_pwhash_SALTBYTES) else {
            throw .invalidKey("a passphrase's salt is \(crypto_pwhash_SALTBYTES) bytes, not \(salt.count)")
        }
        try parameters.validate()
        var passphrase = passphrase
        try self.init { buffer throws(EncryptionError) in
            let status = passphrase.withUTF8 { text in
                salt.withUnsafeBufferPointer { salt in
                    crypto_pwhash(
                        buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(buffer.count),
                        UnsafeRawPointer(text.baseAddress!).assumingMemoryBound(to: CChar.self),
                        UInt64(text.count), salt.baseAddress!, parameters.operations, Int(parameters.memory),
                        crypto_pwhash_ALG_ARGON2ID13)
                }
            }
            guard status == 0 else {
                throw .unavailable("Argon2id ran out of memory (\(parameters.memory) bytes asked)")
            }
        }
    }

    /// Calls `body` with the key's bytes; they must not escape it.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: bytes, count: Self.length))
    }
}

/// The cost of deriving a key from a passphrase with Argon2id: passes over memory and the memory
/// used. To be kept in the store beside the salt, so that the same passphrase opens it anywhere.
public struct KeyDerivation: Equatable, Sendable {
    /// Passes over the memory (libsodium's `opslimit`).
    public var operations: UInt64
    /// Bytes of memory the derivation uses (libsodium's `memlimit`).
    public var memory: UInt64

    /// Makes parameters.
    public init(operations: UInt64, memory: UInt64) {
        self.operations = operations
        self.memory = memory
    }

    /// libsodium's interactive level: 2 passes over 64 MiB (well under a second here).
    public static let interactive = KeyDerivation(
        operations: UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE),
        memory: UInt64(crypto_pwhash_MEMLIMIT_INTERACTIVE))
    /// libsodium's moderate level: 3 passes over 256 MiB.
    public static let moderate = KeyDerivation(
        operations: UInt64(crypto_pwhash_OPSLIMIT_MODERATE), memory: UInt64(crypto_pwhash_MEMLIMIT_MODERATE))

    /// A 16-byte random salt for a new store.
    public static func newSalt() throws(EncryptionError) -> [UInt8] {
        try Sodium.randomBytes(Int(crypto_pwhash_SALTBYTES))
    }

    func validate() throws(EncryptionError) {
        guard operations >= UInt64(crypto_pwhash_OPSLIMIT_MIN),
            operations <= UInt64(crypto_pwhash_OPSLIMIT_MAX),
            memory >= UInt64(crypto_pwhash_MEMLIMIT_MIN), memory <= UInt64(Int.max)
        else {
            throw .invalidKey(
                "Argon2id parameters out of range: \(operations) passes over \(memory) bytes "
                    + "(at least \(crypto_pwhash_OPSLIMIT_MIN) passes over \(crypto_pwhash_MEMLIMIT_MIN) bytes)"
            )
        }
    }
}
