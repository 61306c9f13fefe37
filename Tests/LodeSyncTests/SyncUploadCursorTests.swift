import Foundation
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeStore
@testable import LodeSync
@testable import LodeTestModels
@testable import LodeTestSupport

/// A download's own commits are not read back by the next upload: the upload cursor follows them
/// while nothing local waits, and stays behind a local change that does.
@Suite struct SyncUploadCursorTests {
    let tmp = TemporaryDirectory("sync-cursor")

    @Test func aDownloadIsNotReadBackAsUploadCandidates() throws {
        let server = try syncServer(for: [SyncNote.self])
        try psql(
            server,
            """
            INSERT INTO lode."Note" (key, data)
            SELECT i::text, jsonb_build_object('id', i, 'title', 't' || i, 'owner', 'o', 'rank', i, 'done', false)
            FROM generate_series(1, 300) AS i
            """)
        let store = try Store(
            at: tmp.url.appendingPathComponent("fresh"),
            configuration: StoreConfiguration(durability: .noSync),
            types: [SyncNote.self])
        let sync = try SyncClient(
            store: store, server: server, types: [.type(SyncNote.self)],
            options: SyncOptions(
                pollInterval: .seconds(30), minimumBackoff: .milliseconds(20), downloadChunkSize: 100))
        sync.start()
        defer { sync.stop() }
        try sync.synchronize()
        func uploadCursor() throws -> Int? {
            try store.read { tx in
                try SyncState(store: store, types: ["Note"], create: false).uploadCursor(in: tx.lmdb)
            }
        }
        #expect(try store.read { try $0.count(SyncNote.self) } == 300)
        #expect(try uploadCursor() == store.read { $0.version })
        // A local change waits: the cursor stays before it until it is uploaded.
        sync.stop()
        try store.write { tx in try tx.update(SyncNote.self, key: 1) { $0.title = "mine" } }
        let written = try store.read { $0.version }
        try psql(
            server, #"UPDATE lode."Note" SET data = jsonb_set(data, '{title}', '"theirs"') WHERE key = '2'"#)
        #expect(try uploadCursor()! < written)
        sync.start()
        try sync.synchronize()
        #expect(try psql(server, #"SELECT data->>'title' FROM lode."Note" WHERE key = '1'"#).contains("mine"))
        #expect(try store.read { try $0.object(SyncNote.self, key: 2) }?.title == "theirs")
    }
}
