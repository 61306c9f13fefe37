import Dispatch
import Foundation
import LodeLive
import LodeQuery
import LodeStore
import LodeTestModels
import LodeTestSupport
import ModelStorage
import Testing

/// A consumer's view of a list: replays each update on a mirror and checks it against the contents
/// the update was delivered with.
final class ListReplayer: Sendable {
    struct State {
        var sections: [[Int]] = []
        var version = -1
        var updates = 0
        var failures: [String] = []
    }

    let name: String
    /// Time a slow consumer spends on each update.
    let delay: Double
    let state = Locked(State())

    init(_ name: String, delay: Double = 0) {
        self.name = name
        self.delay = delay
    }

    func initial(_ sections: [[Int]]) { state.withLock { $0.sections = sections } }

    func apply(_ update: StorageUpdate, new: [[Int]], version: Int) {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        state.withLock { state in
            state.updates += 1
            var mirror = ListMirror(sections: state.sections)
            do {
                try mirror.apply(update, dataSource: new)
                if mirror.sections != new { state.failures.append("v\(version): mirror differs") }
            } catch {
                state.failures.append("v\(version): \(error)")
            }
            state.sections = new
            state.version = version
        }
    }

    func fail(_ text: String) { state.withLock { $0.failures.append(text) } }

    /// Follows a `ResultsChange` of tasks: the initial list (then signals `started`), each update
    /// replayed, each error recorded.
    func follow(_ change: ResultsChange<Task>, started: DispatchSemaphore) {
        switch change {
        case .initial(let results):
            initial([ids(results)])
            started.signal()
        case .update(let results, let change):
            let new = [ids(results)]
            apply(change.storageUpdate { new[0][$0] }, new: new, version: change.toVersion)
        case .error(let error): fail("\(error)")
        }
    }
}

func ids(_ results: Results<Task>) -> [Int] { (try? results.fetch().map(\.id)) ?? [-1] }

func ids<Key>(_ sectioned: SectionedResults<Key, Task>) -> [[Int]] {
    ((try? sectioned.fetchSections()) ?? []).map { ids($0.objects) }
}

/// The suites' task type (not Swift's `Task`).
typealias Task = LodeTestModels.Task
