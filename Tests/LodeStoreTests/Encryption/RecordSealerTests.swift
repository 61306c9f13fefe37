import Foundation
import LodeTestSupport
import Testing

@testable import LodeStore

/// The sealing the store's encryption rests on: a value opens only with its key and in its place,
/// any changed byte is caught, and no two seals of one value look alike.
@Suite struct RecordSealerTests {
    let key = try! StoreKey.random()

    func sealed(_ text: String, _ sealer: RecordSealer, context: String) -> [UInt8] {
        Array(text.utf8).withUnsafeBytes { plain in
            Array(context.utf8).withUnsafeBytes { sealer.seal(plain, boundTo: $0) }
        }
    }

    func opened(_ sealed: [UInt8], _ sealer: RecordSealer, context: String) throws -> String {
        let plain = try sealed.withUnsafeBytes { value in
            try Array(context.utf8).withUnsafeBytes { try sealer.open(value, boundTo: $0) }
        }
        return String(decoding: plain, as: UTF8.self)
    }

    @Test func aSealedValueOpensWithItsKeyInItsPlace() throws {
        let sealer = try RecordSealer(key: key)
        let value = sealed("meet Ada at noon", sealer, context: "Note/7")
        #expect(try opened(value, sealer, context: "Note/7") == "meet Ada at noon")
        #expect(value.count == "meet Ada at noon".utf8.count + RecordSealer.overhead)
        // Nothing of the plaintext shows.
        #expect(!String(decoding: value, as: UTF8.self).contains("Ada"))
        // The empty value seals and opens too.
        #expect(try opened(sealed("", sealer, context: "Note/8"), sealer, context: "Note/8") == "")
    }

    @Test func twoSealsOfOneValueDiffer() throws {
        let sealer = try RecordSealer(key: key)
        let first = sealed("same", sealer, context: "Note/1")
        let second = sealed("same", sealer, context: "Note/1")
        #expect(first != second)
        #expect(first[1..<25] != second[1..<25], "a fresh nonce each time")
    }

    @Test func aValueMovedToAnotherPlaceDoesNotOpen() throws {
        let sealer = try RecordSealer(key: key)
        let value = sealed("balance 100", sealer, context: "Account/1")
        #expect(throws: EncryptionError.self) { try opened(value, sealer, context: "Account/2") }
        #expect(throws: EncryptionError.self) { try opened(value, sealer, context: "Note/1") }
    }

    @Test func everyChangedByteIsCaught() throws {
        let sealer = try RecordSealer(key: key)
        let value = sealed("a record of some length", sealer, context: "Note/1")
        for position in value.indices {
            var damaged = value
            damaged[position] ^= 0x40
            #expect(throws: EncryptionError.self, "byte \(position)") {
                try opened(damaged, sealer, context: "Note/1")
            }
        }
        #expect(throws: EncryptionError.self) {
            try opened(Array(value.dropLast()), sealer, context: "Note/1")
        }
        #expect(throws: EncryptionError.self) {
            try opened(Array(value.prefix(10)), sealer, context: "Note/1")
        }
    }

    @Test func anotherKeyOpensNothingAndIsNotRecognized() throws {
        let sealer = try RecordSealer(key: key)
        let other = try RecordSealer(key: try StoreKey.random())
        let value = sealed("secret", sealer, context: "Note/1")
        #expect(throws: EncryptionError.self) { try opened(value, other, context: "Note/1") }
        #expect(sealer.recognizes(sealer.keyCheck))
        #expect(!other.recognizes(sealer.keyCheck))
        #expect(!sealer.recognizes(Array(sealer.keyCheck.dropLast())))
        // The same key bytes make the same sealer.
        let bytes = [UInt8](repeating: 7, count: 32)
        let again = try RecordSealer(key: try StoreKey(bytes: bytes))
        let value2 = sealed("secret", try RecordSealer(key: try StoreKey(bytes: bytes)), context: "Note/1")
        #expect(try opened(value2, again, context: "Note/1") == "secret")
    }

    @Test func aFormatThisVersionDoesNotKnowIsRefusedByName() throws {
        let sealer = try RecordSealer(key: key)
        var value = sealed("x", sealer, context: "c")
        value[0] = 2
        #expect(throws: EncryptionError.self) { try opened(value, sealer, context: "c") }
        do {
            _ = try opened(value, sealer, context: "c")
        } catch {
            #expect("\(error)".contains("format 2"))
        }
    }

    /// Format 1 (BLAKE2b) and format 2 (SipHash-128) hash keys differently: a store of either keeps
    /// its own, which its format names.
    @Test(arguments: [1, 2]) func keyedHashesAreEqualForEqualKeysAndDependOnTheKey(format: Int) throws {
        let sealer = try RecordSealer(key: key, format: format)
        let other = try RecordSealer(key: try StoreKey.random(), format: format)
        let otherFormat = try RecordSealer(key: key, format: 3 - format)
        func hash(_ text: String, _ sealer: RecordSealer) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: RecordSealer.keyedHashLength)
            Array(text.utf8).withUnsafeBytes { input in
                out.withUnsafeMutableBytes { sealer.keyedHash(input, into: $0.baseAddress!) }
            }
            return out
        }
        #expect(hash("ada@example.com", sealer) == hash("ada@example.com", sealer))
        #expect(hash("ada@example.com", sealer) != hash("ada@example.org", sealer))
        #expect(hash("ada@example.com", sealer) != hash("ada@example.com", other))
        #expect(hash("ada@example.com", sealer) != hash("ada@example.com", otherFormat))
        #expect(hash("", sealer) != hash("", other))
    }
}

