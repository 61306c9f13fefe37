import Foundation
import Observation
import Testing

@testable import LodeLive
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// How many times an observation tracking's `onChange` ran.
final class Fired: @unchecked Sendable {
    // @unchecked: `count` is guarded by `lock`.
    private let lock = NSLock()
    private var count = 0

    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }

    /// A new counter, told once when what `read` reads changes (Observation's tracking is one-shot).
    static func tracking(_ read: () -> Void) -> Fired {
        let fired = Fired()
        withObservationTracking(read) { fired.add() }
        return fired
    }
}

/// Live objects and live queries through the Observation framework: code is told when what it read
/// changed — once per tracking — and never for what it did not read, for commits of this process and
/// of others. Deliveries follow commits in order, so a later commit's change arriving means an earlier
/// commit's (if any) has arrived: the "not told" checks wait for such a marker.
@Suite struct LiveObservationTests {
    let directory = TemporaryDirectory("live-observation")

    func todo(_ n: Int, title: String? = nil) -> Todo {
        Todo(
            id: UUID(uuid: (UInt8(n), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7)),
            title: title ?? "todo \(n)",
            status: .open, priority: n, due: nil)
    }

    /// Waits by blocking (deliveries, processes): on an executor of its own, not the pool.
    @Test func aLiveObjectTellsReadersOfTheChangedPropertiesOnly() async throws {
        try await onDedicatedExecutor { try aLiveObjectTellsReadersOfTheChangedPropertiesOnlyBlocking() }
    }

    func aLiveObjectTellsReadersOfTheChangedPropertiesOnlyBlocking() throws {
        let store = try Store(at: directory.url, types: [Todo.self])
        let (watched, other) = (todo(1), todo(2))
        try store.write { tx in
            try tx.insert(watched)
            try tx.insert(other)
        }
        let live = try LiveObject(Todo.self, key: watched.id, in: store)
        #expect(live.title == "todo 1" && live.priority == 1 && !live.isDeleted)

        var (title, priority) = (Fired.tracking { _ = live.title }, Fired.tracking { _ = live.priority })
        var (deleted, whole) = (Fired.tracking { _ = live.isDeleted }, Fired.tracking { _ = live.object })
        try store.write { tx in try tx.update(Todo.self, key: watched.id, \.priority) { $0 = 7 } }
        #expect(eventually { live.priority == 7 })
        #expect(priority.value == 1 && whole.value == 1)
        #expect(title.value == 0 && deleted.value == 0)

        // Another object's commit, a rewrite with the same values, then a change of tags: only the
        // tags (and the whole object) are told of, once.
        (priority, whole) = (Fired.tracking { _ = live.priority }, Fired.tracking { _ = live.object })
        let tags = Fired.tracking { _ = live.tags }
        try store.write { tx in try tx.update(Todo.self, key: other.id) { $0.priority = 99 } }
        try store.write { tx in try tx.update(Todo.self, key: watched.id) { $0.title = "todo 1" } }
        try store.write { tx in try tx.update(Todo.self, key: watched.id) { $0.tags = ["x"] } }
        #expect(eventually { live.tags == ["x"] })
        #expect(tags.value == 1 && whole.value == 1)
        #expect(title.value == 0 && priority.value == 0 && deleted.value == 0)

        // Deleted: readers of isDeleted are told; the properties keep their last values.
        title = Fired.tracking { _ = live.title }
        try store.write { tx in _ = try tx.delete(Todo.self, key: watched.id) }
        #expect(eventually { live.isDeleted })
        #expect(deleted.value == 1 && title.value == 0)
        #expect(live.title == "todo 1" && live.priority == 7)

        // Inserted again with another title: it comes back, and the title's readers are told.
        deleted = Fired.tracking { _ = live.isDeleted }
        try store.write { tx in try tx.insert(todo(1, title: "again")) }
        #expect(eventually { !live.isDeleted })
        #expect(deleted.value == 1 && title.value == 1)
        #expect(live.title == "again" && live.priority == 1)
    }

    /// Waits by blocking (deliveries, processes): on an executor of its own, not the pool.
    @Test func aLiveObjectFollowsAnotherProcess() async throws {
        try await onDedicatedExecutor { try aLiveObjectFollowsAnotherProcessBlocking() }
    }

    func aLiveObjectFollowsAnotherProcessBlocking() throws {
        let store = try Store(at: directory.url, types: [Task.self])
        try store.write { tx in
            for id in 1...3 {
                try tx.insert(Task(id: id, title: "task \(id)", rank: id, done: false, group: "p"))
            }
        }
        let live = try LiveObject(Task.self, key: 3, in: store)
        let (title, done) = (Fired.tracking { _ = live.title }, Fired.tracking { _ = live.done })
        let helper = builtTool("lode-test-helper")
        let edit = try shell("'\(helper)' commit-one '\(directory.path)' update 3")
        #expect(edit.out == "committed\n", "\(edit.err)")
        #expect(eventually(30) { live.rank == 103 })
        #expect(live.title == "task 3 (edited)")
        #expect(title.value == 1 && done.value == 0)
        let deleted = Fired.tracking { _ = live.isDeleted }
        #expect(try shell("'\(helper)' commit-one '\(directory.path)' delete 3").status == 0)
        #expect(eventually(30) { live.isDeleted })
        #expect(deleted.value == 1)
    }

