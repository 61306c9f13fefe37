import Foundation
import Testing

@testable import LodeTestSupport

/// Every Swift example in the README and in the DocC articles is code a test compiles: each
/// paragraph of an example (blank lines separate them) appears, in order, in one test source file —
/// comments, whitespace and `import` lines aside, since the tests are formatted by `swift format`,
/// the examples align their comments for reading, and a test file has imports of its own.
@Suite struct DocumentationExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The code with `import` lines, `//` comments and all whitespace removed.
    static func normalized<S: StringProtocol>(_ code: S) -> String {
        code.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("import ") { return "" }
            var text = String(line)
            if let comment = text.range(of: "//") { text = String(text[..<comment.lowerBound]) }
            return text.filter { !$0.isWhitespace }
        }.joined()
    }

    /// The Swift blocks of a Markdown file, each with the line it starts on.
    static func examples(in file: URL) throws -> [(line: Int, code: String)] {
        var blocks: [(Int, String)] = []
        var current: [String]?
        var start = 0
        for (number, line) in try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
            .enumerated()
        {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
                start = number + 1
            } else if current != nil, trimmed == "```" {
                blocks.append((start, current!.joined(separator: "\n")))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    static func files(under directory: URL, extension ext: String) -> [URL] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        else {
            return []
        }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == ext }.sorted {
            $0.path < $1.path
        }
    }

    static var documents: [URL] {
        [root.appendingPathComponent("README.md")]
            + files(under: root.appendingPathComponent("Sources"), extension: "md").filter {
                $0.path.contains(".docc/")
            }
    }

    @Test func everyExampleIsCompiledByATest() throws {
        let tests = try Self.files(under: Self.root.appendingPathComponent("Tests"), extension: "swift").map {
            (name: $0.lastPathComponent, code: Self.normalized(try String(contentsOf: $0, encoding: .utf8)))
        }
        var checked = 0
        for document in Self.documents {
            for (line, code) in try Self.examples(in: document) {
                let paragraphs = code.components(separatedBy: "\n\n").map(Self.normalized).filter {
                    !$0.isEmpty
                }
                let found = tests.contains { test in
                    var from = test.code.startIndex
                    for paragraph in paragraphs {
                        guard let range = test.code.range(of: paragraph, range: from..<test.code.endIndex)
                        else {
                            return false
                        }
                        from = range.upperBound
                    }
                    return true
                }
                let place = "\(document.path.dropFirst(Self.root.path.count + 1)):\(line)"
                #expect(found, "the example at \(place) is not in any test: copy it into one, word for word")
                checked += 1
            }
        }
        #expect(checked >= 9)
    }
}
