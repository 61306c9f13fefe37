import Dispatch
import Foundation
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

/// The error a write of these tests throws on purpose.
private struct Refused: Error, Equatable {
    var write: Int
}

/// How long a test waits for writing tasks to start. Long on purpose: under ThreadSanitizer, on two
/// cores, the suites' blocking tests (the stress and cross-process ones) kept the cooperative pool
/// that ran the writing tasks busy for minutes (a `make test-tsan` run timed out at 60 s, a loaded
/// `make test` at 300 s). The writing tasks now run on an executor of their own
/// (`DedicatedExecutor`), which the pool cannot starve; a normal run passes in milliseconds.
private let poolWait = 300.0

/// Holds the store's writer in a write of another thread until `release` is signalled, so that
/// writes queue up behind it and then commit as one group.
private func holdWriter(_ store: Store) async -> DispatchSemaphore {
    let release = DispatchSemaphore(value: 0)
    let holding = Atomic<Bool>(false)
    // A thread of its own: a blocked worker of the global pool would starve other tests' work.
    Thread {
        do {
            try store.write { _ in
                holding.store(true, ordering: .sequentiallyConsistent)
                release.wait()
            }
        } catch {
            Issue.record("the holding write failed: \(error)")
        }
    }.start()
    #expect(await eventually(poolWait) { holding.load(ordering: .sequentiallyConsistent) })
    return release
}

@Suite struct GroupCommitTests {
    let tmp = TemporaryDirectory()
    /// Without flushes: grouping does not depend on them, and the suite runs beside others.
    static let configuration = StoreConfiguration(durability: .noSync)

