import Foundation
import Testing

@testable import LodeTestSupport

/// The layering the compiler cannot see: folders inside a target, and the Architecture article's walk
/// through the sources. (Between targets the compiler refuses an upward import itself.)
@Suite struct ArchitectureTests {
    /// The repository, found from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift files of `module` by folder (a file directly in the module's directory is in "").
    static func sources(of module: String) throws -> [String: [(name: String, text: String)]] {
        let directory = root.appendingPathComponent("Sources/\(module)")
        var files: [String: [(String, String)]] = [:]
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let relative = url.path.dropFirst(directory.path.count + 1)
            let folder = relative.contains("/") ? String(relative.prefix { $0 != "/" }) : ""
            files[folder, default: []].append(
                (url.lastPathComponent, try String(contentsOf: url, encoding: .utf8)))
        }
        return files
    }

    /// The names of the types a file declares at its top level.
    static func declaredTypes(in text: String) -> [String] {
        let pattern =
            #"(?m)^(?:(?:public|package|internal|private|fileprivate|final|indirect|open|@\w+(?:\([^)]*\))?)\s+)*"#
            + #"(?:struct|class|enum|protocol|actor|typealias)\s+(\w+)"#
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    /// A file's code without its comments (so a doc comment naming a type is no dependency), and
    /// without names qualified by another module (`LMDB.Transaction` is not the store's `Transaction`).
    static func code(of text: String) -> String {
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard let comment = line.range(of: "//") else { return Substring(line) }
            return line[..<comment.lowerBound]
        }.joined(separator: "\n")
        return uncommented.replacingOccurrences(
            of: #"\b(LMDB|LodeCodec|Foundation|Swift|Glibc)\.\w+"#, with: "", options: .regularExpression)
    }

    /// Which folder of `module` uses which other folder's types, with one example for each edge.
    static func folderGraph(of module: String) throws -> [String: [String: String]] {
        let files = try sources(of: module)
        var owner: [String: String] = [:]
        for (folder, list) in files {
            for file in list {
                for name in declaredTypes(in: file.text) { owner[name] = owner[name] ?? folder }
            }
        }
        var graph: [String: [String: String]] = [:]
        for (folder, list) in files {
            for file in list {
                let words = Set(code(of: file.text).split { !($0.isLetter || $0.isNumber || $0 == "_") })
                for word in words {
                    guard let target = owner[String(word)], target != folder else { continue }
                    graph[folder, default: [:]][target] =
                        graph[folder]?[target] ?? "\(file.name) uses \(word)"
                }
            }
        }
        return graph
    }

    /// A cycle of `graph`, as the folders on it with the use that makes each edge, or nil.
    static func cycle(in graph: [String: [String: String]]) -> [String]? {
        var state: [String: Int] = [:]  // 1: on the path, 2: done
        var path: [String] = []
        func visit(_ node: String) -> [String]? {
            state[node] = 1
            path.append(node)
            for (next, example) in (graph[node] ?? [:]).sorted(by: { $0.key < $1.key }) {
                if state[next] == 1 {
                    let start = path.firstIndex(of: next)!
                    return path[start...].map { $0 } + [next, "(\(example))"]
                }
                if state[next] == nil, let found = visit(next) { return found }
            }
            path.removeLast()
            state[node] = 2
            return nil
        }
        for node in graph.keys.sorted() where state[node] == nil {
            if let found = visit(node) { return found }
        }
        return nil
    }

    @Test(arguments: [
        "LodeCodec", "LodeStore", "LodeText", "LodeQuery", "LodeLive", "LodeStorage", "LodeSync",
        "ModelStorage", "LMDB",
    ])
    func noFolderOfAModuleUsesAFolderThatUsesIt(module: String) throws {
        let graph = try Self.folderGraph(of: module)
        let cycle = Self.cycle(in: graph)
        #expect(cycle == nil, "folders of \(module) in a cycle: \(cycle?.joined(separator: " → ") ?? "")")
    }

    @Test func theCycleFinderFindsACycle() {
        // The check above must be able to fail: a graph with a cycle is reported, one without is not.
        let looped = ["Store": ["Migration": "Store.swift uses Migration"], "Migration": ["Store": "x"]]
        #expect(Self.cycle(in: looped) != nil)
        #expect(Self.cycle(in: ["Store": ["Model": "Store.swift uses Schema"]]) == nil)
        let graph = ["Query": ["Store": "a"], "Store": ["Codec": "b"], "Codec": ["Query": "c"]]
        #expect(Self.cycle(in: graph)?.contains("Codec") == true)
    }

    @Test func theStoreLayerNamesNoMigrationAndNoLayerAbove() throws {
        let graph = try Self.folderGraph(of: "LodeStore")
        #expect(graph["Store"]?["Migration"] == nil, "\(graph["Store"]?["Migration"] ?? "")")
        #expect(graph["Model"]?["Store"] == nil, "\(graph["Model"]?["Store"] ?? "")")
        // Errors name at most the identities of objects (the objects a denied delete names).
        #expect(
            graph["Errors"].map { Set($0.keys) }.map { $0.isSubset(of: ["Identity"]) } ?? true,
            "\(graph["Errors"] ?? [:])")
        #expect(graph["Identity"] == nil, "\(graph["Identity"] ?? [:])")
    }

    /// The store layer's folders, by what they may name: the core (`Store/`: the store, its
    /// transactions and the write path) names only folders below it, which never name the core; the
    /// folders above extend the core's types (indexes, links, history, the catalog, checks, full-text
    /// search, migrations) and the core names none of their types.
    static let belowTheStoreCore: Set<String> = [
        "Identity", "Errors", "Model", "Locks", "Records", "ChangeLog", "Encryption",
    ]
    static let aboveTheStoreCore: Set<String> = [
        "Indexes", "Links", "History", "Catalog", "Integrity", "GroupCommit", "Migration",
    ]

    @Test func theStoreCoreNamesOnlyTheFoldersBelowItAndTheyNeverNameIt() throws {
        let graph = try Self.folderGraph(of: "LodeStore")
        let folders = Set(try Self.sources(of: "LodeStore").keys)
        #expect(
            folders == Self.belowTheStoreCore.union(Self.aboveTheStoreCore).union(["Store"]),
            "every folder of LodeStore is placed below or above the core (and named in the article)")
        for folder in Self.belowTheStoreCore {
            #expect(graph[folder]?["Store"] == nil, "\(folder): \(graph[folder]?["Store"] ?? "")")
            for above in Self.aboveTheStoreCore {
                #expect(graph[folder]?[above] == nil, "\(folder): \(graph[folder]?[above] ?? "")")
            }
        }
        for above in Self.aboveTheStoreCore {
            #expect(graph["Store"]?[above] == nil, "Store: \(graph["Store"]?[above] ?? "")")
        }
        let article = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/Lode/Lode.docc/Architecture.md"),
            encoding: .utf8)
        for folder in folders where !folder.isEmpty {
            #expect(
                article.contains("`\(folder)/`:"),
                "the Architecture article says what LodeStore/\(folder) owns")
        }
    }

    /// No folder of the store layer grows past what a reader takes in at once.
    @Test func noFolderOfTheStoreLayerIsAboveAboutTwoAndAHalfThousandLines() throws {
        for (folder, files) in try Self.sources(of: "LodeStore") {
            let lines = files.reduce(0) {
                $0 + $1.text.split(separator: "\n", omittingEmptySubsequences: false).count
            }
            #expect(lines <= 2_600, "LodeStore/\(folder) has \(lines) lines: split it by concern")
        }
    }

    @Test func everyFileTheArchitectureArticleNamesExists() throws {
        let article = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/Lode/Lode.docc/Architecture.md"),
            encoding: .utf8)
        let regex = try NSRegularExpression(pattern: #"`((?:[A-Za-z0-9_+./-]+/)?[A-Za-z0-9_+-]+\.swift)`"#)
        let named = regex.matches(in: article, range: NSRange(article.startIndex..., in: article)).compactMap
        {
            Range($0.range(at: 1), in: article).map { String(article[$0]) }
        }
        #expect(named.count > 40, "the article walks the write and notification paths file by file")
        let everySwiftFile = try FileManager.default.subpathsOfDirectory(
            atPath: Self.root.appendingPathComponent("Sources").path
        ).filter { $0.hasSuffix(".swift") }
        for name in named {
            if name.contains("/") {
                #expect(
                    FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(name).path),
                    "the Architecture article names \(name), which does not exist")
            } else {
                let matches = everySwiftFile.filter { ($0 as NSString).lastPathComponent == name }
                #expect(!matches.isEmpty, "the Architecture article names \(name), which no source file is")
            }
        }
    }
}
