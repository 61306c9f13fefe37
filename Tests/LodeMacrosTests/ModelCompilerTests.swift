import Foundation
import Testing

@testable import LodeTestSupport

/// What the compiler says of a model the macro cannot see is wrong (a property of a type that is not
/// `Codable`): each source is type-checked by `swiftc` with the package's built modules and the
/// plug-in, as an app's build would.
@Suite struct ModelCompilerTests {
    let directory = TemporaryDirectory("model-compiler")

    /// The errors `swiftc -typecheck` reports for `source` (the first line of each).
    func errors(_ source: String) throws -> [String] {
        let file = directory.url.appendingPathComponent("Model.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let products = URL(fileURLWithPath: builtTool("")).path
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let command = [
            "swiftc", "-typecheck", "'\(file.path)'", "-I", "'\(products)/Modules'",
            "-load-plugin-executable",
            "'\(products)/LodeMacrosPlugin-tool#LodeMacrosPlugin'",
            "-Xcc", "-fmodule-map-file='\(root)/Sources/CLMDB/module.modulemap'",
            "-Xcc", "-fmodule-map-file='\(root)/Sources/CSodium/module.modulemap'",
        ].joined(separator: " ")
        let result = try shell(command)
        let lines = (result.out + result.err).split(separator: "\n").map(String.init)
        return lines.filter { !$0.hasPrefix(" ") && $0.contains("error:") }.map {
            String($0[$0.range(of: "error: ")!.upperBound...])
        }
    }

    /// Waits by blocking (deliveries, processes): on an executor of its own, not the pool.
    @Test func aPropertyThatIsNotCodableIsNamedWithWhatItTakes() async throws {
        try await onDedicatedExecutor { try aPropertyThatIsNotCodableIsNamedWithWhatItTakesBlocking() }
    }

    func aPropertyThatIsNotCodableIsNamedWithWhatItTakesBlocking() throws {
        let found = try errors(
            """
            import Foundation
            import Lode
            import LodeMacros

            struct Outline { var points: [Double] }

            @Model
            struct Shape {
                var id: Int
                var outline: Outline
            }
            """)
        #expect(
            found.contains(
                "'lodeStoredOutline' is unavailable: @Model stores 'outline' through Codable, and Outline is not Codable: make Outline Codable, or mark 'outline' @Transient (not stored)"
            ), "\(found)")
        // The codec's calls say what they need instead of "no exact matches".
        #expect(!found.contains { $0.contains("no exact matches") }, "\(found)")
        #expect(found.contains("'decode' is unavailable: a stored property of a @Model type must be Codable"))
    }

    /// Waits by blocking (deliveries, processes): on an executor of its own, not the pool.
    @Test func aWellFormedModelTypeChecksWithoutErrors() async throws {
        try await onDedicatedExecutor { try aWellFormedModelTypeChecksWithoutErrorsBlocking() }
    }

    func aWellFormedModelTypeChecksWithoutErrorsBlocking() throws {
        let found = try errors(
            """
            import Foundation
            import Lode
            import LodeMacros

            struct Outline: Codable { var points: [Double] }

            enum Shapes {
                @Model
                struct Shape {
                    var id: Int
                    var outline: Outline
                    var `default`: Bool = false
                }
            }
            """)
        #expect(found == [])
    }
}
