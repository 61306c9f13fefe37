import Foundation
import LodeCodec

/// How a ``Persistable`` type is stored: its name in the store, its primary key and its indexes.
///
/// The primary key is any `Codable` value (a `UUID`, an integer, a `String`, a tuple-like struct…)
/// encoded with the order-preserving `KeyEncoder` (docs/FORMAT.md), so objects are kept sorted by it. Indexes are
/// kept in the same transaction as the objects.
public struct Schema<Object: Persistable>: @unchecked Sendable {
    // @unchecked: immutable; the key path and the closures made from it are never mutated, but
    // `PartialKeyPath` and `Any.Type` are not marked Sendable.
    //
    // The properties live in one object: the store's generic code reads `T.schema` per record, and a
    // copy of a struct of a dozen closures and arrays is a dozen retains and releases.
    final class Storage {
        let typeName: String
        let primaryKeyPath: PartialKeyPath<Object>
        let primaryKeyField: String
        let indexes: [Index<Object>]
        /// Indexes of kinds attached through the write path's seam (full-text indexes).
        let attachedIndexes: [any AttachedIndexDeclaration<Object>]
        let links: [Relationship<Object>]
        let version: Int
        let defaults: [FieldDefault<Object>]
        /// Earlier names of fields: field → the name an earlier version stored it under.
        let originalNames: [String: String]
        /// The fields of ``defaults`` (nil when there are none): a nil optional among them is written
        /// as null, not left out (a field left out reads as its default).
        let defaultFields: Set<String>?
        let primaryKeyBytes: (Object) throws -> [UInt8]
        let pointerPrimaryKeyBytes: (UnsafeRawPointer) throws -> [UInt8]
        let primaryKeyValue: (Object) throws -> CBORValue
        let decodeKeyValue: (any Decoder) throws -> CBORValue
        let primaryKeyType: Any.Type
        let primaryKeyDescription: (Object) -> String
        let recordCodec: RecordCodec<Object>?
        /// ``recordCodec``'s field names and encode, kept apart: reading them needs no metadata of
        /// the generic codec type (looked up per object in the store's unspecialized code).
        let recordFields: RecordFieldNames?
        let generatedEncode: ((Object, inout RecordWriter) throws -> Void)?
        /// Whether the object a pointer points at has the primary key whose encoding is given: the
        /// check every read makes. An integer key stored in the struct is compared in place, without
        /// making its key's bytes.
        let hasKey: (UnsafeRawPointer, UnsafeBufferPointer<UInt8>) throws -> Bool
        /// Where an `Int` primary key is stored in the object's memory, when it is (a walk compiled for
        /// the type compares it in place).
        let integerKeyOffset: Int?
        /// The type as a model whose walks are compiled for it (``RecordWalking``), if it is one.
        let walking: (any RecordWalking.Type)?

        init<Key: Codable>(
            name: String?, primaryKey: KeyPath<Object, Key>, indexes: [Index<Object>],
            attachedIndexes: [any AttachedIndexDeclaration<Object>], links: [Relationship<Object>],
            version: Int, defaults: [FieldDefault<Object>], originalNames: [String: String]
        ) {
            self.attachedIndexes = attachedIndexes
            self.originalNames = originalNames
            self.defaults = defaults
            self.defaultFields = defaults.isEmpty ? nil : Set(defaults.map(\.field))
            self.typeName = name ?? String(describing: Object.self)
            self.primaryKeyPath = primaryKey
            self.primaryKeyField = fieldName(of: primaryKey)
            self.indexes = indexes
            self.links = links
            self.version = version
            self.primaryKeyType = Key.self
            self.primaryKeyBytes = { object in try KeyEncoder().encode(object[keyPath: primaryKey]) }
            let pointerPrimaryKeyBytes: (UnsafeRawPointer) throws -> [UInt8]
            if let read = storedFieldReader(primaryKey) {
                pointerPrimaryKeyBytes = { try KeyEncoder().encode(read($0)) }
            } else {
                pointerPrimaryKeyBytes = {
                    try KeyEncoder().encode(
                        $0.assumingMemoryBound(to: Object.self).pointee[keyPath: primaryKey])
                }
            }
            self.pointerPrimaryKeyBytes = pointerPrimaryKeyBytes
            integerKeyOffset = Key.self == Int.self ? MemoryLayout<Object>.offset(of: primaryKey) : nil
            if let offset = integerKeyOffset {
                self.hasKey = { object, key in
                    KeyEncoder.isKey(key, ofInteger: Int64(object.load(fromByteOffset: offset, as: Int.self)))
                }
            } else {
                self.hasKey = { object, key in
                    let own = try pointerPrimaryKeyBytes(object)
                    return own.count == key.count
                        && own.withUnsafeBufferPointer { own in
                            own.isEmpty || memcmp(own.baseAddress!, key.baseAddress!, own.count) == 0
                        }
                }
            }
            self.primaryKeyValue = { object in
                try CBORValue(decoding: CBOREncoder().encode(object[keyPath: primaryKey]))
            }
            self.decodeKeyValue = { decoder in
                try CBORValue(decoding: CBOREncoder().encode(Key(from: decoder)))
            }
            self.primaryKeyDescription = { object in "\(object[keyPath: primaryKey])" }
            let codec = (Object.self as? any RecordCodable.Type).map { RecordCodec(Object.self, codable: $0) }
            self.recordCodec = codec
            self.recordFields = codec?.fields
            self.generatedEncode = codec?.encode
            self.walking = Object.self as? any RecordWalking.Type
        }
    }

