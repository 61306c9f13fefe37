import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Inserts that arrive in ascending key order go through LMDB's append path; everything an insert
/// promises must hold on it: a duplicate is refused, keys below the database's largest still land, and
/// indexes and the change log follow.
@Suite struct AppendPathTests {
    struct Reading: Persistable, Equatable {
        var id: Int
        var sensor: String
        var value: Double
        static let schema = Schema<Reading>(primaryKey: \.id, indexes: [.on(\.sensor)])
    }

    /// A plain store, and an encrypted one (hashed keys: LMDB cannot append, the insert must still
    /// refuse a key that exists).
    static let configurations: [StoreEncryption?] = [nil, .key(try! StoreKey.random())]

    @Test(arguments: configurations)
    func loadsInKeyOrderAndOutOfItKeepEveryInsertPromise(_ encryption: StoreEncryption?) throws {
        let store = try Store.temporary(
            configuration: StoreConfiguration(durability: .noSync, encryption: encryption),
            types: [Reading.self])
        func reading(_ id: Int) -> Reading { Reading(id: id, sensor: "s\(id % 3)", value: Double(id)) }
        // A load in key order into an empty store.
        try store.write { tx in for id in 100..<400 { try tx.insert(reading(id)) } }
        try store.write { tx in
            // Ascending past the largest key: the first an ordinary put, the rest appended.
            for id in 500..<510 { try tx.insert(reading(id)) }
            // The last key again, and one appended earlier in the transaction: refused, nothing changes.
            #expect(throws: LodeError.self) { try tx.insert(Reading(id: 509, sensor: "x", value: -1)) }
            #expect(throws: LodeError.self) { try tx.insert(Reading(id: 505, sensor: "x", value: -1)) }
            // Ascending again, but below the largest key: the append LMDB refuses becomes an ordinary put,
            // and so does every insert after it.
            for id in 1..<5 { try tx.insert(reading(id)) }
            try tx.insert(reading(450))
            try tx.insert(reading(451))
            try tx.insert(reading(600))
        }
        let expected = Array(1..<5) + Array(100..<400) + [450, 451] + Array(500..<510) + [600]
        let stored = try store.objects(Reading.self).fetch()
        #expect(stored.map(\.id) == expected)
        #expect(stored == expected.map(reading))
        let s1 = try store.objects(Reading.self).filter(#Predicate { $0.sensor == "s1" }).fetch()
        #expect(s1.map(\.id) == expected.filter { $0 % 3 == 1 })
        #expect(try store.read { tx in try tx.checkIntegrity() }.problems.isEmpty)
    }

    /// An existing key met in an ascending run of inserts (where the transaction tries LMDB's append
    /// path) is refused, and the stored object and its index entries stay as they were.
    @Test(arguments: configurations)
    func anExistingKeyInAnAscendingRunIsRefused(_ encryption: StoreEncryption?) throws {
        let store = try Store.temporary(
            configuration: StoreConfiguration(durability: .noSync, encryption: encryption),
            types: [Reading.self])
        let kept = Reading(id: 20, sensor: "kept", value: 20)
        try store.write { tx in
            try tx.insert(Reading(id: 10, sensor: "a", value: 10))
            try tx.insert(kept)
        }
        try store.write { tx in
            try tx.insert(Reading(id: 15, sensor: "b", value: 15))
            // Ascending after 15: the append path, and a key that exists.
            #expect(throws: LodeError.duplicateKey(type: "Reading", key: "20")) {
                try tx.insert(Reading(id: 20, sensor: "replaced", value: -1))
            }
            try tx.insert(Reading(id: 30, sensor: "c", value: 30))
        }
        #expect(try store.objects(Reading.self).fetch().map(\.id) == [10, 15, 20, 30])
        #expect(try store.read { try $0.object(Reading.self, key: 20) } == kept)
        let replaced = try store.objects(Reading.self).filter(#Predicate { $0.sensor == "replaced" }).fetch()
        #expect(replaced.isEmpty)
        #expect(try store.read { tx in try tx.checkIntegrity() }.problems.isEmpty)
    }
}
