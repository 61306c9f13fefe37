import Foundation
import ModelStorage
import Testing

@testable import LMDB
@testable import LodeCodec
@testable import LodeInspection
@testable import LodeLive
@testable import LodeLiveTestSupport
@testable import LodeQuery
@testable import LodeStore
@testable import LodeTestModels
@testable import LodeTestSupport

// One store through four versions of an app: a key stored by hand becomes a link, the linked
// type is renamed (the link follows it) and the link gets another field name and rule, then the
// link is removed.

private struct ProjectV1: Persistable {
    var id: Int
    var name: String
    static let schema = Schema<ProjectV1>(name: "Project", primaryKey: \.id)
}

private struct TaskV1: Persistable {
    var id: Int
    var title: String
    var projectID: Int?
    static let schema = Schema<TaskV1>(name: "Task", primaryKey: \.id)
}

private struct TaskV2: Persistable {
    var id: Int
    var title: String
    var project: Link<ProjectV1>?
    static let schema = Schema<TaskV2>(
        name: "Task", primaryKey: \.id, links: [.to(\.project, onDelete: .cascade)], version: 2)
}

private struct BoardV3: Persistable {
    var id: Int
    var name: String
    static let schema = Schema<BoardV3>(name: "Board", primaryKey: \.id)
}

private struct TaskV3: Persistable {
    var id: Int
    var title: String
    var board: Link<BoardV3>?
    static let schema = Schema<TaskV3>(
        name: "Task", primaryKey: \.id, links: [.to(\.board, onDelete: .nullify)], version: 3)
}

private struct TaskV4: Persistable {
    var id: Int
    var title: String
    static let schema = Schema<TaskV4>(name: "Task", primaryKey: \.id, version: 4)
}

private enum LinkMigrations {
    static let v2 = Migration("2: tasks link to their project") { context in
        try context.renameField("projectID", to: "project", in: "Task")
    }
    static let v3 = Migration("3: projects are boards") { context in
        try context.renameType("Project", to: "Board")
        try context.renameField("project", to: "board", in: "Task")
    }
    static let v4 = Migration("4: tasks stand alone") { context in
        try context.removeField("board", from: "Task")
    }
}

@Suite struct LinkMigrationTests {
    let tmp = TemporaryDirectory("link-migration")

    @Test func migrationsAddRenameRetargetAndRemoveLinksWithTheirIndexes() throws {
        do {
            let store = try Store(at: tmp.url, types: [ProjectV1.self, TaskV1.self])
            try store.write { tx in
                for id in 1...2 { try tx.insert(ProjectV1(id: id, name: "p\(id)")) }
                for id in 1...4 {
                    try tx.insert(TaskV1(id: id, title: "t\(id)", projectID: id <= 3 ? 1 + id % 2 : nil))
                }
            }
            store.close()
        }
        do {
            // The hand-kept key becomes a link: the registration builds its inverse index.
            let store = try Store(
                at: tmp.url, types: [ProjectV1.self, TaskV2.self], migrations: [LinkMigrations.v2])
            try store.read { (tx: Transaction) throws in
                #expect(
                    try tx.objects(TaskV2.self, linkingTo: try Link<ProjectV1>(key: 2), via: \.project).map(
                        \.id) == [1, 3])
                #expect(try tx.checkIntegrity().problems == [])
            }
            try store.write { tx in _ = try tx.delete(ProjectV1.self, key: 1) }
            #expect(try store.read { try $0.objects(TaskV2.self).fetch().map(\.id) } == [1, 3, 4])
            store.close()
        }
        do {
            // The linked type is renamed: the link follows it, under its new field name and rule.
            let store = try Store(
                at: tmp.url, types: [BoardV3.self, TaskV3.self],
                migrations: [LinkMigrations.v2, LinkMigrations.v3])
            try store.read { (tx: Transaction) throws in
                let type = try tx.storedType(named: "Task")
                #expect(
                    type.links.map { "\($0.field) \($0.targetTypeName) \($0.rule)" } == [
                        "board Board nullify"
                    ])
                #expect(
                    try tx.objects(TaskV3.self, linkingTo: try Link<BoardV3>(key: 2), via: \.board).map(\.id)
                        == [1, 3])
                #expect(try tx.checkIntegrity().problems == [])
            }
            try store.write { tx in _ = try tx.delete(BoardV3.self, key: 2) }
            try store.read { (tx: Transaction) throws in
                #expect(try tx.objects(TaskV3.self).fetch().map { $0.board == nil } == [true, true, true])
            }
            store.close()
        }
        let store = try Store(
            at: tmp.url, types: [BoardV3.self, TaskV4.self],
            migrations: [LinkMigrations.v2, LinkMigrations.v3, LinkMigrations.v4])
        try store.inspect { (tx: Transaction) throws in
            #expect(try tx.storedType(named: "Task").links.isEmpty)
            #expect(try !tx.databaseNames().contains { $0.hasPrefix("Task.@") })
            #expect(try tx.checkIntegrity().problems == [])
        }
    }
}
