import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct RestoreTests {
    let tmp = TemporaryDirectory()

    @Test func restoreRefusesATypeThisProcessHasOpenAndAnInvalidDescription() throws {
        let store = try Store(at: tmp.url, types: [Counter.self])
        let counter = StoredType(name: "Counter", primaryKey: "name", indexes: [], fields: [], version: 1)
        let record = try CBOREncoder().encode(Counter(name: "a", value: 1))
        #expect(throws: LodeError.self) {
            try store.write { tx in try tx.restore(counter, records: [record]) }
        }
        #expect(try store.read { tx in try tx.count(Counter.self) } == 0, "nothing written")
        let other = StoredType(
            name: "Other", primaryKey: "name",
            indexes: [
                .init(name: "v", fields: ["value"], isUnique: true),
                .init(name: "v", fields: [], isUnique: false),
            ],
            fields: [], version: 1)
        #expect(throws: LodeError.self) { try store.write { tx in try tx.restore(other, records: [record]) } }
        let renamed = StoredType(name: "@meta", primaryKey: "name", indexes: [], fields: [], version: 1)
        #expect(throws: LodeError.self) {
            try store.write { tx in try tx.restore(renamed, records: [record]) }
        }

        // A valid one is stored with its index, and the fields seen are learned from the records.
        let valid = StoredType(
            name: "Other", primaryKey: "name",
            indexes: [.init(name: "value", fields: ["value"], isUnique: true)],
            fields: [], version: 2)
        #expect(try store.write { tx in try tx.restore(valid, records: [record]) } == 1)
        let stored = try store.read { tx in try tx.storedType(named: "Other") }
        #expect(stored.fields == ["name", "value"] && stored.version == 2 && stored.objectCount == 1)
        #expect(stored.indexes.map(\.entryCount) == [1])
        #expect(try store.read { tx in try tx.checkIntegrity() }.problems.isEmpty)
        store.close()
    }
}
