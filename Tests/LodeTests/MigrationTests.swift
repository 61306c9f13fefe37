import Foundation
import Lode
import Testing

@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStorage
@testable import LodeStore

// One stored type, "Contact", in three versions of the app.

struct ContactV1: Persistable, Equatable {
    var id: Int
    var name: String
    var email: String
    var city: String
    var age: String
    static let schema = Schema<ContactV1>(name: "Contact", primaryKey: \.id, indexes: [.unique(\.email)])
}

struct PostalAddress: Codable, Equatable {
    var city: String
    var country: String
}

struct ContactV2: Persistable, Equatable {
    var id: Int
    var fullName: String
    var email: String
    var address: PostalAddress
    var age: String
    var priority: Int
    static let schema = Schema<ContactV2>(
        name: "Contact", primaryKey: \.id, indexes: [.unique(\.email), .on(\.priority)], version: 2)
}

struct ContactV3: Persistable, Equatable {
    var email: String
    var fullName: String
    var address: PostalAddress
    var age: Int
    var priority: Int
    var phone: String?
    static let schema = Schema<ContactV3>(
        name: "Contact", primaryKey: \.email, indexes: [.on(\.priority), .on(\.age)], version: 3)
}

struct NoteV1: Persistable, Equatable {
    var id: Int
    var text: String
    static let schema = Schema<NoteV1>(name: "Note", primaryKey: \.id)
}

struct Memo: Persistable, Equatable {
    var id: Int
    var text: String
    static let schema = Schema<Memo>(primaryKey: \.id)
}

struct Obsolete: Persistable, Equatable {
    var id: Int
    static let schema = Schema<Obsolete>(primaryKey: \.id)
}

enum ContactMigrations {
    static let v2 = Migration("2: full names, nested addresses, priorities; notes become memos") { context in
        try context.renameField("name", to: "fullName", in: "Contact")
        try context.addField("priority", to: "Contact", default: .unsigned(0))
        try context.updateRecords(of: "Contact") { record in
            record["address.city"] = record.remove("city")
            record["address.country"] = .text("NL")
            return .keep
        }
        try context.renameType("Note", to: "Memo")
        try context.deleteType("Obsolete")
    }

    static let v3 = Migration("3: the email is the key; ages are numbers") { context in
        try context.convertField("age", in: "Contact") { value in
            guard case .text(let text) = value, let number = Int(text) else { return .unsigned(0) }
            return .unsigned(UInt64(number))
        }
        try context.migrate(ContactV3.self) { contact in
            contact.fullName = contact.fullName.uppercased()
        }
    }
}

@Suite struct MigrationTests {
    let tmp = TemporaryDirectory()

    func contacts(_ count: Int) -> [ContactV1] {
        (0..<count).map { id in
            ContactV1(
                id: id, name: "name \(id)", email: "c\(id)@example.org", city: "city \(id % 3)",
                age: id % 5 == 0 ? "unknown" : "\(20 + id)")
        }
    }

    /// A store as version 1 of the app left it.
    func versionOne(_ count: Int = 30) throws -> URL {
        let url = tmp.url.appendingPathComponent("store")
        let store = try Store(at: url, types: [ContactV1.self, NoteV1.self, Obsolete.self], migrations: [])
        try store.write { tx in
            try tx.insert(contentsOf: contacts(count))
            for id in 0..<5 { try tx.insert(NoteV1(id: id, text: "note \(id)")) }
            for id in 0..<3 { try tx.insert(Obsolete(id: id)) }
        }
        store.close()
        return url
    }

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

@Suite struct MigrationObserverTests {
    let tmp = TemporaryDirectory()

