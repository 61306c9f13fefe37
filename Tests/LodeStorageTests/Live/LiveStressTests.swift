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
@testable import LodeStorage
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

@Suite struct LiveStressTests {
    let tmp = TemporaryDirectory()

    /// Consumers of every kind, fast and slow, follow thousands of commits from this process and two
    /// others; when the writers stop, each one reaches the store's last version and shows exactly
    /// what a fresh read shows, every update having replayed cleanly on the list mirror.
    @Test func everyConsumerReachesTheLastCommitOfEveryWriter() async throws {
        // The test and its `changes` consumer run on executors of their own: on the cooperative pool
        // they waited behind the suite's synchronous tests (the consumer's task first ran 469 s after
        // it was made, while both pool threads ran power-cut tests) and the deadlines ran out.
        try await onDedicatedExecutor { try await run() }
    }

    private func run() async throws {
        let store = try Store(
            at: tmp.url, configuration: StoreConfiguration(durability: .noSync), types: [Task.self])
        let all = store.objects(Task.self)
        let byRank = all.sorted(by: \.rank)
        let openByRankDown = all.filter(#Predicate { $0.done == false }).sorted(by: \.rank, ascending: false)
        let byTitle = all.sorted(by: \.title)
        let lowRanks = all.filter(#Predicate { $0.rank < 10 }).sorted(by: \.rank)
        let byGroup = byRank.sectioned(by: \.group)
        let byDone = byTitle.sectioned { $0.done ? "done" : "open" }
        let grouped = byRank.sectioned(by: \.done)
        let inP = all.filter(#Predicate { $0.group == "p" }).sorted(by: \.rank)

        var replayers: [(ListReplayer, @Sendable () throws -> [[Int]])] = []
        var tokens: [ObservationToken] = []
        let started = DispatchSemaphore(value: 0)
        var starts = 0

        for (name, query, delay) in [("observe", byRank, 0.0), ("observe slow", openByRankDown, 0.015)] {
            let replayer = ListReplayer(name, delay: delay)
            replayers.append((replayer, { [ids(query.copyingQuery(of: query))] }))
            tokens.append(query.observe { replayer.follow($0, started: started) })
            starts += 1
        }
        for (name, sectioned, delay) in [("sectioned", byGroup, 0.0), ("sectioned slow", byDone, 0.015)] {
            let replayer = ListReplayer(name, delay: delay)
            replayers.append(
                (
                    replayer,
                    {
                        ids(
                            sectioned.reevaluated())
                    }
                ))
            tokens.append(
                sectioned.observe { change in
                    switch change {
                    case .initial(let sections):
                        replayer.initial(ids(sections))
                        started.signal()
                    case .update(let sections, let change):
                        let new = ids(sections)
                        replayer.apply(
                            change.storageUpdate { new[$0.section][$0.item] }, new: new,
                            version: change.toVersion)
                    case .error(let error): replayer.fail("\(error)")
                    }
                })
            starts += 1
        }
        for (name, delay) in [("group", 0.0), ("group slow", 0.015)] {
            let replayer = ListReplayer(name, delay: delay)
            let group = LiveGroup(store: store)
            let plain = try lowRanks.live()
            let sections = try grouped.live()
            group.add(plain)
            group.add(sections)
            // The group's sections: the plain member's one, then the sectioned member's.
            let contents: @Sendable () -> [[Int]] = { [ids(plain.results)] + ids(sections.sections) }
            replayer.initial(contents())
            replayers.append(
                (
                    replayer,
                    {
                        [ids(lowRanks.copyingQuery(of: lowRanks))]
                            + ids(grouped.results.copyingQuery(of: grouped.results).sectioned(by: \.done))
                    }
                ))
            tokens.append(
                group.observe { change in
                    switch change {
                    case .update(let version, let changes):
                        let new = contents()
                        let update = StorageUpdate()
                        for change in changes {
                            switch change {
                            case .results(_, let change):
                                LiveResultsStorage.merge(
                                    change.storageUpdate(), into: update, oldStart: 0, newStart: 0)
                            case .sectioned(_, let change):
                                LiveResultsStorage.merge(
                                    change.storageUpdate(), into: update, oldStart: 1, newStart: 1)
                            }
                        }
                        replayer.apply(update, new: new, version: version)
                    case .error(let error): replayer.fail("\(error)")
                    }
                })
        }
        // The async sequence.
        let asyncReplayer = ListReplayer("changes")
        replayers.append((asyncReplayer, { [ids(byTitle.copyingQuery(of: byTitle))] }))
        let asyncTask = _Concurrency.Task(executorPreference: DedicatedExecutor("changes consumer")) {
            for await change in byTitle.changes { asyncReplayer.follow(change, started: started) }
        }
        starts += 1
        // Storages, with a delegate that replays on the list mirror.
        var storages: [(LiveResultsStorage, DispatchQueue, MirroringStorageDelegate)] = []
        for delay in [0.0, 0.015] {
            let queue = DispatchQueue(label: "storage \(delay)")
            let storage = LiveResultsStorage(store: store, queue: queue)
            let delegate = MirroringStorageDelegate(storage)
            delegate.delay = delay
            storage.delegate = delegate
            try storage.addSection(with: inP)
            try storage.addSections(from: byGroup)
            storages.append((storage, queue, delegate))
        }
        let startedCount = Atomic<Int>(0)
        // A thread of its own: a blocked worker of the global pool can starve other tests' work.
        Thread { [starts] in
            for _ in 0..<starts {
                if started.wait(timeout: .now() + 300) == .success { startedCount.add(1, ordering: .relaxed) }
            }
        }.start()
        // Up to 300 s: under ThreadSanitizer, with the other concurrency suites running beside it on two
        // cores, a consumer can take minutes (the assertions are the same; a normal run takes seconds).
        #expect(await eventually(300) { startedCount.load(ordering: .relaxed) == starts })

        // Writers: two other processes and this one, at the same time.
        let helpers = try (0..<2).map { index -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: builtTool("lode-test-helper"))
            process.arguments = ["write", tmp.path, "\(10_000 * (index + 1))", "400"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return process
        }
        var rng = SeededGenerator(seed: 0x57e55)
        for round in 0..<1500 {
            // Now and then a pause, so deliveries interleave with commits rather than coalesce them all.
            if round % 10 == 0 { try await _Concurrency.Task.sleep(for: .milliseconds(1)) }
            try await store.write { [rngSeed = rng.next()] tx in
                var local = SeededGenerator(seed: rngSeed)
                for _ in 0..<Int.random(in: 1...4, using: &local) {
                    let id = Int.random(in: 0..<300, using: &local)
                    let task = Task(
                        id: id, title: "t\(Int.random(in: 0..<50, using: &local))",
                        rank: Int.random(in: 0..<40, using: &local), done: Bool.random(using: &local),
                        group: ["p", "x", "y"].randomElement(using: &local)!)
                    if Int.random(in: 0..<4, using: &local) == 0 {
                        try tx.delete(Task.self, key: id)
                    } else {
                        try tx.upsert(task)
                    }
                }
            }
        }
        for helper in helpers {
            helper.waitUntilExit()
            #expect(helper.terminationStatus == 0)
        }
        let fromHelpers = try store.objects(Task.self).filter(#Predicate { $0.id >= 10_000 }).fetch().count
        #expect(fromHelpers == 2 * (400 - 100))  // each helper deletes every fourth of its 400
        // The last commit touches every consumer's list.
        let last = try await store.write { tx in
            try tx.insert(Task(id: 1_000_000, title: "", rank: -1, done: false, group: "p"))
            return tx.version
        }
        for (replayer, fresh) in replayers {
            #expect(
                await eventually(300) { replayer.state.withLock { $0.version } == last },
                "\(replayer.name) stopped at v\(replayer.state.withLock { $0.version }), the store is at v\(last)"
            )
            let state = replayer.state.withLock { $0 }
            #expect(state.sections == (try fresh()), "\(replayer.name) differs from a fresh read")
            #expect(state.failures.isEmpty, "\(replayer.name): \(state.failures.prefix(3))")
            #expect(state.updates > 0, "\(replayer.name) received no update")
        }
        let expected =
            try [inP.copyingQuery(of: inP).fetch().map { try ObjectID(Task.self, key: $0.id) }]
            + (byGroup.results.copyingQuery(of: byGroup.results).sectioned(by: \.group).fetchSections()).map {
                try $0.objects.fetch().map { try ObjectID(Task.self, key: $0.id) }
            }
        for (storage, queue, delegate) in storages {
            #expect(
                await eventually(300) {
                    queue.sync { MirroringStorageDelegate.contents(storage) } == expected
                },
                "a storage (delay \(delegate.delay)) never showed the last version")
            queue.sync {
                #expect(delegate.failures.isEmpty, "\(delegate.failures.prefix(3))")
                #expect(delegate.mirror.sections == expected)
            }
        }
        asyncTask.cancel()
        withExtendedLifetime(tokens) {}
    }
}