    @Test func aLiveObjectOfAMissingKeyIsRefused() throws {
        let store = try Store(at: directory.url, types: [Task.self])
        #expect {
            try LiveObject(Task.self, key: 42, in: store)
        } throws: { error in
            if case .objectNotFound(let type, let key)? = error as? LodeError {
                type == "Task" && key == "42"
            } else {
                false
            }
        }
    }

    /// Waits by blocking (deliveries, processes): on an executor of its own, not the pool.
    @Test func aLiveQueryTellsReadersOfTheCountOnlyWhenItChanges() async throws {
        try await onDedicatedExecutor { try aLiveQueryTellsReadersOfTheCountOnlyWhenItChangesBlocking() }
    }

    func aLiveQueryTellsReadersOfTheCountOnlyWhenItChangesBlocking() throws {
        let store = try Store(at: directory.url, types: [Task.self])
        try store.write { tx in
            for id in 1...3 {
                try tx.insert(Task(id: id, title: "task \(id)", rank: id, done: false, group: "p"))
            }
        }
        let query = store.objects(Task.self).filter(#Predicate { $0.group == "p" }).sorted(by: \.rank)
        let live = try LiveQuery(query)
        #expect(live.elements.map(\.id) == [1, 2, 3] && live.count == 3)

        // A modification: the elements' readers are told, the count's are not.
        var (count, elements) = (Fired.tracking { _ = live.count }, Fired.tracking { _ = live.elements })
        try store.write { tx in try tx.update(Task.self, key: 2) { $0.title = "two" } }
        #expect(eventually { live.elements[1].title == "two" })
        #expect(elements.value == 1 && count.value == 0)
        #expect(live.lastChange?.modifications.map(\.old) == [1])

        // An object outside the query changes nothing; one that joins changes the count.
        elements = Fired.tracking { _ = live.elements }
        try store.write { tx in try tx.insert(Task(id: 10, title: "other", rank: 0, done: false, group: "q"))
        }
        try store.write { tx in try tx.insert(Task(id: 4, title: "four", rank: 0, done: false, group: "p")) }
        #expect(eventually { live.count == 4 })
        #expect(count.value == 1 && elements.value == 1)
        #expect(live.elements.map(\.id) == [4, 1, 2, 3])
        #expect(live.lastChange?.insertions == [0])

        // Another process's insert arrives too.
        count = Fired.tracking { _ = live.count }
        let helper = builtTool("lode-test-helper")
        #expect(try shell("'\(helper)' commit-one '\(directory.path)' insert 5").status == 0)
        #expect(eventually(30) { live.count == 5 })
        #expect(count.value == 1)
    }

    /// Waits by blocking (deliveries, processes): on an executor of its own, not the pool.
    @Test func aLiveQueryOfSomePropertiesIsNotToldOfOthers() async throws {
        try await onDedicatedExecutor { try aLiveQueryOfSomePropertiesIsNotToldOfOthersBlocking() }
    }

    func aLiveQueryOfSomePropertiesIsNotToldOfOthersBlocking() throws {
        let store = try Store(at: directory.url, types: [Task.self])
        try store.write { tx in
            for id in 1...3 {
                try tx.insert(Task(id: id, title: "task \(id)", rank: id, done: false, group: "p"))
            }
        }
        let live = try LiveQuery(store.objects(Task.self).sorted(by: \.id), keyPaths: [\.title])
        let elements = Fired.tracking { _ = live.elements }
        // `done` is not observed: no change; then a title is, and it arrives alone.
        try store.write { tx in try tx.update(Task.self, key: 1) { $0.done = true } }
        try store.write { tx in try tx.update(Task.self, key: 3) { $0.title = "three" } }
        #expect(eventually { live.elements[2].title == "three" })
        #expect(elements.value == 1)
        #expect(live.lastChange?.modifications.map(\.old) == [2])
    }
}

extension LiveObservationTests {
    /// The *Following the store* article's Observation example, as written.
    /// Waits by blocking (deliveries, processes): on an executor of its own, not the pool.
    @Test func theArticlesObservationExample() async throws {
        try await onDedicatedExecutor { try theArticlesObservationExampleBlocking() }
    }

    func theArticlesObservationExampleBlocking() throws {
        let store = try Store(at: directory.url, types: [Todo.self])
        let (first, second) = (todo(1), todo(2))
        let id = first.id
        try store.write { tx in
            try tx.insert(first)
            try tx.insert(second)
        }
        let told = Locked(0)

        let todo = try LiveObject(Todo.self, key: id, in: store)
        let all = try LiveQuery(store.objects(Todo.self).sorted(by: \.priority))
        withObservationTracking {
            _ = todo.title  // this object's title, nothing else of it
            _ = all.count  // how many todos there are
        } onChange: {
            told.withLock { $0 += 1 }
        }
        try store.write { tx in try tx.update(Todo.self, key: id, \.priority) { $0 += 1 } }  // not told
        try store.write { tx in try tx.update(Todo.self, key: id, \.title) { $0 = "Renamed" } }  // told

        #expect(eventually { todo.title == "Renamed" })
        #expect(todo.priority == 2)
        #expect(told.withLock { $0 } == 1)
    }
}
