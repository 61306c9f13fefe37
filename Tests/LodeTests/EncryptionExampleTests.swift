import Foundation
import Lode
import LodeTestSupport
import Testing

/// The encryption examples of the README and the *Encryption at rest* article, word for word, run.
@Suite struct EncryptionExampleTests {
    struct Note: Persistable, Equatable {
        var id: Int
        var title: String
        static let schema = Schema<Note>(primaryKey: \.id)
    }

    let tmp = TemporaryDirectory("encryption-examples")
    let words = "correct horse battery staple"

    @Test func theReadmeExampleEncryptsThenChangesToAPassphrase() throws {
        let url = tmp.url.appendingPathComponent("notes")
        do {
            let key = try StoreKey.random()  // keep it in the platform's key store
            let store = try Store(
                at: url, configuration: StoreConfiguration(encryption: .key(key)), types: [Note.self])
            try store.write { tx in try tx.insert(Note(id: 1, title: "secret")) }
            store.close()

            // Later, with the store closed everywhere: in place, crash-safe.
            try Store.changeEncryption(at: url, from: .key(key), to: .passphrase(words))
        }
        let reopened = try Store(
            at: url, configuration: StoreConfiguration(encryption: .passphrase(words)), types: [Note.self])
        #expect(try reopened.read { try $0.object(Note.self, key: 1) } == Note(id: 1, title: "secret"))
    }

    @Test func theArticleExampleOpensWithAKeyOrAPassphrase() throws {
        let url = tmp.url.appendingPathComponent("by-key")
        let otherURL = tmp.url.appendingPathComponent("by-words")
        let key = try StoreKey.random()  // keep its 32 bytes in the platform's key store
        let store = try Store(
            at: url, configuration: StoreConfiguration(encryption: .key(key)), types: [Note.self])

        // Or a passphrase, stretched by Argon2id; the salt and parameters are kept in the store.
        let byWords = try Store(
            at: otherURL, configuration: StoreConfiguration(encryption: .passphrase(words)),
            types: [Note.self])
        #expect(store.isEncrypted && byWords.isEncrypted)
    }
}
