import Foundation
import ModelStorage
import Testing

@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// Undo and redo are ordinary commits: live results deliver them as changes that replay exactly on
/// the list mirror, interleaved with new writes, and every undo gives back the rows before its step.
@Suite struct UndoLiveTests {
    @Test func liveResultsDeliverUndoAndRedoAsOrdinaryChanges() throws {
        let directory = TemporaryDirectory("undo-live")
        let store = try Store(
            at: directory.url, configuration: StoreConfiguration(history: .forever), types: [Task.self])
        let undo = try UndoStack(store, limit: 1_000)
        let live = try store.objects(Task.self).filter(#Predicate { !$0.done }).sorted(by: \.rank).live()
        var random = SeededGenerator(seed: 0x0_6100)
        var rows: [Task] = []
        // The rows after each step on the undo side (the first: before any), and after each on the
        // redo side.
        var done: [[Task]] = [[]]
        var undone: [[Task]] = []
        var moves = (undos: 0, redos: 0, writes: 0)
        for round in 0..<160 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3 where undo.canUndo:
                try undo.undo()
                undone.append(done.removeLast())
                moves.undos += 1
            case 3..<6 where undo.canRedo:
                try undo.redo()
                done.append(undone.removeLast())
                moves.redos += 1
            default:
                try undo.write("round \(round)") { tx in
                    for _ in 0..<Int.random(in: 1...3, using: &random) {
                        let id = Int.random(in: 0..<15, using: &random)
                        if try tx.object(Task.self, key: id) == nil {
                            try tx.insert(
                                Task(
                                    id: id, title: "t\(round)", rank: Int.random(in: 0..<6, using: &random),
                                    done: false, group: "g"))
                        } else if Bool.random(using: &random) {
                            try tx.update(Task.self, key: id) {
                                $0.rank = Int.random(in: 0..<6, using: &random)
                                $0.done = Int.random(in: 0..<4, using: &random) == 0
                            }
                        } else {
                            try tx.delete(Task.self, key: id)
                        }
                    }
                }
                moves.writes += 1
                done.append(
                    try store.objects(Task.self).filter(#Predicate { !$0.done }).sorted(by: \.rank).fetch())
                undone.removeAll()
            }
            let fresh = try store.objects(Task.self).filter(#Predicate { !$0.done }).sorted(by: \.rank)
                .fetch()
            if let change = try live.refresh() { rows = try replay(change, old: rows, new: fresh) }
            #expect(rows == fresh, "after round \(round)")
            // An undo gives back the rows before its step, a redo the rows after.
            #expect(fresh == done.last, "after round \(round)")
        }
        #expect(moves.undos > 25 && moves.redos > 5 && moves.writes > 60)
    }
}
