import Foundation
import LMDB
import LodeCodec

extension Transaction {
    /// The first record of `T`'s stored type that does not decode as `T`, as an error (nil when all
    /// decode), and — when the catalog's list of record shapes could not be trusted and every record
    /// was read — the list found. With a trustworthy list, the example record of each shape and the
    /// first and last 16 records are decoded; otherwise every record's shape (field names and the
    /// kinds of their values, nested maps included) is read and one record of each decoded.
    func typeCheck<T: Persistable>(_ type: T.Type) throws -> (
        problem: LodeError?, shapes: [CatalogEntry.ShapeExample]?
    ) {
        guard let entry = try catalogEntry(named: T.schema.typeName) else { return (nil, nil) }
        let records = try recordsDatabase(of: T.schema.typeName)
        var problem: LodeError?
        func check(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
            guard problem == nil else { return }
            do {
                _ = try decode(T.self, from: value, key: key)
            } catch LodeError.recordDoesNotDecode where Self.isDamaged(value) {
                // Not one CBOR item of definite lengths: a damaged record, not a changed type. Its
                // reads throw, naming it; `lode-dump check` reports it; the store opens.
                return
            } catch LodeError.recordDoesNotDecode(let type, let key, let field, let reason) {
                problem = .typeChangedWithoutMigration(type: type, key: key, field: field, reason: reason)
            } catch {
                problem = .typeChangedWithoutMigration(
                    type: T.schema.typeName, key: KeyDescription.describe(Array(key)), field: "",
                    reason: "\(error)")
            }
        }
        if let shapes = entry.shapes {
            var trusted = true
            for example in shapes where problem == nil {
                let found = try lmdb.withValue(forKey: example.key, in: records) { value -> Bool in
                    guard RecordNames.shape(of: value) == example.shape else { return false }
                    example.key.withUnsafeBytes { check($0, value) }
                    return true
                }
                if found != true { trusted = false }
            }
            try lmdb.withCursor(in: records) { cursor in
                var step = 0
                var more = try cursor.withFirst(check) != nil
                while more, step < 15, problem == nil {
                    more = try cursor.withNext(check) != nil
                    step += 1
                }
                step = 0
                more = try cursor.last() != nil && cursor.withCurrent(check) != nil
                while more, step < 15, problem == nil {
                    more = try cursor.previous() != nil && cursor.withCurrent(check) != nil
                    step += 1
                }
            }
            if trusted || problem != nil { return (problem, nil) }
        }
        // Every record: one decode per shape of names and value kinds; the list of name shapes again.
        var kinds: Set<UInt64> = []
        var examples: [CatalogEntry.ShapeExample]? = []
        try lmdb.withCursor(in: records) { cursor in
            let visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void = { key, value in
                if kinds.insert(RecordShape.of(value)).inserted { check(key, value) }
                CatalogEntry.note(record: value, key: key, in: &examples)
            }
            var more = try cursor.withFirst(visit) != nil
            while more, problem == nil { more = try cursor.withNext(visit) != nil }
        }
        return (problem, problem == nil ? examples : nil)
    }

    /// Whether `record` is not one CBOR item of definite lengths, which every record Lode writes is.
    private static func isDamaged(_ record: UnsafeRawBufferPointer) -> Bool {
        do throws(UntypedRecord.Problem) {
            _ = try UntypedRecord.decode(Array(record))
            return false
        } catch {
            return true
        }
    }
}

extension Store {
    /// The check at open (``StoreConfiguration/checksTypesAtOpen``): throws for the first type whose
    /// stored records no longer decode, or erases them when the configuration says so. A type whose
    /// records all had to be read gets its list of shapes written back (in a writable store), so the
    /// next open reads examples only.
    func checkTypesAtOpen(_ types: [any Persistable.Type]) throws {
        for type in types {
            func check<T: Persistable>(_ type: T.Type) throws -> (LodeError?, [CatalogEntry.ShapeExample]?) {
                try read { tx in try tx.typeCheck(T.self) }
            }
            let (problem, shapes) = try check(type)
            if let problem {
                guard configuration.erasesIncompatibleTypes, !configuration.readOnly else { throw problem }
                try erase(type, because: problem)
            } else if let shapes, !configuration.readOnly {
                func name<T: Persistable>(_ type: T.Type) -> String { T.schema.typeName }
                let typeName = name(type)
                try write { tx in
                    guard var entry = try tx.catalogEntry(named: typeName), entry.shapes != shapes else {
                        return
                    }
                    entry.shapes = shapes
                    try tx.writeCatalog(entry)
                }
            }
        }
    }

    /// Deletes every record of `type` (development only), saying so on standard error.
    private func erase(_ type: any Persistable.Type, because problem: LodeError) throws {
        func name<T: Persistable>(_ type: T.Type) -> String { T.schema.typeName }
        let typeName = name(type)
        let count = try write { tx in try MigrationContext(tx).deleteAllRecords(of: typeName) }
        FileHandle.standardError.write(
            Data(
                "lode: WARNING: erased all \(count) stored \(typeName) objects because erasesIncompatibleTypes is on: \(problem)\n"
                    .utf8))
    }
}
