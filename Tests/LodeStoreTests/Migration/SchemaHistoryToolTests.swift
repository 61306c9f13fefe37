import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct SchemaHistoryToolTests {
    let tmp = TemporaryDirectory()

    /// `lode-dump schema` shows the version, the migrations and each type's field history; an export
    /// carries them and `load` restores them, so the loaded store opens with the same migration list.
    @Test func theHistoryIsShownExportedAndLoaded() throws {
        let tests = ContactFixtures()
        let url = tests.tmp.url.appendingPathComponent("store")
        do {
            let store = try Store(
                at: url, types: [ContactV1.self, NoteV1.self, Obsolete.self], migrations: [])
            try store.write { tx in try tx.insert(contentsOf: tests.contacts(4)) }
            store.close()
        }
        let migrations = [ContactMigrations.v2, ContactMigrations.v3]
        try Store(at: url, types: [ContactV3.self], migrations: migrations).close()
        let dump = builtTool("lode-dump")
        let schema = try shell("'\(dump)' schema '\(url.path)'")
        #expect(schema.status == 0, "\(schema.err)")
        let lines = schema.out.split(separator: "\n").map(String.init)
        #expect(lines.first == "schema version 2")
        #expect(lines.contains("  migration 1  \(ContactMigrations.v2.name)"))
        #expect(lines.contains("  history      schema 0, type version 1, stored: age, city, email, id, name"))
        #expect(
            lines.contains(
                "  history      schema 2, type version 3, migrated by \(ContactMigrations.v3.name): address, age, email, fullName, priority"
            ), "\(schema.out)")
        #expect(lines.contains { $0.hasPrefix("  history      schema 1, type version 1, renamed from Note") })

        let export = tmp.url.appendingPathComponent("export.ndjson").path
        #expect(try shell("'\(dump)' export '\(url.path)' > '\(export)'").status == 0)
        let copy = tmp.url.appendingPathComponent("copy")
        let loaded = try shell("'\(dump)' load '\(copy.path)' < '\(export)'")
        #expect(loaded.status == 0, "\(loaded.err)")
        let original = try Store(at: url, configuration: StoreConfiguration(readOnly: true))
        let restored = try Store(at: copy, types: [ContactV3.self], migrations: migrations)
        #expect(try restored.read { try $0.schemaHistory() } == original.read { try $0.schemaHistory() })
        #expect(
            try restored.read { try $0.storedType(named: "Contact") }.history
                == original.read { try $0.storedType(named: "Contact") }.history)
        #expect(try restored.read { try $0.count(ContactV3.self) } == 4)
    }
}
