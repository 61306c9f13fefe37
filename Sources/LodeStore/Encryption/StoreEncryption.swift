import Foundation
import LMDB
import LodeCodec

/// How an encrypted store gets its key (``StoreConfiguration/encryption``).
///
/// Records, index entries, links, the change log and the sync layer's state are sealed; type, index
/// and field names, counts and sizes stay visible. The threat model is in the Encryption article.
public enum StoreEncryption: Sendable, Equatable {
    /// A 32-byte key the app keeps (in the platform's key store); ``StoreKey/random()`` makes one.
    case key(StoreKey)
    /// A passphrase, stretched by Argon2id into the key. A new store keeps a random salt and
    /// `derivation` in `@meta`; an existing store is opened with its own salt and parameters.
    case passphrase(String, derivation: KeyDerivation = .moderate)
}

/// What an encrypted store keeps in `@meta` under `encryption`, in the clear: what opening needs to
/// tell the right key from a wrong one before anything is read.
struct EncryptionRecord: Codable, Equatable {
    /// The format of the sealing: XChaCha20-Poly1305 values and 16-byte keyed hashes for stored
    /// keys, by BLAKE2b in format 1 and SipHash-2-4-128 in format 2.
    var format: Int
    /// The key's check value (``RecordSealer/keyCheck``).
    var check: [UInt8]
    /// For a key derived from a passphrase: its salt and Argon2id parameters.
    var salt: [UInt8]?
    var operations: UInt64?
    var memory: UInt64?

    /// The format this version writes (it reads every format up to it).
    static let currentFormat = 2
    /// The key of the record in `@meta`.
    static let metaKey = Array("encryption".utf8)

    /// The derivation the record names, if the key comes from a passphrase.
    func derivation() throws(EncryptionError) -> (salt: [UInt8], parameters: KeyDerivation)? {
        guard let salt else {
            if operations != nil || memory != nil {
                throw .damagedKeyRecord("Argon2id parameters without a salt")
            }
            return nil
        }
        guard let operations, let memory else {
            throw .damagedKeyRecord("a salt without Argon2id parameters")
        }
        guard salt.count == 16 else { throw .damagedKeyRecord("the salt is \(salt.count) bytes, not 16") }
        return (salt, KeyDerivation(operations: operations, memory: memory))
    }
}

extension StoreEncryption {
    /// The key for a new store of encryption format `format`, and the record it keeps of it.
    func newKey(format: Int = EncryptionRecord.currentFormat) throws(EncryptionError) -> (
        StoreKey, EncryptionRecord
    ) {
        switch self {
        case .key(let key):
            let sealer = try RecordSealer(key: key, format: format)
            return (key, EncryptionRecord(format: format, check: sealer.keyCheck))
        case .passphrase(let passphrase, let derivation):
            let salt = try KeyDerivation.newSalt()
            let key = try StoreKey(passphrase: passphrase, salt: salt, parameters: derivation)
            let sealer = try RecordSealer(key: key, format: format)
            return (
                key,
                EncryptionRecord(
                    format: format, check: sealer.keyCheck, salt: salt,
                    operations: derivation.operations, memory: derivation.memory)
            )
        }
    }

    /// The key for a store that keeps `record`: the store's salt and parameters for a passphrase.
    func key(for record: EncryptionRecord) throws(EncryptionError) -> StoreKey {
        let derivation = try record.derivation()
        switch self {
        case .key(let key):
            // A passphrase store opened with a raw key: a key check decides, as for any wrong key.
            return key
        case .passphrase(let passphrase, _):
            guard let derivation else { throw .wrongKey }
            return try StoreKey(
                passphrase: passphrase, salt: derivation.salt, parameters: derivation.parameters)
        }
    }
}

extension StoreEncryption: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Which kind of key, never the key or the passphrase.
    public var description: String {
        switch self {
        case .key: "a 32-byte key (not shown)"
        case .passphrase(_, let derivation):
            "a passphrase (not shown), Argon2id \(derivation.operations) passes over \(derivation.memory) bytes"
        }
    }

    /// As `description`: a configuration printed in a log shows no key material.
    public var debugDescription: String { description }

    /// No children: `dump` and reflection show the description only.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
}
