import Foundation
import LodeStore
import LodeTestSupport
import Testing

// The contact types of the migration tests: versions of one type, and the migrations between them.

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

struct ContactWithoutAge: Persistable, Equatable {
    var id: Int
    var name: String
    var email: String
    var city: String
    static let schema = Schema<ContactWithoutAge>(
        name: "Contact", primaryKey: \.id, indexes: [.unique(\.email)])
}

/// Stores of the contact types, in a temporary directory.
struct ContactFixtures {
    let tmp: TemporaryDirectory

    init(tmp: TemporaryDirectory = TemporaryDirectory()) { self.tmp = tmp }

    func contacts(_ count: Int) -> [ContactV1] {
        (0..<count).map { id in
            ContactV1(
                id: id, name: "name \(id)", email: "c\(id)@example.org", city: "city \(id % 3)",
                age: id % 5 == 0 ? "unknown" : "\(20 + id)")
        }
    }

    /// A store as version 1 of the app left it: 30 contacts, 5 notes and 3 obsolete records.
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
}
