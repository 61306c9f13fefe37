import Dispatch
import Foundation
import Lode
import LodeCodec
import LodeInspection
import Synchronization

/// `/api/events`: server-sent events for one browser tab. `commits` carries each batch of commits of
/// any process (from the store's commit feed) with every change; `tick`, once a second, the store's
/// version, file size, used bytes and how far the oldest reader is behind, for the charts (and to keep
/// the connection from going idle); `failure` says why the store can no longer be followed, and ends
/// the stream.
final class StudioEvents: Sendable {
    /// Where the commit feed's handler leaves events for the connection's thread: kept apart from the
    /// stream so the handler holds no reference to it (the stream ends when the browser goes).
    private final class Mailbox: Sendable {
        let events = Mutex<(pending: [UInt8], failed: Bool)>(([], false))
        let arrived = DispatchSemaphore(value: 0)

        func post(_ bytes: [UInt8], failing: Bool = false) {
            events.withLock {
                $0.pending += bytes
                $0.failed = $0.failed || failing
            }
            arrived.signal()
        }
    }

    private let store: Store
    private let path: String
    private let mailbox = Mailbox()
    private let token: ObservationToken
    private let state = Mutex<(nextTick: DispatchTime, ended: Bool)>((.now(), false))
    /// How often a tick is sent.
    static let tickInterval = 1.0

    /// Starts following `store` after its current version.
    init(store: Store, path: String) throws {
        self.store = store
        self.path = path
        let start = try store.read { $0.version }
        let mailbox = self.mailbox
        // The first bytes: how long a browser waits before reconnecting, and where the feed starts.
        mailbox.post(
            Array("retry: 2000\n".utf8) + Self.event("hello", jsonObject(["version": .count(start)])))
        if store.hasChangeLog {
            token = store.observeCommits(after: start) { event in
                switch event {
                case .commits(let batch):
                    let body = jsonObject([
                        "version": .count(batch.version), "complete": .bool(batch.history.isComplete),
                        "commits": .array(batch.history.commits.map(StudioAPI.commit)),
                    ])
                    mailbox.post(Self.event("commits", body))
                case .error(let error):
                    mailbox.post(
                        Self.event("failure", jsonObject(["error": .text("\(error)")])), failing: true)
                }
            }
        } else {
            token = ObservationToken()
            mailbox.post(
                Self.event(
                    "notice",
                    jsonObject(["message": .text("the store has no change log: commits are not followed")]))
            )
        }
    }

    deinit { token.cancel() }

    /// The next bytes of the stream, waiting for a commit or the next tick; nil once it ended.
    func next() -> [UInt8]? {
        while true {
            guard let deadline = state.withLock({ $0.ended ? nil : $0.nextTick }) else { return nil }
            _ = mailbox.arrived.wait(timeout: deadline)
            let (pending, failed) = mailbox.events.withLock { events in
                defer { events.pending = [] }
                return (events.pending, events.failed)
            }
            if failed {
                state.withLock { $0.ended = true }
                return pending
            }
            var bytes = pending
            if DispatchTime.now() >= deadline {
                state.withLock { $0.nextTick = .now() + Self.tickInterval }
                bytes += tick()
            }
            if !bytes.isEmpty { return bytes }
        }
    }

    /// The store's figures now, or a failure event (ending the stream) when they cannot be read.
    private func tick() -> [UInt8] {
        do {
            let fileBytes = try StoreSummary.dataFileBytes(path)
            let info = try store.fileInfo()
            let versions = try store.readers().compactMap(\.version)
            let lag = versions.min().map { info.lastCommittedVersion - $0 }
            return Self.event(
                "tick",
                jsonObject([
                    "time": .float((Date().timeIntervalSince1970 * 1000).rounded()),
                    "version": .count(info.lastCommittedVersion), "fileBytes": .count(fileBytes),
                    "usedBytes": .count(info.usedBytes), "readers": .count(versions.count),
                    "oldestLag": .optional(lag.map(CBORValue.count)),
                ]))
        } catch {
            state.withLock { $0.ended = true }
            return Self.event("failure", jsonObject(["error": .text("\(error)")]))
        }
    }

    /// One event in the `text/event-stream` format (the JSON is one line: it holds no raw newline).
    static func event(_ name: String, _ body: CBORValue) -> [UInt8] {
        Array("event: \(name)\ndata: \(body.json)\n\n".utf8)
    }
}
