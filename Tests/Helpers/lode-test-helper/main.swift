// A second process for Lode's tests: writes to a store while the test process observes it.
// Usage: lode-test-helper write DIR FIRST COUNT — inserts tasks FIRST..<FIRST+COUNT, one commit each,
// then updates and deletes some of them.
import Foundation
import Lode

struct Task: Persistable {
    var id: Int
    var title: String
    var rank: Int
    var done: Bool
    var group: String
    static let schema = Schema<Task>(primaryKey: \.id, indexes: [.on(\.rank), .on(\.done), .on(\.group)])
}

let arguments = CommandLine.arguments
guard arguments.count == 5, arguments[1] == "write", let first = Int(arguments[3]),
    let count = Int(arguments[4])
else {
    FileHandle.standardError.write(Data("usage: lode-test-helper write DIR FIRST COUNT\n".utf8))
    exit(2)
}
do {
    let store = try Store(at: URL(fileURLWithPath: arguments[2]), types: [Task.self])
    for id in first..<(first + count) {
        try store.write { tx in
            try tx.insert(Task(id: id, title: "task \(id)", rank: (id * 7) % 11, done: false, group: "p"))
        }
    }
    try store.write { tx in
        for id in stride(from: first, to: first + count, by: 3) {
            try tx.update(Task.self, key: id) { $0.rank += 20 }
        }
        for id in stride(from: first + 1, to: first + count, by: 4) { try tx.delete(Task.self, key: id) }
    }
    print("done")
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
