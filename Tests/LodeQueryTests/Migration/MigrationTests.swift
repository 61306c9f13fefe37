import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

// One stored type, "Contact", in three versions of the app.

@Suite struct MigrationTests {
    let tmp = TemporaryDirectory()

    func contacts(_ count: Int) -> [ContactV1] { ContactFixtures(tmp: tmp).contacts(count) }

    /// A store as version 1 of the app left it.
    func versionOne(_ count: Int = 30) throws -> URL { try ContactFixtures(tmp: tmp).versionOne(count) }

    @Test func aChainOfMigrationsReshapesEveryRecord() throws {
        let url = try versionOne()
        // Version 2 of the app.
        do {
            let store = try Store(
                at: url, types: [ContactV2.self, Memo.self], migrations: [ContactMigrations.v2])
            #expect(try store.read { try $0.schemaHistory() }.migrations == [ContactMigrations.v2.name])
            let contacts = try store.read { try $0.objects(ContactV2.self).fetch() }
            #expect(contacts.count == 30)
            #expect(
                contacts[4]
                    == ContactV2(
                        id: 4, fullName: "name 4", email: "c4@example.org",
                        address: PostalAddress(city: "city 1", country: "NL"), age: "24", priority: 0))
            #expect(
                try store.read { try $0.objects(Memo.self).fetch() }.map(\.text)
                    == (0..<5).map { "note \($0)" })
            #expect(try store.read { try $0.storedTypes() }.map(\.name).sorted() == ["Contact", "Memo"])
            #expect(try store.read { try $0.checkIntegrity() }.problems == [])
            store.close()
        }
        // Version 3: both migrations listed, the first is not run again.
        let store = try Store(
            at: url, types: [ContactV3.self, Memo.self],
            migrations: [ContactMigrations.v2, ContactMigrations.v3])
        #expect(try store.read { try $0.schemaHistory() }.version == 2)
        let contacts = try store.read { try $0.objects(ContactV3.self).fetch() }
        #expect(contacts.count == 30)
        let seven = try store.read { try $0.object(ContactV3.self, key: "c7@example.org") }
        #expect(
            seven
                == ContactV3(
                    email: "c7@example.org", fullName: "NAME 7",
                    address: PostalAddress(city: "city 1", country: "NL"),
                    age: 27, priority: 0, phone: nil))
        #expect(try store.read { try $0.object(ContactV3.self, key: "c5@example.org") }?.age == 0)
        // The new index answers queries; the dropped one is gone.
        let aged = try store.read {
            try $0.objects(ContactV3.self).filter(#Predicate { $0.age == 27 }).fetch()
        }
        #expect(aged.map(\.email) == ["c7@example.org"])
        let stored = try store.read { try $0.storedType(named: "Contact") }
        #expect(stored.primaryKey == "email")
        #expect(stored.indexes.map(\.name) == ["priority", "age"])
        #expect(stored.version == 3)
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        store.close()
        try expectIndependentReading(of: url)
    }

    /// The same chain over a store encrypted in place after version 1: the migrations rename a
    /// field, change the primary key, add and drop indexes through sealed records and hashed keys.
    @Test func aChainOfMigrationsReshapesAnEncryptedStore() throws {
        let url = try versionOne()
        let key = try StoreKey.random()
        try Store.changeEncryption(at: url, from: nil, to: .key(key))
        let configuration = StoreConfiguration(encryption: .key(key))
        do {
            let store = try Store(
                at: url, configuration: configuration, types: [ContactV2.self, Memo.self],
                migrations: [ContactMigrations.v2])
            #expect(try store.read { try $0.objects(ContactV2.self).fetch() }.count == 30)
            #expect(try store.read { try $0.checkIntegrity() }.problems == [])
            store.close()
        }
        let store = try Store(
            at: url, configuration: configuration, types: [ContactV3.self, Memo.self],
            migrations: [ContactMigrations.v2, ContactMigrations.v3])
        let contacts = try store.read { try $0.objects(ContactV3.self).fetch() }
        #expect(contacts.map(\.email) == contacts.map(\.email).sorted(), "primary-key order")
        #expect(contacts.count == 30)
        #expect(try store.read { try $0.object(ContactV3.self, key: "c7@example.org") }?.fullName == "NAME 7")
        let aged = try store.read {
            try $0.objects(ContactV3.self).filter(#Predicate { $0.age == 27 }).fetch()
        }
        #expect(aged.map(\.email) == ["c7@example.org"])
        #expect(
            try store.read { try $0.storedType(named: "Contact") }.indexes.map(\.name) == ["priority", "age"])
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        store.close()
        // Without the key, nothing opens.
        #expect(throws: LodeError.encryption(path: url.path, .keyMissing)) {
            try Store(at: url, migrations: [ContactMigrations.v2, ContactMigrations.v3])
        }
    }

    /// Reads the migrated store with LMDB's own `mdb_dump` and Python's cbor2 — no Lode code — and
    /// checks every record against what the migrations should have made of version 1's data.
    func expectIndependentReading(of url: URL) throws {
        let script = """
            import cbor2, subprocess, sys
            dump = subprocess.run(['mdb_dump', '-a', sys.argv[1]], capture_output=True, text=True, check=True).stdout
            databases, name, data, entries = {}, None, False, []
            for line in dump.split('\\n'):
                if line.startswith('database='): name = line[len('database='):]
                elif line == 'HEADER=END': data, entries = True, []
                elif line == 'DATA=END': databases[name], data = entries, False
                elif data and line.startswith(' '): entries.append(bytes.fromhex(line[1:]))
            problems = []
            names = sorted(n for n in databases if not n.startswith('@'))
            if names != ['Contact', 'Contact.age', 'Contact.priority', 'Memo']: problems.append('databases: %s' % names)
            records = [cbor2.loads(v) for v in databases['Contact'][1::2]]
            if len(records) != 30: problems.append('%d contacts' % len(records))
            for record in records:
                i = int(record['email'][1:].split('@')[0])
                expected = {
                    'email': 'c%d@example.org' % i, 'fullName': ('name %d' % i).upper(),
                    'address': {'city': 'city %d' % (i % 3), 'country': 'NL'},
                    'age': 0 if i % 5 == 0 else 20 + i, 'priority': 0,
                }
                if record != expected: problems.append('contact %d: %r' % (i, record))
            memos = [cbor2.loads(v) for v in databases['Memo'][1::2]]
            if memos != [{'id': i, 'text': 'note %d' % i} for i in range(5)]: problems.append('memos: %r' % memos)
            ages = len(databases['Contact.age']) // 2
            if ages != 30: problems.append('%d age index entries' % ages)
            print('ok' if not problems else '\\n'.join(problems))
            """
        let result = try shell(
            "python3 -c '\(script.replacingOccurrences(of: "'", with: "'\"'\"'"))' '\(url.path)'")
        #expect(result.out == "ok\n", "\(result.out)\(result.err)")
    }

    @Test func codeOlderThanTheStoreAndDifferentListsAreRefused() throws {
        let url = try versionOne()
        try Store(at: url, migrations: [ContactMigrations.v2, ContactMigrations.v3]).close()
        #expect {
            try Store(at: url, migrations: [ContactMigrations.v2])
        } throws: { error in
            guard case .storeNewerThanCode(_, let unknown) = error as? LodeError else { return false }
            return unknown == [ContactMigrations.v3.name]
        }
        #expect {
            try Store(at: url, migrations: [ContactMigrations.v3, ContactMigrations.v2])
        } throws: { error in
            guard case .migrationsDiffer(_, let position, _, _) = error as? LodeError else { return false }
            return position == 0
        }
        // Tools open without a list and see the history.
        let tool = try Store(at: url, configuration: StoreConfiguration(readOnly: true))
        #expect(try tool.read { try $0.schemaHistory() }.version == 2)
    }

    @Test func aMigrationThatThrowsLeavesTheStoreAsItWas() throws {
        let url = try versionOne()
        let failing = Migration("2: half done") { context in
            try context.renameField("name", to: "fullName", in: "Contact")
            struct Stop: Error {}
            throw Stop()
        }
        #expect {
            try Store(at: url, migrations: [failing])
        } throws: { error in
            guard case .migrationFailed(let name, _) = error as? LodeError else { return false }
            return name == "2: half done"
        }
        let store = try Store(at: url, types: [ContactV1.self], migrations: [])
        #expect(try store.read { try $0.objects(ContactV1.self).fetch() } == contacts(30))
        #expect(try store.read { try $0.schemaHistory() }.version == 0)
    }

    @Test func aNewPrimaryKeyWithDuplicatesNamesBothRecords() throws {
        let url = try versionOne()
        let collide = Migration("2: everyone shares one email") { context in
            try context.updateRecords(of: "Contact") { record in
                if record["id"] == .unsigned(3) || record["id"] == .unsigned(8) {
                    record["email"] = .text("same@example.org")
                }
                return .keep
            }
        }
        #expect {
            try Store(at: url, migrations: [collide])
        } throws: { error in
            // The unique index on email is rebuilt from the records: both objects are named.
            "\(error)".contains("records 3 and 8")
        }
        let rekey = Migration("2: names are keys") { context in
            try context.updateRecords(of: "Contact") { record in
                record["name"] = .text("name \(record["id"] == .unsigned(4) ? 9 : 0)")
                return .keep
            }
            try context.changePrimaryKey(of: "Contact", to: "name")
        }
        #expect {
            try Store(at: url, migrations: [rekey])
        } throws: { error in
            "\(error)".contains("both have this name")
        }
    }

    @Test func aBreakingChangeWithoutAMigrationIsFoundAtOpen() throws {
        let url = try versionOne()
        #expect {
            try Store(at: url, types: [ContactV2.self])
        } throws: { error in
            guard case .typeChangedWithoutMigration(let type, let key, let field, _) = error as? LodeError
            else {
                return false
            }
            return type == "Contact" && key == "0" && field == "fullName"
        }
        // With the migration it opens cleanly.
        let store = try Store(at: url, types: [ContactV2.self], migrations: [ContactMigrations.v2])
        #expect(try store.read { try $0.count(ContactV2.self) } == 30)
    }

    @Test func theDevelopmentOptionErasesWhatNoLongerDecodes() throws {
        let url = try versionOne()
        let store = try Store(
            at: url, configuration: StoreConfiguration(erasesIncompatibleTypes: true), types: [ContactV2.self]
        )
        #expect(try store.read { try $0.count(ContactV2.self) } == 0)
        #expect(try store.read { try $0.storedRecords(of: "Note") }.count == 5, "other types stay")
    }

    @Test func dynamicRecordsReachNestedFields() throws {
        var record = DynamicRecord()
        record["a.b.c"] = .unsigned(1)
        record["a.d"] = .text("x")
        #expect(record["a.b.c"] == .unsigned(1))
        #expect(record.fieldNames == ["a"])
        try record.rename("a.d", to: "e")
        #expect(record["a.e"] == .text("x") && record["a.d"] == nil)
        #expect(record.remove("a.b") == .map([.init(key: .text("c"), value: .unsigned(1))]))
        #expect(try CBORValue(decoding: record.bytes) == record.value)
        record["f"] = .text("y")
        #expect(throws: LodeError.self) { try record.rename("f", to: "a") }
    }
}
