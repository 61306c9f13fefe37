import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct MigrationAtomicityTests {
    /// A migration that leaves records the app's types cannot read is not committed: the check and
    /// the registration of the new types (their indexes built) run in the migration's transaction.
    @Test func aMigrationThatLeavesUnreadableRecordsIsNotCommitted() throws {
        let tests = ContactFixtures()
        let url = try tests.versionOne(12)
        let forgetful = Migration("2: forgot the addresses") { context in
            try context.renameField("name", to: "fullName", in: "Contact")
            try context.addField("priority", to: "Contact", default: .unsigned(0))
        }
        #expect {
            try Store(at: url, types: [ContactV2.self], migrations: [forgetful])
        } throws: { error in
            guard case .migrationFailed(_, let reason) = error as? LodeError else { return false }
            return reason.contains("address")
        }
        let store = try Store(at: url, types: [ContactV1.self], migrations: [])
        #expect(try store.read { try $0.objects(ContactV1.self).fetch() } == tests.contacts(12))
        #expect(try store.read { try $0.storedType(named: "Contact") }.indexes.map(\.name) == ["email"])
        store.close()
        // Done right, the new index exists when the migration's transaction ends.
        let migrated = try Store(at: url, types: [ContactV2.self], migrations: [ContactMigrations.v2])
        #expect(
            try migrated.read { try $0.storedType(named: "Contact") }.indexes.map(\.name) == [
                "email", "priority",
            ])
        #expect(try migrated.read { try $0.checkIntegrity() }.problems == [])
    }
}
