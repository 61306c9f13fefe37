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

    /// Batches of removals and insertions — runs of neighbours, as a renamed section moves, and keys
    /// scattered everywhere, some absent — agree with a sorted array: the ranks each removed key had
    /// before the batch, the ranks of the inserted ones after it, and every key at every rank.
    @Test(arguments: [(512, 64), (4, 3), (2, 2)])
    func batchesAgreeWithASortedArray(chunkCapacity: Int, groupCapacity: Int) {
        var rng = SeededGenerator(seed: 0xba7c4)
        var keys = RankedKeys(chunkCapacity: chunkCapacity, groupCapacity: groupCapacity)
        var model: [[UInt8]] = []
        func randomKey(prefix: UInt8) -> [UInt8] {
            [prefix]
                + (0..<Int.random(in: 0...3, using: &rng)).map { _ in UInt8.random(in: 0...20, using: &rng) }
        }
        for step in 0..<160 {
            // Removals: a run of neighbours, or a scattering (with keys that are not there).
            var removing: Set<[UInt8]> = []
            if !model.isEmpty {
                if step % 2 == 0 {
                    let first = Int.random(in: 0..<model.count, using: &rng)
                    let run = Int.random(in: 1...Swift.min(model.count - first, 30), using: &rng)
                    removing.formUnion(model[first..<(first + run)])
                } else {
                    for _ in 0..<Int.random(in: 0...10, using: &rng) {
                        removing.insert(model.randomElement(using: &rng)!)
                    }
                }
            }
            for _ in 0..<Int.random(in: 0...3, using: &rng) { removing.insert(randomKey(prefix: 99)) }
            let removal = removing.sorted { $0.lexicographicallyPrecedes($1) }
            let expectedRanks = removal.map { key in model.firstIndex(of: key) }
            #expect(keys.remove(sorted: removal) == expectedRanks)
            model.removeAll { removing.contains($0) }
            // Insertions: a run under one new prefix (a section renamed into place), or a scattering.
            var adding: Set<[UInt8]> = []
            let prefix = UInt8.random(in: 0...30, using: &rng)
            for _ in 0..<Int.random(in: 0...(step % 2 == 0 ? 120 : 30), using: &rng) {
                adding.insert(
                    step % 2 == 0
                        ? randomKey(prefix: prefix) : randomKey(prefix: UInt8.random(in: 0...30, using: &rng))
                )
            }
            adding.subtract(model)
            let insertion = adding.sorted { $0.lexicographicallyPrecedes($1) }
            keys.insert(sorted: insertion)
            model = (model + insertion).sorted { $0.lexicographicallyPrecedes($1) }
            #expect(keys.ranks(ofSorted: insertion) == insertion.map { model.firstIndex(of: $0) })
            #expect(keys.count == model.count)
            if step % 20 == 0 {
                keys.checkInvariants()
                #expect(keys.allKeys == model)
                #expect((0..<model.count).allSatisfy { keys.key(at: $0) == model[$0] })
            }
        }
        keys.checkInvariants()
        #expect(keys.allKeys == model)
        // Everything out, then a batch into the empty set.
        #expect(keys.remove(sorted: model) == Array(0..<model.count))
        #expect(keys.count == 0 && keys.allKeys.isEmpty)
        let refill = (0..<50).map { [UInt8($0)] }
        keys.insert(sorted: refill)
        keys.checkInvariants()
        #expect(keys.allKeys == refill && keys.ranks(ofSorted: refill) == Array(0..<50))
    }
}