    /// Writes that arrive while another commits share one commit, and each keeps all-or-nothing
    /// semantics and its own outcome: a closure that throws (or whose insert fails) rolls back
    /// alone, the others commit, indexes included.
    @Test func writesArrivingTogetherShareOneCommitAndKeepTheirOwnOutcome() async throws {
        try await onDedicatedExecutor {
            let store = try Store(at: tmp.url, configuration: Self.configuration, types: [Task.self])
            try await store.write {
                try $0.insert(Task(id: 1000, title: "old", rank: 1000, done: false, group: "x"))
            }
            let release = await holdWriter(store)
            let added = store.groupCommit.addedCount
            let writes = 40
            let outcomes = _Concurrency.Task(executorPreference: DedicatedExecutor("writers")) {
                await withTaskGroup(of: (Int, Result<Int, Error>).self) { group in
                    for write in 0..<writes {
                        group.addTask {
                            let outcome: Result<Int, Error>
                            do {
                                outcome = .success(
                                    try await store.write { tx in
                                        try tx.insert(
                                            Task(id: write, title: "w", rank: write, done: false, group: "g"))
                                        if write % 4 == 3 { throw Refused(write: write) }
                                        if write % 4 == 2 {
                                            // Fails after the insert above: the whole closure rolls back.
                                            try tx.insert(
                                                Task(id: 1000, title: "dup", rank: 0, done: true, group: "g"))
                                        }
                                        return tx.version
                                    })
                            } catch {
                                outcome = .failure(error)
                            }
                            return (write, outcome)
                        }
                    }
                    var outcomes: [Int: Result<Int, Error>] = [:]
                    for await (write, outcome) in group { outcomes[write] = outcome }
                    return outcomes
                }
            }
            // The writes the writer thread took first wait for the holder; the rest queue behind them.
            #expect(await eventually(poolWait) { store.groupCommit.addedCount == added + writes })
            release.signal()
            let results = await outcomes.value

            var versions: [Int: Int] = [:]
            for write in 0..<writes {
                switch (write % 4, results[write]) {
                case (3, .failure(let error as Refused)?): #expect(error == Refused(write: write))
                case (2, .failure(LodeError.duplicateKey)?): break
                case (0, .success(let version)?), (1, .success(let version)?):
                    versions[version, default: 0] += 1
                case (let kind, let outcome):
                    Issue.record("write \(write) (kind \(kind)): \(String(describing: outcome))")
                }
            }
            // At most two commits: the write the writer thread took first, and everything that queued.
            #expect(versions.count <= 2)
            let expected = Set((0..<writes).filter { $0 % 4 < 2 } + [1000])
            #expect(Set(try store.objects(Task.self).fetch().map(\.id)) == expected)
            let byRank = try store.objects(Task.self).filter(#Predicate { $0.rank < 1000 }).fetch().map(\.id)
            #expect(byRank == (0..<writes).filter { $0 % 4 < 2 })
            #expect(try await store.read { try $0.checkIntegrity() }.problems == [])
        }
    }

    /// Random groups of writes that upsert, delete and sometimes throw, some registering a type for
    /// the first time inside a savepoint that then rolls back: after every group the store holds
    /// exactly what the writes that succeeded did, in the order they ran, and an observer's every
    /// update replays on the list mirror.
    @Test(arguments: [1, 2, 3])
    func randomGroupsMatchAModelAndReplayOnTheMirror(seed: UInt64) async throws {
        let store = try Store(at: tmp.url, configuration: Self.configuration, types: [Task.self])
        var random = SeededGenerator(seed: seed)
        let replayer = ListReplayer("observer")
        let started = DispatchSemaphore(value: 0)
        let observed = store.objects(Task.self).sorted(by: \.rank)
        let token = observed.observe { replayer.follow($0, started: started) }
        #expect(await eventually { started.wait(timeout: .now()) == .success })

        enum Operation: Sendable {
            case upsert(id: Int, rank: Int)
            case delete(id: Int)
            case counter(name: String)
        }
        var model: [Int: Int] = [:]  // id → rank
        var counters: Set<String> = []
        for round in 0..<12 {
            let plans: [(operations: [Operation], throws: Bool)] =
                (0..<Int.random(in: 2...12, using: &random)).map { _ in
                    let operations: [Operation] = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                        switch Int.random(in: 0..<10, using: &random) {
                        case 0..<6:
                            return .upsert(
                                id: Int.random(in: 0..<30, using: &random),
                                rank: Int.random(in: 0..<50, using: &random))
                        case 6..<9: return .delete(id: Int.random(in: 0..<30, using: &random))
                        default: return .counter(name: "c\(round)-\(Int.random(in: 0..<3, using: &random))")
                        }
                    }
                    return (operations, Bool.random(using: &random) && Bool.random(using: &random))
                }
            let ran = Locked<[Int]>([])
            let added = store.groupCommit.addedCount
            let release = await holdWriter(store)
            let outcomes = _Concurrency.Task(executorPreference: DedicatedExecutor("writers")) {
                await withTaskGroup(of: (Int, Bool).self) { group in
                    for (position, plan) in plans.enumerated() {
                        group.addTask {
                            do {
                                try await store.write { tx in
                                    ran.withLock { $0.append(position) }
                                    for operation in plan.operations {
                                        switch operation {
                                        case .upsert(let id, let rank):
                                            try tx.upsert(
                                                Task(
                                                    id: id, title: "t", rank: rank, done: rank % 2 == 0,
                                                    group: "g"))
                                        case .delete(let id): _ = try tx.delete(Task.self, key: id)
                                        case .counter(let name):
                                            try tx.upsert(Counter(name: name, value: round))
                                        }
                                    }
                                    if plan.throws { throw Refused(write: position) }
                                }
                                return (position, true)
                            } catch {
                                #expect(error as? Refused == Refused(write: position))
                                return (position, false)
                            }
                        }
                    }
                    var succeeded: Set<Int> = []
                    for await (position, ok) in group where ok { succeeded.insert(position) }
                    return succeeded
                }
            }
            #expect(await eventually(poolWait) { store.groupCommit.addedCount == added + plans.count })
            release.signal()
            let succeeded = await outcomes.value
            #expect(succeeded == Set(plans.indices.filter { !plans[$0].throws }))
            for position in ran.withLock({ $0 }) where succeeded.contains(position) {
                for operation in plans[position].operations {
                    switch operation {
                    case .upsert(let id, let rank): model[id] = rank
                    case .delete(let id): model[id] = nil
                    case .counter(let name): counters.insert(name)
                    }
                }
            }
            let stored = try store.objects(Task.self).fetch()
            #expect(
                Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0.rank) }) == model, "round \(round)")
            #expect(Set(try store.objects(Counter.self).fetch().map(\.name)) == counters, "round \(round)")
            #expect(try await store.read { try $0.checkIntegrity() }.problems == [], "round \(round)")
        }
        let last = try await store.read { $0.version }
        #expect(await eventually { replayer.state.withLock { $0.version } >= last })
        let fresh = try observed.fetch().map(\.id)
        replayer.state.withLock { state in
            #expect(state.failures == [])
            #expect(state.sections == [fresh])
        }
        token.cancel()
    }

    /// Threads get group commit through `groupedWrite`; a thread already inside a write of the store
    /// is refused instead of waiting for itself.
    @Test func threadsJoinGroupsAndANestedGroupedWriteIsRefused() async throws {
        try await onDedicatedExecutor {
            let store = try Store(at: tmp.url, configuration: Self.configuration, types: [Task.self])
            let failures = Locked<[String]>([])
            // The test waits without blocking a thread of the cooperative pool (others' tasks need it).
            let finished = Atomic<Int>(0)
            for thread in 0..<8 {
                Thread {
                    defer { finished.add(1, ordering: .sequentiallyConsistent) }
                    for write in 0..<25 {
                        let id = thread * 100 + write
                        do {
                            let inserted = try store.groupedWrite { tx in
                                try tx.insert(Task(id: id, title: "t", rank: id, done: false, group: "g"))
                                return id
                            }
                            if inserted != id {
                                failures.withLock { $0.append("\(id) returned \(inserted)") }
                            }
                        } catch {
                            failures.withLock { $0.append("\(id): \(error)") }
                        }
                    }
                }.start()
            }
            #expect(await eventually(120) { finished.load(ordering: .sequentiallyConsistent) == 8 })
            #expect(failures.withLock { $0 } == [])
            #expect(try await store.read { try $0.count(Task.self) } == 200)
            let nested = Thread {
                do {
                    try store.write { _ in try store.groupedWrite { _ in 1 } }
                    failures.withLock { $0.append("a nested groupedWrite was not refused") }
                } catch {
                    if !(error is LodeError) { failures.withLock { $0.append("nested: \(error)") } }
                }
                finished.add(1, ordering: .sequentiallyConsistent)
            }
            nested.start()
            #expect(await eventually(poolWait) { finished.load(ordering: .sequentiallyConsistent) == 9 })
            #expect(failures.withLock { $0 } == [])
        }
    }

    /// A savepoint commits into its write or rolls back alone — records, indexes, a type it
    /// registered and the change observers are told about.
    @Test func aSavepointRollsBackAloneAndItsWriteCarriesOn() throws {
        let store = try Store(at: tmp.url, configuration: Self.configuration, types: [Task.self])
        try store.write { try $0.insert(Task(id: 1, title: "a", rank: 1, done: false, group: "x")) }
        let replayer = ListReplayer("observer")
        let started = DispatchSemaphore(value: 0)
        let token = store.objects(Task.self).sorted(by: \.rank).observe {
            replayer.follow($0, started: started)
        }
        #expect(started.wait(timeout: .now() + 10) == .success)
        let version = try store.write { tx in
            try tx.insert(Task(id: 2, title: "b", rank: 2, done: false, group: "x"))
            #expect(throws: Refused.self) {
                try tx.savepoint { tx in
                    try tx.insert(Task(id: 3, title: "c", rank: 0, done: false, group: "y"))
                    _ = try tx.delete(Task.self, key: 1)
                    try tx.insert(Counter(name: "gone", value: 1))
                    throw Refused(write: 0)
                }
            }
            #expect(try tx.count(Task.self) == 2)
            try tx.savepoint { tx in
                try tx.update(Task.self, key: 2) { $0.rank = -1 }
                try tx.savepoint { tx in
                    try tx.insert(Task(id: 4, title: "d", rank: 4, done: true, group: "z"))
                }
            }
            try tx.insert(Counter(name: "kept", value: 2))
            return tx.version
        }
        #expect(try store.objects(Task.self).sorted(by: \.rank).fetch().map(\.id) == [2, 1, 4])
        #expect(try store.objects(Counter.self).fetch().map(\.name) == ["kept"])
        #expect(try store.objects(Task.self).filter(#Predicate { $0.group == "y" }).fetch().isEmpty)
        #expect(try store.read { try $0.checkIntegrity() }.problems == [])
        #expect(eventually { replayer.state.withLock { $0.version } >= version })
        replayer.state.withLock { state in
            #expect(state.failures == [])
            #expect(state.sections == [[2, 1, 4]])
        }
        token.cancel()
    }
}
