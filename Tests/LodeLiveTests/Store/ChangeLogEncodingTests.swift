import Dispatch
import Foundation
import LodeTesting
import ModelStorage
import Synchronization
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct ChangeLogEncodingTests {
    @Test func theDirectEncodingIsTheCodableEncoding() throws {
        var pending = PendingChanges()
        pending.record(type: "A", key: [1, 2], existedBefore: false, existsAfter: true)
        pending.record(type: "A", key: [3], existedBefore: true, existsAfter: true, fields: ["x", "b"])
        pending.record(type: "B", key: [4], existedBefore: true, existsAfter: false)
        pending.record(type: "A", key: [5], existedBefore: false, existsAfter: true)
        pending.record(type: "A", key: [5], existedBefore: true, existsAfter: false)  // nets to nothing
        // Updates in a row: the same fields (their list encoded once), others, the same again.
        pending.record(type: "B", key: [6], existedBefore: true, existsAfter: true, fields: ["x", "b"])
        pending.record(type: "B", key: [7], existedBefore: true, existsAfter: true, fields: ["c"])
        pending.record(type: "B", key: [8], existedBefore: true, existsAfter: true, fields: ["b", "x"])
        for threshold in [Int.max, 1] {
            let direct = try #require(pending.encodedEntry(bulkThreshold: threshold))
            let decoded = try CBORDecoder().decode(ChangeLogEntry.self, from: direct)
            let expected = pending.entry(bulkThreshold: threshold)
            #expect(decoded.changes == expected.changes)
            var reencoded = expected
            reencoded.time = decoded.time
            #expect(try CBOREncoder().encode(reencoded) == direct)
            // Pruning reads the time from the first bytes alone.
            let time = direct.withUnsafeBytes { ChangeLogEntry.time(ofEncoded: $0) }
            #expect(time == decoded.time)
            if threshold == 1 {
                // Two changes of A and four of B (more than 1): one bulk change of each where its first
                // change was.
                #expect(decoded.changes.map { $0.op } == [.bulk, .bulk])
                #expect(decoded.changes.map { $0.count } == [2, 4])
            } else {
                #expect(
                    decoded.changes.map { $0.op } == [.insert, .update, .delete, .update, .update, .update])
                #expect(
                    decoded.changes.map { $0.fields } == [
                        nil, ["b", "x"], nil, ["b", "x"], ["c"], ["b", "x"],
                    ])
            }
        }
    }

    /// A transaction that only inserts new keys records them without an index of keys; the first
    /// other change (an upsert of one of them, a deletion, a clear) must still net with what came
    /// before, in every order.
    @Test func insertsAloneThenAnyOtherChangeStillNet() throws {
        func ops(_ pending: PendingChanges) -> [String] {
            pending.entry().changes.map { "\($0.type):\($0.key.first ?? 0):\($0.op.rawValue)" }
        }
        var inserted = PendingChanges()
        for key: UInt8 in 1...3 {
            inserted.record(type: "A", key: [key], existedBefore: false, existsAfter: true)
        }
        #expect(ops(inserted) == ["A:1:insert", "A:2:insert", "A:3:insert"])

        // An upsert of an inserted key (it exists now): still an insert, listed once.
        var upserted = inserted
        upserted.record(type: "A", key: [2], existedBefore: true, existsAfter: true, fields: ["x"])
        #expect(ops(upserted) == ["A:1:insert", "A:2:insert", "A:3:insert"])

        // Inserted then deleted: nothing; deleted then inserted again: an update of what was there.
        var deleted = inserted
        deleted.record(type: "A", key: [3], existedBefore: true, existsAfter: false)
        deleted.record(type: "A", key: [1], existedBefore: true, existsAfter: false)
        deleted.record(type: "A", key: [1], existedBefore: false, existsAfter: true)
        #expect(ops(deleted) == ["A:1:insert", "A:2:insert"])
        var replaced = PendingChanges()
        replaced.record(type: "A", key: [9], existedBefore: true, existsAfter: false)
        replaced.record(type: "A", key: [9], existedBefore: false, existsAfter: true)
        #expect(ops(replaced) == ["A:9:update"])

        // Inserts of two types interleaved, then a clear of one: the other's inserts stay.
        var cleared = PendingChanges()
        cleared.record(type: "A", key: [1], existedBefore: false, existsAfter: true)
        cleared.record(type: "B", key: [1], existedBefore: false, existsAfter: true)
        cleared.record(type: "A", key: [2], existedBefore: false, existsAfter: true)
        cleared.recordClear(type: "A")
        cleared.record(type: "A", key: [2], existedBefore: false, existsAfter: true)
        #expect(ops(cleared) == ["B:1:insert", "A:0:clear", "A:2:insert"])
    }
}