    /// A migration run by another opening of the store reaches live results as one full change (and
    /// says so) that replays exactly on the list mirror.
    @Test func observersOfAMigratedTypeReceiveAFullChange() throws {
        let store = try Store(at: tmp.url, types: [Task.self], migrations: [])
        try store.write { tx in
            for id in 0..<60 {
                try tx.insert(Task(id: id, title: "t\(id)", rank: id, done: id % 2 == 0, group: "g\(id % 4)"))
            }
        }
        let query = store.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank)
        let replayer = ListReplayer("migration")
        let started = DispatchSemaphore(value: 0)
        let full = Locked(false)
        let token = query.observe { change in
            if case .update(_, let collection) = change, collection.wasFullyReevaluated {
                full.withLock { $0 = true }
            }
            replayer.follow(change, started: started)
        }
        defer { token.cancel() }
        #expect(started.wait(timeout: .now() + 10) == .success)
        let reshuffle = Migration("2: ranks reversed, some done, some gone, one new") { context in
            try context.updateRecords(of: "Task") { record in
                guard case .unsigned(let id) = record["id"] else { return .keep }
                if id % 7 == 0 { return .delete }
                record["rank"] = .unsigned(1000 - id)
                if id % 5 == 0 { record["done"] = .bool(false) }
                return .keep
            }
            var added = DynamicRecord()
            added["id"] = .unsigned(500)
            added["title"] = .text("new")
            added["rank"] = .unsigned(1)
            added["done"] = .bool(false)
            added["group"] = .text("g0")
            try context.insert(added, into: "Task")
        }
        let other = try Store(at: tmp.url, types: [Task.self], migrations: [reshuffle])
        let last = try other.read { $0.version }
        let deadline = Date().addingTimeInterval(10)
        while replayer.state.withLock({ $0.version }) < last && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let state = replayer.state.withLock { $0 }
        #expect(state.version == last)
        #expect(state.failures.isEmpty, "\(state.failures)")
        #expect(full.withLock { $0 }, "the change does not say it is a full re-evaluation")
        let fresh = try other.read { tx in
            try tx.objects(Task.self).filter(#Predicate { $0.done == false }).sorted(by: \.rank).fetch().map(
                \.id)
        }
        #expect(state.sections == [fresh])
        #expect(fresh.first == 500)
    }
}

@Suite struct MigrationCrashTests {
    let tmp = TemporaryDirectory()

    /// Every item as stored, read without Swift types: id → (fields, name or title, value).
    func items() throws -> [Int: CBORValue] {
        let store = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        defer { store.close() }
        var result: [Int: CBORValue] = [:]
        for record in try store.read({ try $0.storedRecords(of: "Item") }) {
            let value = try CBORValue(decoding: record.bytes)
            guard case .unsigned(let id) = value["id"] else { continue }
            result[Int(id)] = value
        }
        return result
    }

    func history() throws -> Int {
        let store = try Store(at: tmp.url, configuration: StoreConfiguration(readOnly: true))
        defer { store.close() }
        return try store.read { try $0.schemaHistory() }.version
    }

    /// A process SIGKILLed in the middle of a large migration leaves the store exactly at its old
    /// version with every record as it was; the next open runs the migration again, to its end.
    @Test func aMigrationKilledHalfwayLeavesTheOldVersionAndRunsAgain() throws {
        let helper = builtTool("lode-test-helper")
        let count = 20_000
        #expect(try shell("'\(helper)' migration-seed '\(tmp.path)' \(count)").status == 0)
        var kills = 0
        for delay in [0.02, 0.1, 0.3] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: helper)
            process.arguments = ["migration-run", tmp.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var seen = Data()
            while !String(decoding: seen, as: UTF8.self).contains("migrating") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen.append(chunk)
            }
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            guard process.terminationReason == .uncaughtSignal else { continue }  // it finished first
            kills += 1
            #expect(try history() == 0)
            let stored = try items()
            #expect(stored.count == count)
            #expect(stored.values.allSatisfy { $0["title"] == nil && $0["note"] == nil })
            #expect(stored[77]?["name"] == .text("item 77") && stored[77]?["value"] == .unsigned(77))
        }
        #expect(kills > 0, "every run finished before the kill")
        let finished = try shell("'\(helper)' migration-run '\(tmp.path)'")
        #expect(finished.status == 0 && finished.out.contains("done"), "\(finished.err)")
        #expect(try history() == 1)
        let stored = try items()
        #expect(stored.count == count)
        #expect(stored[77]?["title"] == .text("item 77") && stored[77]?["value"] == .unsigned(154))
        #expect(stored.values.allSatisfy { $0["name"] == nil && $0["note"] == .text("migrated") })
        let check = try shell("'\(builtTool("lode-dump"))' check '\(tmp.path)'")
        #expect(check.status == 0, "\(check.out)")
    }
}

