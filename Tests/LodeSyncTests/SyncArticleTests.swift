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
@testable import LodeSync
@testable import LodeTestModels
@testable import LodeTestSupport

/// The worked example of the *Beyond one machine* article and the README's section, run: each block
/// of the article is a paragraph of this file (`DocumentationExamplesTests` checks it).
enum SyncArticle {
    struct Chore: Persistable, Equatable {
        var id: UUID
        var title: String
        var owner: String
        var done = false
        static let schema = Schema<Chore>(primaryKey: \.id, indexes: [.on(\.owner)])
    }

    /// Runs the example with two stores (a phone and a laptop) on the server of `connectionString`;
    /// `show` receives the laptop's list at each change; returns what the example printed.
    static func run(
        connectionString: String, phonePath: URL, laptopPath: URL,
        show: @escaping @Sendable ([Chore]?) -> Void
    ) throws -> [String] {
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }
        let phone = try Store(at: phonePath, types: [Chore.self])
        let laptop = try Store(at: laptopPath, types: [Chore.self])

        let server = SyncServer(connectionString: connectionString)  // libpq's: "host=… dbname=… passfile=…"
        try server.setUp(for: [Chore.self])  // once; idempotent

        let phoneSync = try SyncClient(
            store: phone, server: server,
            types: [.type(Chore.self, filter: .field("owner", equals: "ann"))])
        phoneSync.start()

        let laptopSync = try SyncClient(store: laptop, server: server, types: [.type(Chore.self)])
        laptopSync.start()
        let token = laptop.objects(Chore.self).sorted(by: \.title).observe { change in
            if case .update(let results, _) = change { show(try? results.fetch()) }
        }

        let water = Chore(id: UUID(), title: "Water the plants", owner: "ann")
        try phone.write { tx in try tx.insert(water) }
        try phoneSync.synchronize()  // returns once the server has it
        try laptopSync.synchronize()  // and the laptop too

        try laptop.write { tx in
            try tx.update(Chore.self, key: water.id) { $0.owner = "bob" }
        }
        try laptopSync.synchronize()
        try phoneSync.synchronize()
        print("phone:", try phone.read { try $0.objects(Chore.self).fetch().count })  // 0: not ann's any more

        token.cancel()
        phoneSync.stop()
        laptopSync.stop()
        return printed
    }
}

@Suite struct SyncArticleTests {
    @Test func theArticleExampleRunsAsWritten() throws {
        let tmp = TemporaryDirectory("sync-article")
        let shown = Mutex<[[String]]>([])
        let printed = try SyncArticle.run(
            connectionString: try testCluster().makeDatabase(),
            phonePath: tmp.url.appendingPathComponent("phone"),
            laptopPath: tmp.url.appendingPathComponent("laptop"),
            show: { chores in shown.withLock { $0.append(chores?.map { "\($0.title) (\($0.owner))" } ?? []) }
            })
        #expect(printed == ["phone: 0"])
        // The laptop's live result saw the chore arrive from the phone, then its own change.
        try eventually("the laptop's list shows both versions") {
            shown.withLock { $0 }.suffix(2) == [["Water the plants (ann)"], ["Water the plants (bob)"]]
        }
    }
}
