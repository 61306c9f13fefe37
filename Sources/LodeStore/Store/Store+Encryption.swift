import Foundation
import LMDB
import LodeCodec

extension Store {
    /// Reads the encryption record of an existing store from `@meta` and checks `encryption`
    /// against it: the sealer to install (keeping up to `decryptedCacheSize` bytes of opened
    /// values), or nil for a plain store opened without a key.
    ///
    /// - Throws: ``LodeError/encryption(path:_:)`` with what does not fit, before anything else is
    ///   read.
    static func unlock(
        _ environment: Environment, meta: Database, encryption: StoreEncryption?, decryptedCacheSize: Int = 0,
        path: String
    ) throws -> StoreSealer? {
        let stored = try environment.read { txn in try txn.get(EncryptionRecord.metaKey, in: meta) }
        func fail(_ error: EncryptionError) -> LodeError { .encryption(path: path, error) }
        guard let stored else {
            if encryption != nil { throw fail(.notEncrypted) }
            return nil
        }
        let record: EncryptionRecord
        do {
            record = try CBORDecoder().decode(EncryptionRecord.self, from: stored)
        } catch {
            throw fail(.damagedKeyRecord("it does not decode (\(error))"))
        }
        guard record.format <= EncryptionRecord.currentFormat else { throw fail(.newerFormat(record.format)) }
        guard record.format >= 1, record.check.count == 32 else {
            throw fail(
                .damagedKeyRecord("format \(record.format), a key check of \(record.check.count) bytes"))
        }
        guard let encryption else { throw fail(.keyMissing) }
        do {
            let sealer = try RecordSealer(key: try encryption.key(for: record), format: record.format)
            guard sealer.recognizes(record.check) else { throw EncryptionError.wrongKey }
            return StoreSealer(sealer: sealer, decryptedCacheSize: decryptedCacheSize)
        } catch let error as EncryptionError {
            throw fail(error)
        }
    }

    /// Installs `sealer` on `environment`, which may be open in this process already (with the same
    /// key, or refused).
    static func install(_ sealer: StoreSealer, on environment: Environment, path: String) throws {
        do {
            try environment.install(sealer: sealer) { installed in
                guard let installed = installed as? StoreSealer else { return false }
                return installed.sealer.recognizes(sealer.sealer.keyCheck)
            }
        } catch let error as LMDBError {
            throw LodeError(storage: error)
        }
    }
}
