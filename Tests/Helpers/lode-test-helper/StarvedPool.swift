import Dispatch
import Foundation
import Lode
import LodeTestSupport
import ModelStorage

/// `starved-pool DIR`: an app that holds every thread of Swift's cooperative pool in blocking waits
/// must still receive Lode's deliveries on queues — `observe` on its own queue and on the app's, a
/// sectioned observation, a live group, a live-results storage — and an async consumer of `changes`
/// whose task runs on an executor of its own, and its async reads and writes. Prints one line per
/// delivery kind, then "ok"; exits 1 when something did not arrive within 10 s, 3 when the pool could
/// not be filled.
func starvedPool(_ path: String) throws {
    let store = try Store(at: URL(fileURLWithPath: path), types: [Task.self])
    try store.write { try $0.insert(Task(id: 0, title: "first", rank: 0, done: false, group: "g")) }

    // Fill the pool: more blocked tasks than it can have threads. Each started one holds a thread.
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let blockers = cores * 4
    let release = DispatchSemaphore(value: 0)
    let blocked = Locked(0)
    for _ in 0..<blockers {
        _Concurrency.Task.detached { holdPoolThread(counting: blocked, until: release) }
    }
    let filled = Date().addingTimeInterval(10)
    while blocked.withLock({ $0 }) < cores, Date() < filled { usleep(1_000) }
    usleep(300_000)  // would a thread more start? Then the pool was not full.
    let holding = blocked.withLock({ $0 })
    guard holding >= cores, holding < blockers else {
        print("could not fill the pool: \(holding) of \(blockers) blocking tasks started on \(cores) cores")
        exit(3)
    }
    print("pool full: \(holding) of \(blockers) blocking tasks hold its threads")

    let query = store.objects(Task.self).sorted(by: \.rank)
    let arrivals = Locked<[String: Int]>([:])
    let arrived = DispatchSemaphore(value: 0)
    let note: @Sendable (String) -> Void = { kind in
        arrivals.withLock { $0[kind, default: 0] += 1 }
        arrived.signal()
    }
    var tokens: [ObservationToken] = []
    tokens.append(query.observe { if case .error = $0 { return } else { note("observe") } })
    tokens.append(
        query.observe(on: DispatchQueue(label: "app queue")) {
            if case .error = $0 { return } else { note("observe on the app's queue") }
        })
    tokens.append(
        query.sectioned(by: \.group).observe { if case .error = $0 { return } else { note("sectioned") } })
    let group = LiveGroup(store: store)
    group.add(try query.live())
    tokens.append(group.observe { if case .update = $0 { note("live group") } })
    let storage = LiveResultsStorage(store: store, queue: DispatchQueue(label: "storage"))
    let delegate = CountingDelegate { note("live-results storage") }
    storage.delegate = delegate
    try storage.addSection(with: query)
    let consumer = _Concurrency.Task(executorPreference: DedicatedExecutor("changes")) {
        for await change in query.changes {
            if case .error = change { continue }
            note("changes on an executor of its own")
        }
    }
    let asyncCalls = _Concurrency.Task(executorPreference: DedicatedExecutor("async calls")) {
        let count = try await store.read { try $0.objects(Task.self).count }
        note("async read (\(count))")
        try await store.write { try $0.upsert(Task(id: 1, title: "async", rank: 1, done: false, group: "g")) }
        note("async write")
    }

    // Each kind's initial delivery (the group and the storage have none: they start at the version
    // they were made at), the async read and write, then one update each for a commit of this thread.
    func waitFor(_ count: Int, _ what: String) -> Bool {
        let deadline = DispatchTime.now() + 10
        for _ in 0..<count where arrived.wait(timeout: deadline) == .timedOut {
            print("\(what): not delivered within 10 s; arrived: \(arrivals.withLock { $0 })")
            return false
        }
        return true
    }
    guard waitFor(6, "initial deliveries, the async read and write") else { exit(1) }
    _ = try store.write { try $0.insert(Task(id: 2, title: "second", rank: 2, done: false, group: "g")) }
    let expected = [
        "observe", "observe on the app's queue", "sectioned", "live group", "live-results storage",
        "changes on an executor of its own",
    ]
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
        let counts = arrivals.withLock { $0 }
        if expected.allSatisfy({ kind in counts[kind, default: 0] >= (kind.hasPrefix("live") ? 1 : 2) }) {
            break
        }
        usleep(5_000)
    }
    let counts = arrivals.withLock { $0 }
    for kind in counts.keys.sorted() { print("\(kind): \(counts[kind]!)") }
    let missing = expected.filter { counts[$0, default: 0] < ($0.hasPrefix("live") ? 1 : 2) }
    guard missing.isEmpty else {
        print("no update for a commit: \(missing)")
        exit(1)
    }
    guard blocked.withLock({ $0 }) == holding else {
        print("the pool grew while the checks ran: the checks did not run on a full pool")
        exit(3)
    }
    consumer.cancel()
    asyncCalls.cancel()
    for _ in 0..<blockers { release.signal() }
    withExtendedLifetime((tokens, storage, delegate)) {}
    print("ok")
}

/// Blocks the calling thread (a pool thread: it is called from a task) until `release` is signalled.
private func holdPoolThread(counting blocked: Locked<Int>, until release: DispatchSemaphore) {
    blocked.withLock { $0 += 1 }
    release.wait()
}

/// Calls `updated` for every storage update.
private final class CountingDelegate: StorageUpdating, Sendable {
    let updated: @Sendable () -> Void
    init(_ updated: @escaping @Sendable () -> Void) { self.updated = updated }
    func storageDidPerformUpdate(_ update: StorageUpdate) { updated() }
    func storageNeedsReloading() { updated() }
}
