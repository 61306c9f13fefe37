import Foundation
import LodeCodec
import Testing

@testable import LodeLive
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

/// The events one observation receives, in order.
final class ObjectEvents<T: Persistable>: @unchecked Sendable {
    // @unchecked: `events` is guarded by `lock`.
    private let lock = NSLock()
    private var events: [ObjectEvent<T>] = []

    func append(_ event: ObjectEvent<T>) { lock.withLock { events.append(event) } }
    var all: [ObjectEvent<T>] { lock.withLock { events } }

    /// The events, once there are `count` of them (or what there is after ten seconds), waited for
    /// without blocking a thread.
    func wait(for count: Int) async -> [ObjectEvent<T>] {
        // Returns as soon as they are there; the deadline is for a loaded machine (the full suite
        // beside it once took more than 10 s to deliver another process's third commit).
        _ = await eventually(30) { all.count >= count }
        return all
    }
}

/// Observing one object of a generated model: which properties a commit changed, with their values
/// before and after, insertion and deletion — from this process and from another. The tests wait on
/// executors of their own (deliveries come on dispatch queues; the waits must not hold the pool).
@Suite struct ObjectObservationTests {
    let directory = TemporaryDirectory("object")

    func todo(_ n: Int) -> Todo {
        Todo(
            id: UUID(uuid: (UInt8(n), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9)), title: "todo \(n)",
            status: .open, priority: n, due: nil)
    }

    @Test func propertiesThatChangedArriveWithTheirValues() async throws {
        try await onDedicatedExecutor { try await propertiesThatChangedArrive() }
    }

