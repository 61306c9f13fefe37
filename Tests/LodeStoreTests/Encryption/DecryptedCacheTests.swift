import Testing

@testable import LodeStore

/// The decrypted cache answers only for the exact sealed bytes and associated data it kept, and
/// stays within its budget.
@Suite struct DecryptedCacheTests {
    /// A sealed value stand-in: random bytes (its last 16, the tag, place it).
    func sealedValue(_ count: Int = 60) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    func copy(_ cache: DecryptedCache, _ sealed: [UInt8], _ context: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 256)
        let count = sealed.withUnsafeBytes { sealed in
            context.withUnsafeBytes { context in
                out.withUnsafeMutableBytes { cache.copy(sealed, context: context, into: $0) }
            }
        }
        return count.map { Array(out[0..<$0]) }
    }

    func keep(_ cache: DecryptedCache, _ sealed: [UInt8], _ context: [UInt8], _ plain: [UInt8]) {
        sealed.withUnsafeBytes { sealed in
            context.withUnsafeBytes { context in
                plain.withUnsafeBytes { cache.keep(sealed, context: context, plain: $0) }
            }
        }
    }

    @Test func anEntryAnswersOnlyForItsOwnBytesAndContext() throws {
        let cache = try #require(DecryptedCache(budget: 1 << 20))
        let sealed = sealedValue()
        let context = Array("Secret\0stored-key-16-b".utf8)
        keep(cache, sealed, context, Array("plaintext".utf8))
        #expect(copy(cache, sealed, context) == Array("plaintext".utf8))
        // Another byte anywhere but the tag (the same slot), another context, a shorter value: misses.
        var changed = sealed
        changed[10] ^= 1
        #expect(copy(cache, changed, context) == nil)
        var otherContext = context
        otherContext[otherContext.count - 1] ^= 1
        #expect(copy(cache, sealed, otherContext) == nil)
        #expect(copy(cache, Array(sealed.dropFirst()), context) == nil)
        // An empty plaintext is kept too.
        let empty = sealedValue()
        keep(cache, empty, context, [])
        #expect(copy(cache, empty, context) == [])
    }

    @Test func theCacheStaysWithinItsBudgetAndKeepsWhatIsRead() throws {
        let budget = 256 << 10
        let cache = try #require(DecryptedCache(budget: budget))
        let context = Array("Secret\0k".utf8)
        let hot = sealedValue()
        keep(cache, hot, context, Array(repeating: 7, count: 100))
        var kept = 0
        for _ in 0..<20_000 {
            keep(cache, sealedValue(), context, Array(repeating: 1, count: 100))
            kept += 1
            if kept % 100 == 0 { _ = copy(cache, hot, context) }
            #expect(cache.byteCount <= budget)
        }
        #expect(cache.byteCount > budget / 2)
        #expect(DecryptedCache(budget: 1024) == nil)
    }
}
