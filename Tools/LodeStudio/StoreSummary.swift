import Foundation
import Lode
import LodeInspection

/// What Lode Studio's summary page shows of a store, read from one snapshot of any store, without the
/// app's types: the file, the types with their counts, indexes and links, the schema's version, and
/// the readers that hold versions of the file.
package struct StoreSummary: Codable, Sendable, Equatable {
    /// One stored type.
    package struct TypeSummary: Codable, Sendable, Equatable {
        /// The type's name.
        package var name: String
        /// How many objects it holds.
        package var objectCount: Int
        /// The primary key's field.
        package var primaryKey: String
        /// The type's version (bumped by migrations that change it).
        package var version: Int
        /// Its fields, in the catalog's order.
        package var fields: [String]
        /// Its indexes: name, fields, whether unique, and entries.
        package var indexes: [IndexSummary]
        /// Its links: field, target type, to-many or to-one, delete rule.
        package var links: [LinkSummary]
        /// How its fields came to be: each schema version's change, oldest first.
        package var history: [HistoryEntry]
        /// The fields a migration gave a default, with the default as JSON.
        package var defaults: [String: String]
    }

    /// One change of a type's fields.
    package struct HistoryEntry: Codable, Sendable, Equatable {
        package var schemaVersion: Int
        package var typeVersion: Int
        package var event: String
        package var fields: [String]
    }

    /// One index of a type.
    package struct IndexSummary: Codable, Sendable, Equatable {
        package var name: String
        package var fields: [String]
        package var isUnique: Bool
        package var entryCount: Int
    }

    /// One link of a type.
    package struct LinkSummary: Codable, Sendable, Equatable {
        package var field: String
        package var target: String
        package var isToMany: Bool
        package var rule: String
    }

    /// A process reading the store, and how far behind the last commit its version is.
    package struct ReaderSummary: Codable, Sendable, Equatable {
        package var processID: Int32
        package var version: Int?
        package var behind: Int?
        package var processIsAlive: Bool
    }

    /// The store's directory.
    package var path: String
    /// The size of `data.mdb` in bytes.
    package var fileBytes: Int
    /// The map's size and how much of it is used, in bytes.
    package var mapBytes: Int
    package var usedBytes: Int
    /// The file's free pages (reused before it grows) and the page size.
    package var freePages: Int
    package var pageSize: Int
    /// The last committed version.
    package var version: Int
    /// The schema's version and the migrations run, in order.
    package var schemaVersion: Int
    package var migrations: [String]
    /// The stored types, by name.
    package var types: [TypeSummary]
    /// The readers, oldest version first, and the reader slots the file has.
    package var readers: [ReaderSummary]
    package var readerSlots: Int

    /// The summary of the store at `path`, read from its current snapshot.
    ///
    /// - Throws: what opening and reading the store throws (a missing or damaged store, a file that is
    ///   not a store), as ``LodeError``.
    package static func read(_ store: Store, path: String) throws -> StoreSummary {
        let info = try store.fileInfo()
        let (types, history) = try store.read { tx in (try tx.storedTypes(), try tx.schemaHistory()) }
        let fileBytes = try dataFileBytes(path)
        let readers = try store.readers().map { reader in
            ReaderSummary(
                processID: reader.processID, version: reader.version,
                behind: reader.version.map { info.lastCommittedVersion - $0 },
                processIsAlive: reader.processIsAlive)
        }
        return StoreSummary(
            path: path, fileBytes: fileBytes, mapBytes: info.mapSize, usedBytes: info.usedBytes,
            freePages: try store.freePageCount(), pageSize: info.pageSize,
            version: info.lastCommittedVersion, schemaVersion: history.version,
            migrations: history.migrations,
            types: types.map { type in
                TypeSummary(
                    name: type.name, objectCount: type.objectCount, primaryKey: type.primaryKey,
                    version: type.version, fields: type.fields,
                    indexes: type.indexes.map {
                        IndexSummary(
                            name: $0.name, fields: $0.fields, isUnique: $0.isUnique, entryCount: $0.entryCount
                        )
                    },
                    links: type.links.map {
                        LinkSummary(
                            field: $0.field, target: $0.targetTypeName, isToMany: $0.isToMany,
                            rule: "\($0.rule)")
                    },
                    history: type.history.map {
                        HistoryEntry(
                            schemaVersion: $0.schemaVersion, typeVersion: $0.typeVersion, event: $0.event,
                            fields: $0.fields)
                    },
                    defaults: type.defaults.mapValues(\.json))
            }.sorted { $0.name < $1.name },
            readers: readers.sorted { ($0.version ?? .max) < ($1.version ?? .max) },
            readerSlots: info.maxReaders)
    }

    /// The size of the store's `data.mdb`.
    ///
    /// - Throws: ``StoreGone`` when the file is no longer there (the store was deleted while served).
    package static func dataFileBytes(_ path: String) throws -> Int {
        let dataFile = URL(fileURLWithPath: path).appendingPathComponent("data.mdb").path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: dataFile) else {
            throw StoreGone(path: path)
        }
        return (attributes[.size] as? Int) ?? 0
    }
}

/// The store's file is gone: deleted or moved while it was served.
package struct StoreGone: Error, CustomStringConvertible {
    /// The store's directory.
    package var path: String
    package var description: String {
        "\(path)/data.mdb is gone: the store was deleted or moved while it was served (what the page shows is what was read before)"
    }
}
