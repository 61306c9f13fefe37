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

@Suite struct EntryTableTests {
    /// Random sets, replacements and removals agree with a dictionary, through growth, removed
    /// slots and arena compactions.
    @Test func randomEditsAgreeWithADictionary() {
        var rng = SeededGenerator(seed: 0xe7)
        var table = EntryTable()
        var model: [[UInt8]: [UInt8]] = [:]
        func bytes(_ count: ClosedRange<Int>) -> [UInt8] {
            (0..<Int.random(in: count, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
        let keys = (0..<600).map { _ in bytes(1...12) }
        for step in 0..<30_000 {
            let key = keys[Int.random(in: 0..<keys.count, using: &rng)]
            if Int.random(in: 0..<3, using: &rng) == 0 {
                table.remove(key)
                model[key] = nil
            } else {
                let entry = LiveRow.make(section: bytes(0...3), sort: bytes(0...30), key: key)
                table.set(entry)
                model[key] = entry
            }
            if step % 1_000 == 0 {
                #expect(table.count == model.count)
                #expect(keys.allSatisfy { table[$0].map { Array($0) } == model[$0] })
                #expect(Set(table.entries) == Set(model.values))
            }
        }
    }
}