    func propertiesThatChangedArrive() async throws {
        let store = try Store(at: directory.url, types: [Todo.self])
        let (watched, other) = (todo(1), todo(2))
        try await store.write { tx in
            try tx.insert(watched)
            try tx.insert(other)
        }
        let events = ObjectEvents<Todo>()
        let token = try store.observe(Todo.self, key: watched.id) { events.append($0) }
        defer { token.cancel() }
        #expect(await events.wait(for: 1).count == 1)
        guard case .initial(let first)? = events.all.first else {
            Issue.record("no initial event")
            return
        }
        #expect(first == watched)
        try await store.write { tx in try tx.update(Todo.self, key: watched.id, \.priority) { $0 = 7 } }
        // Another object's commit delivers nothing for this one.
        try await store.write { tx in try tx.update(Todo.self, key: other.id) { $0.priority = 99 } }
        try await store.write { tx in
            try tx.update(Todo.self, key: watched.id) {
                $0.title = "renamed"
                $0.tags = ["a"]
                $0.due = Date(timeIntervalSince1970: 5)
            }
        }
        try await store.write { tx in _ = try tx.delete(Todo.self, key: watched.id) }
        try await store.write { tx in try tx.insert(watched) }
        let all = await events.wait(for: 5)
        #expect(all.count == 5, "\(all)")
        guard all.count == 5 else { return }
        if case .changed(let object, let properties) = all[1] {
            #expect(object.priority == 7)
            #expect(properties.map(\.name) == ["priority"])
            #expect(properties.first?.oldValue as? Int == 1 && properties.first?.newValue as? Int == 7)
            #expect(properties.first?.keyPath == \Todo.priority)
        } else {
            Issue.record("expected a change, got \(all[1])")
        }
        if case .changed(let object, let properties) = all[2] {
            #expect(object.title == "renamed")
            #expect(properties.map(\.name) == ["title", "due", "tags"])
            #expect(
                properties[0].oldValue as? String == "todo 1"
                    && properties[0].newValue as? String == "renamed")
            #expect(properties[1].oldValue as? Date? == .some(nil))
            #expect(properties[1].newValue as? Date? == Date(timeIntervalSince1970: 5))
        } else {
            Issue.record("expected a change, got \(all[2])")
        }
        if case .deleted(let last) = all[3] {
            #expect(last.title == "renamed" && last.priority == 7)
        } else {
            Issue.record("expected a deletion, got \(all[3])")
        }
        if case .inserted(let object) = all[4] {
            #expect(object == watched)
        } else {
            Issue.record("expected an insertion, got \(all[4])")
        }
    }

    /// The *Following the store* article's example.
    @Test func theArticlesExample() async throws {
        try await onDedicatedExecutor { try await articlesExample() }
    }

    func articlesExample() async throws {
        let store = try Store(at: directory.url, types: [Todo.self])
        let id = todo(3).id
        try await store.write { tx in try tx.insert(todo(3)) }
        let names = Locked<[String]>([])
        let token = try store.observe(Todo.self, key: id) { event in
            if case .changed(_, let properties) = event {
                names.withLock { $0 += properties.map(\.name) }  // ["priority"]
            }
        }
        try await store.write { tx in try tx.update(Todo.self, key: id, \.priority) { $0 += 1 } }
        #expect(await eventually { names.withLock { $0 } == ["priority"] })
        token.cancel()
    }

    /// Another process — whose `Task` is a hand-written `Codable` type with the same schema — edits
    /// the task: the observer here sees the two properties it changed.
    @Test func aCommitOfAnotherProcessArrives() async throws {
        try await onDedicatedExecutor { try await commitOfAnotherProcess() }
    }

    func commitOfAnotherProcess() async throws {
        let store = try Store(at: directory.url, types: [Task.self])
        try await store.write { tx in
            for id in 1...3 {
                try tx.insert(Task(id: id, title: "task \(id)", rank: id, done: false, group: "p"))
            }
        }
        let events = ObjectEvents<Task>()
        let token = try store.observe(Task.self, key: 3) { events.append($0) }
        defer { token.cancel() }
        #expect(await events.wait(for: 1).count == 1)
        let edit = try shell("'\(builtTool("lode-test-helper"))' commit-one '\(directory.path)' update 3")
        #expect(edit.out == "committed\n", "\(edit.err)")
        let other = try shell("'\(builtTool("lode-test-helper"))' commit-one '\(directory.path)' update 2")
        #expect(other.status == 0)
        let removal = try shell("'\(builtTool("lode-test-helper"))' commit-one '\(directory.path)' delete 3")
        #expect(removal.status == 0)
        let all = await events.wait(for: 3)
        #expect(all.count == 3, "\(all)")
        guard all.count == 3 else { return }
        if case .changed(let task, let properties) = all[1] {
            #expect(task.title == "task 3 (edited)" && task.rank == 103)
            #expect(properties.map(\.name) == ["title", "rank"])
            #expect(properties[1].oldValue as? Int == 3 && properties[1].newValue as? Int == 103)
        } else {
            Issue.record("expected a change, got \(all[1])")
        }
        if case .deleted(let last) = all[2] {
            #expect(last.rank == 103)
        } else {
            Issue.record("expected a deletion, got \(all[2])")
        }
    }
}

extension ObjectObservationTests {
    /// A dictionary of `count` entries holding the same values as every other one, built in a table
    /// of `capacity`: its iteration order (the order it is encoded in) depends on the table.
    static func readings(_ count: Int, capacity: Int) -> [String: Int] {
        var result = [String: Int](minimumCapacity: capacity)
        for n in 0..<count { result["sensor \(n)"] = n }
        return result
    }

    /// Properties whose values are equal are not reported, though their stored bytes differ: a
    /// property with an initial value that an older record lacked, dictionaries and sets in another
    /// order; a rewrite that changes no value delivers nothing.
    @Test func onlyPropertiesWhoseValuesChangedAreReported() async throws {
        try await onDedicatedExecutor { try await onlyChangedValuesAreReported() }
    }