extension RecordSealerTests {
    /// A forked child must not repeat its parent's nonces: it inherits the parent's nonce pool, and
    /// draws a seed of its own before its first seal (a real fork, in the test helper, which forks
    /// before it starts any thread).
    @Test func aForkedChildDrawsNoncesItsParentDoesNot() throws {
        let helper = try ToolProcess(["fork-nonces"], tool: "lode-test-helper")
        let result = helper.finish()
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let child = lines.first { $0.first == "child" }.map { Array($0.dropFirst()) } ?? []
        let parent = lines.first { $0.first == "parent" }.map { Array($0.dropFirst()) } ?? []
        #expect(child.count == 3 && parent.count == 3, "\(result.out)")
        #expect(Set(child + parent).count == 6, "child \(child), parent \(parent)")
        #expect((child + parent).allSatisfy { $0.count == 48 }, "24-byte nonces: \(result.out)")
    }
}

extension RecordSealerTests {
    func deterministicSeal(_ text: String, _ sealer: RecordSealer, context: String) -> [UInt8] {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        return Array(text.utf8).withUnsafeBytes { plain in
            Array(context.utf8).withUnsafeBytes { context in
                [UInt8](unsafeUninitializedCapacity: RecordSealer.overhead + plain.count) { out, count in
                    sealer.seal(
                        plain, empty, empty, boundTo: context, deterministic: true,
                        into: UnsafeMutableRawBufferPointer(out))
                    count = out.count
                }
            }
        }
    }

    /// The values of dup-sort databases (index entries) are sealed deterministically: LMDB finds an
    /// entry to delete by its bytes, so the same key, context and plaintext must seal to the same
    /// bytes in every version of Lode that opens the store. The expected bytes are pinned: a change
    /// to the synthetic nonce would leave a store's index entries impossible to delete.
    @Test func aDeterministicSealIsTheSameInEveryVersion() throws {
        let sealer = try RecordSealer(key: try StoreKey(bytes: (0..<32).map { UInt8($0) }))
        let first = deterministicSeal("primary key 42", sealer, context: "Note.title\u{0}stored")
        #expect(first == deterministicSeal("primary key 42", sealer, context: "Note.title\u{0}stored"))
        #expect(first != deterministicSeal("primary key 43", sealer, context: "Note.title\u{0}stored"))
        #expect(first != deterministicSeal("primary key 42", sealer, context: "Note.title\u{0}other"))
        #expect(try opened(first, sealer, context: "Note.title\u{0}stored") == "primary key 42")
        let hex = first.map { String(format: "%02x", $0) }.joined()
        #expect(
            hex
                == "0175adcfcd2d280665075edd68f8c046a58210b23bf19669bae1bc39d5bbb0be7351b4d3c03f68dec12942ac6f57a8ea0e416d01d2cef0",
            "a deterministic seal changed: \(hex)")
    }
}

extension RecordSealerTests {
    /// Stored keys and the key check are what a store written by an earlier version holds: a record
    /// is found by the keyed hash of its key, and the key is recognized by its check value. Pinned
    /// for a fixed key in both sealing formats, so a change to either shows here first.
    @Test(arguments: [
        (
            1,
            "f10f85c8c2434871c793ba3d40dd18666a6fac68dbdd4a3b11a6e653b7a64257458a8e126930aae9a346209212ff4182"
        ),
        (
            2,
            "9e32bdc3df55c088c42bab1a66127ec76a6fac68dbdd4a3b11a6e653b7a64257458a8e126930aae9a346209212ff4182"
        ),
    ])
    func storedKeysAndTheKeyCheckAreTheSameInEveryVersion(format: Int, expected: String) throws {
        let sealer = try RecordSealer(key: try StoreKey(bytes: (0..<32).map { UInt8($0) }), format: format)
        var out = [UInt8](repeating: 0, count: RecordSealer.keyedHashLength)
        Array("Note\u{0}ada@example.com".utf8).withUnsafeBytes { input in
            out.withUnsafeMutableBytes { sealer.keyedHash(input, into: $0.baseAddress!) }
        }
        let hex = (out + sealer.keyCheck).map { String(format: "%02x", $0) }.joined()
        #expect(hex == expected, "format \(format): \(hex)")
    }
}
