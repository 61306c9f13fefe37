import LMDB
import LodeCodec

/// An error from the object store, saying what failed and where.
public enum LodeError: Error, Equatable, CustomStringConvertible, Sendable {
    /// `insert` found an object with the same primary key.
    case duplicateKey(type: String, key: String)
    /// A unique index already holds this value for another object.
    case uniqueViolation(type: String, index: String, value: String)
    /// `update` found no object with this key.
    case objectNotFound(type: String, key: String)
    /// A stored record could not be decoded as the Swift type (the type changed, or the data is damaged).
    case recordDoesNotDecode(type: String, key: String, field: String, reason: String)
    /// An object could not be encoded.
    case recordDoesNotEncode(type: String, reason: String)
    /// The type is not in the store's catalog.
    case typeNotFound(String)
    /// The type has no such index.
    case indexNotFound(type: String, index: String)
    /// An encoded primary key is longer than LMDB's 511-byte limit.
    case keyTooLong(type: String, bytes: Int)
    /// The stored schema cannot be reconciled with the type's (for example, another primary key).
    case schemaMismatch(type: String, reason: String)
    /// An update tried to change an object's primary key.
    case primaryKeyChanged(type: String, from: String, to: String)
    /// A position outside the results was read.
    case positionOutOfRange(type: String, position: Int, count: Int)
    /// The store was closed.
    case storeClosed(path: String)
    /// The store was opened read-only.
    case readOnly(path: String)
    /// The directory exists but is not a Lode store.
    case notAStore(path: String, reason: String)
    /// The storage under the store failed (the file, the disk, LMDB).
    case storage(StorageFailure)
    /// This process has the type open (registered, with its schema cached): it cannot be restored
    /// or replaced underneath; do it from a process that does not use the type.
    case typeInUse(type: String)
    /// A type description given to the store (to restore a type) is not one the library could have
    /// written.
    case invalidTypeDescription(type: String, reason: String)
    /// These results cannot be followed live (results of a transaction; sectioned results with a
    /// limit or an order that cannot be encoded).
    case liveQueryUnsupported(type: String, reason: String)
    /// The operation is not allowed inside a transaction of the store on the same thread.
    case insideTransaction(operation: String)
    /// An observation failed for a reason outside the store's own errors.
    case observationFailed(reason: String)
    /// App code Lode ran for you — a `#Predicate`, the `Encodable` conformance of a sort or section
    /// key — threw; the error is kept as thrown (``AppCodeError/error``), so the app can catch its own.
    case appCodeFailed(AppCodeError)
    /// A write was refused: a version this process holds is further behind than
    /// ``StoreConfiguration/maxVersionLag`` allows (release or refresh its holders).
    case versionHeldTooLong(HeldVersion, limit: Int)
    /// The store has run migrations this code does not list: a newer version of the app wrote it.
    case storeNewerThanCode(path: String, unknownMigrations: [String])
    /// The migrations given at open and those the store ran differ at `position`.
    case migrationsDiffer(path: String, position: Int, stored: String, given: String)
    /// A migration threw; the store stays at the version before it.
    case migrationFailed(name: String, reason: String)
    /// Found at open: a stored record of a registered type does not decode as the type declares it
    /// (a field was added without a default, renamed, or changed its type) — add a migration.
    case typeChangedWithoutMigration(type: String, key: String, field: String, reason: String)
    /// Another process — another version of the app — changed the stored type since this process
    /// registered it (`change` says how: an index dropped or added, the type deleted, another primary
    /// key): this process's schema no longer matches the store, and it refuses rather than use
    /// databases that are gone or leave an index it does not maintain behind. Reopen the store with
    /// the code that made the change.
    case typeChangedByAnotherProcess(type: String, change: String)
    /// A delete was refused: the objects in `linkedFrom` link to it through a link whose rule is
    /// ``DeleteRule/deny`` (directly, or to an object the delete would have cascaded to). Nothing
    /// was deleted.
    case deleteDenied(type: String, key: String, linkedFrom: [ObjectID])
    /// A link points at an object that does not exist (see ``Transaction/resolve(_:)``).
    case linkTargetMissing(type: String, key: String)
    /// A full-text query could not be read, or holds nothing the index's tokenizer keeps as a word
    /// (see `TextQuery`).
    case invalidTextQuery(TextQueryError)
    /// A search named a full-text index the type cannot search now (`reason` says why: not declared,
    /// or built with other fields or another tokenizer in a store opened read-only).
    case textIndexUnavailable(type: String, index: String, reason: String)
    /// A full-text index's stored entries do not read (a damaged store): `lode-dump check` tells
    /// more; declaring the index again after a migration that drops it rebuilds it.
    case textIndexDamaged(type: String, index: String, reason: String)
    /// The history asked for is not there (`reason` says why: the store keeps none, or it was pruned
    /// past the token, or a migration broke it): nothing is returned rather than part of it.
    case historyUnavailable(reason: String)
    /// An undo or redo (`action`, with its name) was refused because objects it would put back
    /// changed since — by another writer, another process, sync — each with the fields that did (none
    /// listed: the object was deleted, or made again). Nothing was written; undo with
    /// ``UndoConflictPolicy/skipChanged`` to put back only what nobody changed.
    case undoConflict(action: String, conflicts: [UndoConflict])
    /// The store at `path` cannot be opened with the key given (or without one): see the
    /// ``EncryptionError``. Nothing was read.
    case encryption(path: String, EncryptionError)
    /// A sealed record of an encrypted store does not open: its bytes were damaged, or moved from
    /// another key or type (tampering).
    case recordSealBroken(type: String, key: String)
    /// The store's data file is not known to be the one Lode left (`reason` says why: a copy, a
    /// restored backup, a file changed since its last clean close), and the store was opened with
    /// ``StoreConfiguration/PageCheck/never``: nothing was read. Check its pages first.
    case fileNotTrusted(path: String, reason: String)

