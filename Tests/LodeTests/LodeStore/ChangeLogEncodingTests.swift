import Dispatch
import Foundation
import Lode
import LodeTestSupport
import LodeTesting
import ModelStorage
import Synchronization
import Testing

@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeQuery
@testable import LodeStorage
@testable import LodeStore

@Suite struct ChangeLogEncodingTests {
    @Test func theDirectEncodingIsTheCodableEncoding() throws {
        var pending = PendingChanges()
        pending.record(type: "A", key: [1, 2], existedBefore: false, existsAfter: true)
        pending.record(type: "A", key: [3], existedBefore: true, existsAfter: true, fields: ["x", "b"])
        pending.record(type: "B", key: [4], existedBefore: true, existsAfter: false)
        pending.record(type: "A", key: [5], existedBefore: false, existsAfter: true)
        pending.record(type: "A", key: [5], existedBefore: true, existsAfter: false)  // nets to nothing
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
                // Two changes of A (more than 1): one bulk change where A's first change was.
                #expect(decoded.changes.map { $0.op } == [.bulk, .delete])
                #expect(decoded.changes[0].count == 2)
            } else {
                #expect(decoded.changes.map { $0.op } == [.insert, .update, .delete])
                #expect(decoded.changes[1].fields == ["b", "x"])
            }
        }
    }
}
