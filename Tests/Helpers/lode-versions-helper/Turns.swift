// Two versions that rewrite each other's objects, in turns (the two-versions suite's random test):
//   lode-versions-helper turns DIR VERSION SEED OPS — opens the store as VERSION (v1 or v2 through
//     Codable, g1 or g2 through the generated codec) and makes OPS random writes over ids 0..<40:
//     inserts, whole updates, field updates, upserts and deletes of whichever objects are there,
//     whoever wrote them; prints each as "put ID batch=B payload=P" (v1), "put ID batch=B
//     priority=Q" (v2; a field update prints only what it set) or "del ID", and "turn done".
//   lode-versions-helper state DIR VERSION — every object as VERSION reads it, one per line:
//     "ID batch=B payload=P" or "ID batch=B priority=Q".
// Version 1 stores `payload` (with a default, so it reads what version 2 inserts); version 2 drops
// it and adds an indexed `priority` with a default. Each keeps the field it does not know.
import Foundation
import Lode
import LodeMacros
import LodeTestSupport

/// Version 1 of the rewritten item, through `Codable`.
struct TurnItemV1: Persistable {
    var id: Int
    var batch: Int
    var tag: String
    var payload: String
    static let schema = Schema<TurnItemV1>(
        name: "TurnItem", primaryKey: \.id, indexes: [.on(\.batch)], defaults: [.field(\.payload, "")])
}

/// Version 2 of the rewritten item, through `Codable`.
struct TurnItemV2: Persistable {
    var id: Int
    var batch: Int
    var tag: String
    var priority: Int
    static let schema = Schema<TurnItemV2>(
        name: "TurnItem", primaryKey: \.id, indexes: [.on(\.batch), .on(\.priority)], version: 2,
        defaults: [.field(\.priority, 0)])
}

/// Version 1 of the rewritten item, through the generated codec.
@Model(name: "TurnItem")
struct GeneratedTurnItemV1 {
    var id: Int
    @Indexed var batch: Int
    var tag: String
    var payload: String = ""
}

/// Version 2 of the rewritten item, through the generated codec.
@Model(name: "TurnItem", version: 2)
struct GeneratedTurnItemV2 {
    var id: Int
    @Indexed var batch: Int
    var tag: String
    @Indexed var priority: Int = 0
}

/// One version's item as the turns make and print it: `batch` and the field of its own.
protocol TurnItem: Persistable {
    static func make(id: Int, batch: Int, own: Int) -> Self
    var id: Int { get }
    var batch: Int { get set }
    /// The version's own field, as a number (version 1's payload is "p" and the number).
    var own: Int { get set }
    static var ownName: String { get }
}

extension TurnItem {
    func line() -> String {
        "\(id) batch=\(batch) \(Self.ownName)=\(Self.ownName == "payload" ? "p\(own)" : "\(own)")"
    }
}

/// Version 1's item: its own field is `payload`.
protocol PayloadTurnItem: TurnItem {
    init(id: Int, batch: Int, tag: String, payload: String)
    var payload: String { get set }
}

extension PayloadTurnItem {
    static func make(id: Int, batch: Int, own: Int) -> Self {
        .init(id: id, batch: batch, tag: "t\(id)", payload: "p\(own)")
    }
    var own: Int {
        get { Int(payload.dropFirst()) ?? -1 }
        set { payload = "p\(newValue)" }
    }
    static var ownName: String { "payload" }
}

/// Version 2's item: its own field is `priority`.
protocol PriorityTurnItem: TurnItem {
    init(id: Int, batch: Int, tag: String, priority: Int)
    var priority: Int { get set }
}

extension PriorityTurnItem {
    static func make(id: Int, batch: Int, own: Int) -> Self {
        .init(id: id, batch: batch, tag: "t\(id)", priority: own)
    }
    var own: Int {
        get { priority }
        set { priority = newValue }
    }
    static var ownName: String { "priority" }
}

extension TurnItemV1: PayloadTurnItem {}
extension GeneratedTurnItemV1: PayloadTurnItem {}
extension TurnItemV2: PriorityTurnItem {}
extension GeneratedTurnItemV2: PriorityTurnItem {}

/// The item type of a version's name.
func turnType(_ version: String) -> (any TurnItem.Type)? {
    switch version {
    case "v1": TurnItemV1.self
    case "v2": TurnItemV2.self
    case "g1": GeneratedTurnItemV1.self
    case "g2": GeneratedTurnItemV2.self
    default: nil
    }
}

/// `ops` random writes as `T`, each printed once committed.
func runTurn<T: TurnItem>(_ type: T.Type, path: String, seed: UInt64, ops: Int) throws {
    let store = try Store(at: URL(fileURLWithPath: path), types: [T.self])
    var random = SeededGenerator(seed: seed)
    for _ in 0..<ops {
        let id = Int(random.next() % 40)
        let (batch, own) = (Int(random.next() % 5), Int(random.next() % 1000))
        let choice = random.next() % 6
        let printed: String = try store.write { tx in
            let existing = try tx.object(T.self, key: id)
            guard let existing else {
                try tx.insert(T.make(id: id, batch: batch, own: own))
                return "put \(T.make(id: id, batch: batch, own: own).line())"
            }
            switch choice {
            case 0:
                _ = try tx.delete(T.self, key: id)
                return "del \(id)"
            case 1:
                let updated = try tx.update(T.self, key: id) {
                    $0.batch = batch
                    $0.own = own
                }
                return "put \(updated.line())"
            case 2:
                try tx.update(T.self, key: id, \.batch) { $0 = batch }
                return "put \(id) batch=\(batch)"
            case 3:
                var changed = existing
                changed.own = own
                try tx.upsert(changed)
                return "put \(changed.line())"
            default:
                try tx.upsert(T.make(id: id, batch: batch, own: own))
                return "put \(T.make(id: id, batch: batch, own: own).line())"
            }
        }
        print(printed)
    }
    print("turn done")
}

/// Every object as `T` reads it.
func printState<T: TurnItem>(_ type: T.Type, path: String) throws {
    let store = try Store(at: URL(fileURLWithPath: path), types: [T.self])
    try store.read { tx in
        for id in 0..<40 {
            if let object = try tx.object(T.self, key: id) { print(object.line()) }
        }
    }
    let problems = try store.read { try $0.checkIntegrity() }.problems
    for problem in problems { print("problem \(problem)") }
}