    func onlyChangedValuesAreReported() async throws {
        let store = try Store(at: directory.url, types: [Gauge.self])
        // Two equal dictionaries and sets whose encodings differ (their tables are of other sizes).
        let (small, large) = (Self.readings(12, capacity: 12), Self.readings(12, capacity: 400))
        func labels(capacity: Int) -> Set<String> {
            var labels = Set<String>(minimumCapacity: capacity)
            for label in ["a", "b", "c", "d", "e", "f", "g"] { labels.insert(label) }
            return labels
        }
        let (fewLabels, manyLabels) = (labels(capacity: 4), labels(capacity: 300))
        let offsets = Self.readings(12, capacity: 12).mapValues(Double.init)
        let moreOffsets = Self.readings(12, capacity: 400).mapValues(Double.init)
        #expect(try CBOREncoder().encode(small) != CBOREncoder().encode(large), "the test needs two orders")
        #expect(try CBOREncoder().encode(fewLabels) != CBOREncoder().encode(manyLabels))
        #expect(try CBOREncoder().encode(offsets) != CBOREncoder().encode(moreOffsets))
        // A record an older version wrote: no weight, no calibration (they read their defaults).
        let old = CBORValue.map([
            .init(key: .text("id"), value: .unsigned(1)),
            .init(key: .text("readings"), value: try CBORValue(decoding: CBOREncoder().encode(small))),
            .init(key: .text("labels"), value: try CBORValue(decoding: CBOREncoder().encode(fewLabels))),
        ]).encoded
        try await store.write { tx in
            try tx.insert(Gauge(id: 1, readings: small, labels: fewLabels))
            let records = try tx.lmdbWrite.database(named: "Gauge", create: false)
            try tx.lmdbWrite.put(old, forKey: try KeyEncoder().encode(1), in: records)
        }
        let events = ObjectEvents<Gauge>()
        let token = try store.observe(Gauge.self, key: 1) { events.append($0) }
        defer { token.cancel() }
        #expect(await events.wait(for: 1).count == 1)
        // Deliveries coalesce the commits that arrive while one is pending, so each step waits for its
        // event before the next commit; a commit that changes no value goes with a marker commit
        // (of `weight`), whose event must name the marker's property alone, coalesced or not.
        func expectNext(
            _ names: [String], count: Int, sourceLocation: SourceLocation = #_sourceLocation
        ) async {
            let all = await events.wait(for: count)
            #expect(all.count == count, "\(all)", sourceLocation: sourceLocation)
            guard all.count == count, case .changed(_, let properties) = all[count - 1] else {
                Issue.record("expected a change, got \(all.last as Any)", sourceLocation: sourceLocation)
                return
            }
            #expect(properties.map(\.name) == names, sourceLocation: sourceLocation)
        }
        // A whole update that changes the note: the stored weight and calibration are new bytes, the
        // same values.
        try await store.write { tx in try tx.update(Gauge.self, key: 1) { $0.note = "checked" } }
        await expectNext(["note"], count: 2)
        // The same readings and labels in other orders: no value changed.
        try await store.write { tx in
            try tx.update(Gauge.self, key: 1) {
                $0.readings = large
                $0.labels = manyLabels
            }
        }
        try await store.write { tx in try tx.update(Gauge.self, key: 1) { $0.weight = 11 } }
        await expectNext(["weight"], count: 3)
        // A calibration, then the same one in another order.
        try await store.write { tx in
            try tx.update(Gauge.self, key: 1) { $0.calibration = Calibration(offsets: offsets) }
        }
        await expectNext(["calibration"], count: 4)
        try await store.write { tx in
            try tx.update(Gauge.self, key: 1) { $0.calibration = Calibration(offsets: moreOffsets) }
        }
        try await store.write { tx in try tx.update(Gauge.self, key: 1) { $0.weight = 12 } }
        await expectNext(["weight"], count: 5)
        // A real change of each.
        try await store.write { tx in
            try tx.update(Gauge.self, key: 1) {
                $0.readings["sensor 3"] = 300
                $0.labels.insert("z")
                $0.calibration.offsets["sensor 0"] = 0.5
            }
        }
        await expectNext(["readings", "labels", "calibration"], count: 6)
    }
}
