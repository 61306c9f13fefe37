import CSodium
import Foundation
import Testing

@testable import LodeStore

/// Store keys: 32 bytes, made at random or from a passphrase (Argon2id), refused when malformed.
@Suite struct StoreKeyTests {
    /// Cheap parameters for tests (the minimum libsodium takes).
    let cheap = KeyDerivation(operations: 1, memory: 8192)

    func bytes(_ key: StoreKey) -> [UInt8] { key.withBytes { Array($0) } }

    @Test func randomKeysDiffer() throws {
        #expect(bytes(try StoreKey.random()) != bytes(try StoreKey.random()))
        #expect(bytes(try StoreKey.random()).count == 32)
    }

    @Test func keyBytesOfTheWrongLengthAreRefused() throws {
        #expect(throws: EncryptionError.self) { try StoreKey(bytes: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: EncryptionError.self) { try StoreKey(bytes: [UInt8](repeating: 1, count: 64)) }
        #expect(
            bytes(try StoreKey(bytes: [UInt8](repeating: 1, count: 32))) == [UInt8](repeating: 1, count: 32))
    }

    @Test func aPassphraseGivesTheSameKeyWithTheSameSaltAndParameters() throws {
        let salt = try KeyDerivation.newSalt()
        #expect(salt.count == 16)
        let first = try StoreKey(passphrase: "correct horse battery staple", salt: salt, parameters: cheap)
        let again = try StoreKey(passphrase: "correct horse battery staple", salt: salt, parameters: cheap)
        #expect(bytes(first) == bytes(again))
        let otherSalt = try StoreKey(
            passphrase: "correct horse battery staple", salt: try KeyDerivation.newSalt(), parameters: cheap)
        #expect(bytes(first) != bytes(otherSalt))
        let otherWord = try StoreKey(
            passphrase: "correct horse battery stapler", salt: salt, parameters: cheap)
        #expect(bytes(first) != bytes(otherWord))
        let otherCost = try StoreKey(
            passphrase: "correct horse battery staple", salt: salt,
            parameters: KeyDerivation(operations: 2, memory: 8192))
        #expect(bytes(first) != bytes(otherCost))
    }

    /// The key is Argon2id's hash with the stated cost: libsodium's self-describing password string
    /// (`$argon2id$v=19$m=8,t=1,p=1$<salt>$<hash>`, made with its own salt) names the algorithm and the
    /// cost, and a key derived from the same passphrase and that salt is its hash.
    @Test func theKeyIsArgon2idWithTheStatedCost() throws {
        var encoded = [CChar](repeating: 0, count: Int(crypto_pwhash_STRBYTES))
        let made = crypto_pwhash_str_alg(
            &encoded, "password", 8, cheap.operations, Int(cheap.memory), crypto_pwhash_ALG_ARGON2ID13)
        #expect(made == 0)
        let text = String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = text.split(separator: "$")
        try #require(parts.count == 5, "\(text)")
        #expect(parts[0] == "argon2id")
        #expect(parts[2] == "m=8,t=1,p=1")
        func base64(_ part: Substring) throws -> [UInt8] {
            let padded = String(part) + String(repeating: "=", count: (4 - part.count % 4) % 4)
            return Array(try #require(Data(base64Encoded: padded)))
        }
        let key = try StoreKey(passphrase: "password", salt: try base64(parts[3]), parameters: cheap)
        #expect(bytes(key) == (try base64(parts[4])))
    }

    @Test func truncatedSaltsAndParametersOutOfRangeAreRefused() throws {
        #expect(throws: EncryptionError.self) {
            try StoreKey(passphrase: "p", salt: [UInt8](repeating: 0, count: 15), parameters: cheap)
        }
        #expect(throws: EncryptionError.self) {
            try StoreKey(
                passphrase: "p", salt: [UInt8](repeating: 0, count: 16),
                parameters: KeyDerivation(operations: 0, memory: 8192))
        }
        #expect(throws: EncryptionError.self) {
            try StoreKey(
                passphrase: "p", salt: [UInt8](repeating: 0, count: 16),
                parameters: KeyDerivation(operations: 1, memory: 100))
        }
    }
}
