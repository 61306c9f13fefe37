import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// The invariant checks `make test` compiles in (`LODE_INTERNAL_CHECKS=1`, see Package.swift): they are
/// on when the build asked for them, and a broken invariant stops the program.
@Suite struct InternalChecksTests {
    @Test func theChecksAreCompiledInWhenTheBuildAsksForThem() {
        guard ProcessInfo.processInfo.environment["LODE_INTERNAL_CHECKS"] == "1" else { return }
        let enabled = LodeLive.internalChecksEnabled
        #expect(enabled)
    }

    @Test func wellFormedChangesPassTheirChecks() {
        var change = CollectionChange(
            fromVersion: 1, toVersion: 2, deletions: [3, 1], insertions: [0],
            modifications: [.init(old: 2, new: 1)], moves: [.init(from: 0, to: 2)])
        change.sort()
        change.checkInvariants()
        #expect(change.isWellFormed)
        #expect(change.deletions == [1, 3])
    }

    @Test func aChangeThatUsesAnIndexTwiceIsNotWellFormed() {
        let twice = CollectionChange(
            fromVersion: 1, toVersion: 2, deletions: [1], moves: [.init(from: 1, to: 0)])
        #expect(!twice.isWellFormed)
        let sectioned = SectionedChange(
            CollectionChange(fromVersion: 1, toVersion: 2, insertions: [0, 0]), section: 0)
        #expect(!sectioned.isWellFormed)
    }

    @Test func aBrokenInvariantStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            let unsorted = CollectionChange(fromVersion: 1, toVersion: 2, deletions: [2, 1])
            unsorted.checkInvariants()
        }
    }
}
