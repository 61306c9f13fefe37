import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct OpenCheckTests {
    func entry(_ store: Store) throws -> CatalogEntry {
        try #require(try store.read { try $0.catalogEntry(named: "Contact") })
    }

    /// The catalog lists one example per record shape, so the check at open finds a record in the
    /// middle of the type with a shape of its own without reading every record; when an example is
    /// gone the check reads every record once and lists the shapes again.
    @Test func theCheckAtOpenFindsEveryShapeThroughTheCatalogsExamples() throws {
        let tests = ContactFixtures()
        let url = try tests.versionOne(100)
        do {
            let store = try Store(at: url, types: [ContactWithoutAge.self])
            // Written anew (an upsert would keep the `age` this version does not know).
            try store.write { tx in
                try tx.delete(ContactWithoutAge.self, key: 50)
                try tx.insert(ContactWithoutAge(id: 50, name: "n", email: "fifty@example.org", city: "c"))
            }
            #expect(try entry(store).shapes?.count == 2)
            store.close()
        }
        #expect {
            try Store(at: url, types: [ContactV1.self])
        } throws: { error in
            guard case .typeChangedWithoutMigration(_, let key, let field, _) = error as? LodeError else {
                return false
            }
            return key == "50" && field == "age"
        }
        // The example goes: the list cannot be trusted, every record is read, the list is rebuilt.
        let store = try Store(at: url, types: [ContactWithoutAge.self], migrations: nil)
        try store.write { tx in try tx.delete(ContactWithoutAge.self, key: 50) }
        store.close()
        let reopened = try Store(at: url, types: [ContactV1.self])
        #expect(try entry(reopened).shapes?.count == 1)
        #expect(try reopened.read { try $0.count(ContactV1.self) } == 99)
    }

    /// An entry without a list (written before it existed) is checked by reading every record, and
    /// gets its list.
    @Test func anEntryWithoutShapesIsCheckedInFullAndGetsThem() throws {
        let tests = ContactFixtures()
        let url = try tests.versionOne(40)
        do {
            let store = try Store(at: url)
            try store.write { tx in
                var legacy = try #require(try tx.catalogEntry(named: "Contact"))
                legacy.shapes = nil
                try tx.writeCatalog(legacy)
            }
            store.close()
        }
        let store = try Store(at: url, types: [ContactV1.self])
        #expect(try entry(store).shapes?.count == 1)
    }
}