    /// Another process committed while a write grew the map: nothing was written, the write may run
    /// again.
    var isGrowthConflict: Bool {
        if case .storage(let failure) = self { return failure.reason == .writeConflictDuringGrowth }
        return false
    }

    /// `error` as a Lode error: itself, an LMDB failure as ``storage(_:)``, anything else — thrown by
    /// app code Lode ran — as ``appCodeFailed(_:)``, keeping it.
    package init(_ error: any Error) {
        switch error {
        case let error as LodeError: self = error
        case let error as LMDBError: self = .init(storage: error)
        default: self = .appCodeFailed(AppCodeError(error))
        }
    }

    /// `error` of the storage layer in Lode's terms: a sealed record that does not open as
    /// ``recordSealBroken(type:key:)`` (a records database is named after its type), anything else as
    /// ``storage(_:)``.
    package init(storage error: LMDBError) {
        if let entry = error.sealedEntry, !entry.database.hasPrefix("@"), !entry.database.contains(".") {
            self = .recordSealBroken(type: entry.database, key: KeyDescription.describe(entry.key))
        } else {
            self = .storage(StorageFailure(error))
        }
    }

    /// One line a user can act on.
    ///
    /// What the message quotes from the store — keys, values, field names, reasons that quote a
    /// record — is cut to ``quoteLimit`` characters, with the full length said: a damaged store can
    /// hold a key or a value of many kilobytes, and a message must stay a line.
    public var description: String {
        switch self {
        case .duplicateKey(let type, let key):
            return "\(type): an object with primary key \(q(key)) already exists"
        case .uniqueViolation(let type, let index, let value):
            return "\(type): unique index \"\(index)\" already holds \(q(value)) for another object"
        case .objectNotFound(let type, let key): return "\(type): no object with primary key \(q(key))"
        case .recordDoesNotDecode(let type, let key, let field, let reason):
            if field.isEmpty { return "\(type) \(q(key)): the stored record does not decode: \(q(reason))" }
            return
                "\(type) \(q(key)): the stored record does not decode at field \"\(q(field))\": \(q(reason))"
        case .recordDoesNotEncode(let type, let reason):
            return "\(type): the object does not encode: \(q(reason))"
        case .typeNotFound(let type): return "no type named \"\(type)\" in the store"
        case .indexNotFound(let type, let index): return "\(type) has no index named \"\(index)\""
        case .keyTooLong(let type, let bytes):
            return "\(type): the encoded primary key is \(bytes) bytes; primary keys are limited to 511"
        case .schemaMismatch(let type, let reason):
            return "\(type): the stored schema does not match: \(q(reason))"
        case .primaryKeyChanged(let type, let from, let to):
            return
                "\(type): update may not change the primary key (\(q(from)) → \(q(to))); delete and insert instead"
        case .positionOutOfRange(let type, let position, let count):
            return "\(type): no result at position \(position) (there are \(count))"
        case .storeClosed(let path): return "the store at \(path) is closed"
        case .readOnly(let path): return "the store at \(path) was opened read-only"
        case .notAStore(let path, let reason): return "\(path) is not a Lode store: \(q(reason))"
        case .storage(let error): return error.description
        case .typeInUse(let type):
            return "\(type): this process has the type open; restore it from a process that does not use it"
        case .invalidTypeDescription(let type, let reason):
            return "\(type): not a valid type description: \(q(reason))"
        case .liveQueryUnsupported(let type, let reason):
            return "\(type): these results cannot be followed live: \(q(reason))"
        case .insideTransaction(let operation):
            return "\(operation) is not allowed inside a transaction of the store on the same thread"
        case .observationFailed(let reason): return "observation failed: \(q(reason))"
        case .appCodeFailed(let failure): return "app code run by Lode threw: \(failure)"
        case .storeNewerThanCode(let path, let unknown):
            return
                "the store at \(path) has run migrations this code does not know (\(unknown.joined(separator: ", "))): it was written by a newer version of the app"
        case .migrationsDiffer(let path, let position, let stored, let given):
            return
                "the migrations given for \(path) differ from the ones it ran: number \(position + 1) is \"\(q(given))\" here and \"\(q(stored))\" in the store (migrations are only ever added at the end)"
        case .migrationFailed(let name, let reason):
            return "migration \"\(name)\" failed, nothing of it was written: \(q(reason))"
        case .typeChangedWithoutMigration(let type, let key, let field, let reason):
            return
                "\(type) \(q(key))\(field.isEmpty ? "" : ", field \"\(q(field))\"")\(": ")\(q(reason)) — the stored records no longer decode as the type declares; add a migration (or a default for a new field)"
        case .typeChangedByAnotherProcess(let type, let change):
            return
                "\(type) was changed by another process since this one registered it: \(q(change)); this process's schema no longer matches the store (reopen it with the code that made the change)"
        case .deleteDenied(let type, let key, let linkedFrom):
            let shown = linkedFrom.prefix(5).map {
                "\($0.typeName) \(KeyDescription.describe($0.primaryKey))"
            }
            let more = linkedFrom.count > 5 ? " and \(linkedFrom.count - 5) more" : ""
            return
                "\(type) \(q(key)) cannot be deleted: \(shown.joined(separator: ", "))\(more) still link to it through a link whose delete rule is deny"
        case .linkTargetMissing(let type, let key):
            return "the link points at \(type) \(q(key)), which does not exist"
        case .invalidTextQuery(let error): return error.description
        case .textIndexUnavailable(let type, let index, let reason):
            return "\(type) cannot be searched with full-text index \"\(index)\": \(q(reason))"
        case .textIndexDamaged(let type, let index, let reason):
            return "the full-text index \"\(index)\" of \(type) is damaged: \(q(reason))"
        case .historyUnavailable(let reason): return "the history asked for is not available: \(reason)"
        case .undoConflict(let action, let conflicts):
            let shown = conflicts.prefix(5).map(\.description)
            let more = conflicts.count > 5 ? " and \(conflicts.count - 5) more" : ""
            return
                "\(q(action)) refused: \(shown.joined(separator: "; "))\(more) changed since (nothing was written; skip what changed with UndoConflictPolicy.skipChanged)"
        case .encryption(let path, let error): return "cannot open \(path): \(error)"
        case .recordSealBroken(let type, let key):
            return
                "\(type) \(q(key)): the sealed record does not open with the store's key (damaged, or moved from another key or type)"
        case .fileNotTrusted(let path, let reason):
            return
                "\(path)/data.mdb is not known to be the file Lode left: \(reason); check its pages before reading it (open with pageCheck .whenUntrusted, the default, or .always; or run lode-dump check \(path))"
        case .versionHeldTooLong(let held, let limit):
            return
                "write refused: \(held), more than the limit of \(limit) (release or refresh what holds it; the file cannot reuse pages while it is held)"
        }
    }

    /// The most characters of one quoted piece an error message shows.
    public static let quoteLimit = 200

    private func q(_ text: String) -> String {
        guard text.count > Self.quoteLimit else { return text }
        return "\(text.prefix(Self.quoteLimit))… (\(text.count) characters in all)"
    }
}

extension LodeError {
    /// ``recordDoesNotDecode(type:key:field:reason:)`` for what a generated record codec threw reading the
    /// record stored under `key`; an error with no field of its own is placed in `field`.
    package static func recordDoesNotDecode(
        type: String, key: [UInt8], generated error: any Error, field: String = ""
    ) -> LodeError {
        let error = RecordDecodingError.from(error)
        return .recordDoesNotDecode(
            type: type, key: KeyDescription.describe(key), field: error.field.isEmpty ? field : error.field,
            reason: error.reason)
    }
}