@Suite struct SchemaHistoryToolTests {
    let tmp = TemporaryDirectory()

    /// `lode-dump schema` shows the version, the migrations and each type's field history; an export
    /// carries them and `load` restores them, so the loaded store opens with the same migration list.
    @Test func theHistoryIsShownExportedAndLoaded() throws {
        let tests = MigrationTests()
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

struct ContactWithPriority: Persistable, Equatable {
    var id: Int
    var name: String
    var email: String
    var city: String
    var age: String
    var priority: Int
    var nickname: String?
    static let schema = Schema<ContactWithPriority>(
        name: "Contact", primaryKey: \.id, indexes: [.unique(\.email), .on(\.priority)],
        defaults: [.field(\.priority, 3)])
}

struct ContactWithPriorityNoDefault: Persistable, Equatable {
    var id: Int
    var name: String
    var email: String
    var city: String
    var age: String
    var priority: Int
    static let schema = Schema<ContactWithPriorityNoDefault>(
        name: "Contact", primaryKey: \.id, indexes: [.unique(\.email)])
}

@Suite struct AdditiveChangeTests {
    /// Optional fields and fields with a declared default read old records without a migration —
    /// also through a new index on the defaulted field; without the default the open says what is
    /// missing.
    @Test func additiveChangesNeedNoMigration() throws {
        let tests = MigrationTests()
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

@Suite struct MigrationAtomicityTests {
    /// A migration that leaves records the app's types cannot read is not committed: the check and
    /// the registration of the new types (their indexes built) run in the migration's transaction.
    @Test func aMigrationThatLeavesUnreadableRecordsIsNotCommitted() throws {
        let tests = MigrationTests()
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

struct ContactWithoutAge: Persistable, Equatable {
    var id: Int
    var name: String
    var email: String
    var city: String
    static let schema = Schema<ContactWithoutAge>(
        name: "Contact", primaryKey: \.id, indexes: [.unique(\.email)])
}

@Suite struct OpenCheckTests {
    func entry(_ store: Store) throws -> CatalogEntry {
        try #require(try store.read { try $0.catalogEntry(named: "Contact") })
    }

    /// The catalog lists one example per record shape, so the check at open finds a record in the
    /// middle of the type with a shape of its own without reading every record; when an example is
    /// gone the check reads every record once and lists the shapes again.
    @Test func theCheckAtOpenFindsEveryShapeThroughTheCatalogsExamples() throws {
        let tests = MigrationTests()
        let url = try tests.versionOne(100)
        do {
            let store = try Store(at: url, types: [ContactWithoutAge.self])
            try store.write { tx in
                try tx.upsert(ContactWithoutAge(id: 50, name: "n", email: "fifty@example.org", city: "c"))
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
        let tests = MigrationTests()
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

@Suite struct RecordShapeTests {
    /// The shapes the check at open reads from stored records survive damaged bytes: counts larger
    /// than the record, deep nesting, truncation.
    @Test func shapesOfDamagedRecordsDoNotCrash() {
        var deepTags = [UInt8](repeating: 0xc6, count: 100_000)  // tag 6, nested
        deepTags.append(0x01)
        let inputs: [[UInt8]] = [
            [0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],  // a map of 2^64-1 entries
            [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],  // an array of 2^64-1 items
            [0xa2, 0x61, 0x61],  // cut short
            deepTags,
            [UInt8](repeating: 0x81, count: 100_000),  // arrays in arrays
            [],
        ]
        for input in inputs {
            _ = input.withUnsafeBytes { RecordShape.of($0) }
            _ = input.withUnsafeBytes { RecordNames.shape(of: $0) }
        }
        let record = try! CBOREncoder().encode(ContactV1(id: 1, name: "a", email: "b", city: "c", age: "d"))
        let other = try! CBOREncoder().encode(ContactWithoutAge(id: 1, name: "a", email: "b", city: "c"))
        #expect(record.withUnsafeBytes { RecordShape.of($0) } != other.withUnsafeBytes { RecordShape.of($0) })
    }
}
