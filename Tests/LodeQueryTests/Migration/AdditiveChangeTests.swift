import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct AdditiveChangeTests {
    /// Optional fields and fields with a declared default read old records without a migration —
    /// also through a new index on the defaulted field; without the default the open says what is
    /// missing.
    @Test func additiveChangesNeedNoMigration() throws {
        let tests = ContactFixtures()
        let url = try tests.versionOne(10)
        #expect {
            try Store(at: url, types: [ContactWithPriorityNoDefault.self])
        } throws: { error in
            guard case .typeChangedWithoutMigration(_, _, let field, _) = error as? LodeError else {
                return false
            }
            return field == "priority"
        }
        let store = try Store(at: url, types: [ContactWithPriority.self])
        let contacts = try store.read { try $0.objects(ContactWithPriority.self).fetch() }
        #expect(contacts.count == 10)
        #expect(contacts.allSatisfy { $0.priority == 3 && $0.nickname == nil })
        // The index built at registration used the default too.
        let found = try store.read { tx in
            try tx.objects(ContactWithPriority.self).filter(#Predicate { $0.priority == 3 }).fetch()
        }
        #expect(found.count == 10)
        try store.write { tx in try tx.update(ContactWithPriority.self, key: 2) { $0.priority = 9 } }
        #expect(try store.read { try $0.object(ContactWithPriority.self, key: 2) }?.priority == 9)
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
    }
}
