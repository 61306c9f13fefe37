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

@Suite struct RankedKeysTests {
    /// Random inserts and removals agree with a sorted array, ranks and keys at ranks included, and
    /// the structure's invariants hold everywhere after each step (debug builds also check them near
    /// every mutation).
    @Test(arguments: [(512, 64), (4, 3), (2, 2)])
    func randomEditsAgreeWithASortedArray(chunkCapacity: Int, groupCapacity: Int) {
        var rng = SeededGenerator(seed: 0x5eed)
        var keys = RankedKeys(chunkCapacity: chunkCapacity, groupCapacity: groupCapacity)
        var model: [[UInt8]] = []
        var kept = (keys: keys, model: model)
        for step in 0..<20_000 {
            let key = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                UInt8.random(in: 0...40, using: &rng)
            }
            let position = model.firstIndex { !$0.lexicographicallyPrecedes(key) } ?? model.count
            if position < model.count && model[position] == key {
                #expect(keys.remove(key) == position)
                model.remove(at: position)
            } else if step % 3 != 0 || model.isEmpty {
                #expect(keys.insert(key) == position)
                model.insert(key, at: position)
            }
            if step % 997 == 0 {
                // A copy taken earlier still holds what it held (the structure is shared copy-on-write).
                #expect(kept.keys.allKeys == kept.model)
                kept = (keys, model)
                #expect(keys.allKeys == model)
                #expect(
                    (0..<model.count).allSatisfy {
                        keys.key(at: $0) == model[$0] && keys.rank(of: model[$0]) == $0
                    })
            }
        }
        #expect(keys.count == model.count && keys.allKeys == model)
    }
}