    let storage: Storage

    /// The name of the type in the store (the Swift type name unless set).
    public var typeName: String { storage.typeName }
    /// The property path of the primary key.
    public var primaryKeyPath: PartialKeyPath<Object> { storage.primaryKeyPath }
    /// The field name of the primary key.
    public var primaryKeyField: String { storage.primaryKeyField }
    /// The indexes.
    public var indexes: [Index<Object>] { storage.indexes }
    /// The indexes of kinds attached through the write path's seam (``AttachedIndex``): the
    /// full-text indexes.
    package var attachedIndexes: [any AttachedIndexDeclaration<Object>] { storage.attachedIndexes }
    /// The link properties, with their delete rules.
    public var links: [Relationship<Object>] { storage.links }
    /// A version number the app may raise when the type changes shape (recorded in the catalog).
    public var version: Int { storage.version }
    /// Values for top-level fields that records written before the field existed lack: such a
    /// record reads as if it held the value, so adding a non-optional field needs no migration.
    public var defaults: [FieldDefault<Object>] { storage.defaults }
    /// Fields renamed since an earlier version: field → the name the earlier version stored it
    /// under. Opening a store renames the field in the records that still hold the earlier name
    /// (once: the catalog then no longer lists it), so a rename needs no migration of its own.
    public var originalNames: [String: String] { storage.originalNames }
    var primaryKeyBytes: (Object) throws -> [UInt8] { storage.primaryKeyBytes }
    /// ``primaryKeyBytes`` of the object a pointer points at (by the field's offset where it can).
    var pointerPrimaryKeyBytes: (UnsafeRawPointer) throws -> [UInt8] { storage.pointerPrimaryKeyBytes }
    /// The primary key of an object as stored in a record (what a ``Link`` to it holds).
    var primaryKeyValue: (Object) throws -> CBORValue { storage.primaryKeyValue }
    /// Reads a primary key of this type from any decoder, as its stored value.
    var decodeKeyValue: (any Decoder) throws -> CBORValue { storage.decodeKeyValue }
    package var primaryKeyType: Any.Type { storage.primaryKeyType }
    var primaryKeyDescription: (Object) -> String { storage.primaryKeyDescription }
    /// The type's generated record codec (``RecordCodable``, the model macro's), which Lode uses
    /// instead of `Codable` when the type has one.
    package var recordCodec: RecordCodec<Object>? { storage.recordCodec }

    /// Makes a schema.
    /// - Parameters:
    ///   - name: the type's name in the store; defaults to the Swift type name.
    ///   - primaryKey: the property that identifies an object.
    ///   - indexes: secondary indexes (`.on`, `.unique`, compound `.on(a, b)`).
    ///   - links: the ``Link`` properties and their delete rules (`.to(\.project, onDelete: .cascade)`,
    ///     `.toMany(\.tags)`).
    ///   - version: a number recorded in the catalog.
    ///   - defaults: values for fields older records lack (`.field(\.priority, 0)`).
    ///   - originalNames: fields renamed since an earlier version, each with the name that version
    ///     stored it under (`["title": "name"]`); see ``originalNames``.
    public init<Key: Codable>(
        name: String? = nil, primaryKey: KeyPath<Object, Key>, indexes: [Index<Object>] = [],
        links: [Relationship<Object>] = [], version: Int = 1, defaults: [FieldDefault<Object>] = [],
        originalNames: [String: String] = [:]
    ) {
        self.init(
            name: name, primaryKey: primaryKey, indexes: indexes, attachedIndexes: [], links: links,
            version: version, defaults: defaults, originalNames: originalNames)
    }

    /// Makes a schema with indexes of attached kinds (the full-text module's public initializer
    /// calls it); see ``init(name:primaryKey:indexes:links:version:defaults:originalNames:)``.
    package init<Key: Codable>(
        name: String?, primaryKey: KeyPath<Object, Key>, indexes: [Index<Object>],
        attachedIndexes: [any AttachedIndexDeclaration<Object>], links: [Relationship<Object>], version: Int,
        defaults: [FieldDefault<Object>], originalNames: [String: String]
    ) {
        storage = Storage(
            name: name, primaryKey: primaryKey, indexes: indexes, attachedIndexes: attachedIndexes,
            links: links, version: version, defaults: defaults, originalNames: originalNames)
    }

    /// The index named `name`.
    public func index(named name: String) -> Index<Object>? { indexes.first { $0.name == name } }

    /// The link declared on `field`.
    public func link(named field: String) -> Relationship<Object>? { links.first { $0.field == field } }

    /// `record` with the declared defaults added for the top-level fields it lacks; nil when it
    /// lacks none (or is not a map).
    /// - Throws: ``LodeError/recordDoesNotEncode(type:reason:)`` when a default it needs did not encode.
    func applyingDefaults(to record: UnsafeRawBufferPointer) throws -> [UInt8]? {
        guard !defaults.isEmpty, case .map(var entries)? = try? CBORValue(decoding: Array(record)) else {
            return nil
        }
        var added = false
        for fieldDefault in defaults where !entries.contains(where: { $0.key == .text(fieldDefault.field) }) {
            guard let value = fieldDefault.value else { throw defaultFailure(fieldDefault) }
            entries.append(.init(key: .text(fieldDefault.field), value: value))
            added = true
        }
        return added ? CBORValue.map(entries).encoded : nil
    }

    /// The error for the first declared default whose value does not encode, if any: registering
    /// the type refuses it rather than store or read a wrong value.
    var defaultsFailure: LodeError? { defaults.first { $0.value == nil }.map(defaultFailure) }

    private func defaultFailure(_ fieldDefault: FieldDefault<Object>) -> LodeError {
        .recordDoesNotEncode(
            type: typeName,
            reason:
                "the default of field \"\(fieldDefault.field)\" does not encode: \(fieldDefault.failure ?? "")"
        )
    }
}

/// The field a key path names, from its description (`\Todo.address.city` → `address.city`).
package func fieldName<Root>(of keyPath: PartialKeyPath<Root>) -> String {
    var text = String(describing: keyPath)
    if text.hasPrefix("\\") { text.removeFirst() }
    let typeName = String(describing: Root.self)
    if let range = text.range(of: typeName + "."), range.lowerBound == text.startIndex {
        return String(text[range.upperBound...])
    }
    // Nested or generic type names print differently: the last path component is the field.
    return text.split(separator: ".").last.map(String.init) ?? text
}

/// Whether the key encoding of values of `type` sorts like the type's `<` (so an index walk can
/// answer a `SortDescriptor` on it). Strings compare by Unicode scalars of their NFC form, as the
/// encoding does; UUIDs and enums sort by other rules, so they are sorted in memory.
package func keyOrderMatchesComparable(_ type: Any.Type) -> Bool {
    let ordered: [Any.Type] = [
        Int.self, Int8.self, Int16.self, Int32.self, Int64.self, UInt.self, UInt8.self, UInt16.self,
        UInt32.self,
        UInt64.self, Double.self, Float.self, String.self, Date.self, Bool.self,
    ]
    return ordered.contains { $0 == type }
}

extension Schema.Storage {
    /// The error of the object at `object`, whose primary key is not `key`, the key its record is
    /// stored under (a damaged or hand-edited store: one result would otherwise hold two objects
    /// with the same primary key).
    /// - Throws: what encoding the object's own key throws (then that is the error).
    func wrongKey(_ object: UnsafeRawPointer, storedUnder key: UnsafeRawBufferPointer) throws -> LodeError {
        let own = KeyDescription.describe(try pointerPrimaryKeyBytes(object))
        return LodeError.recordDoesNotDecode(
            type: typeName, key: KeyDescription.describe(Array(key)), field: primaryKeyField,
            reason: "the record's \(primaryKeyField) is \(own), not the key it is stored under")
    }
}
