import Foundation

/// A directory under the system temporary directory, removed when the value is released.
public final class TemporaryDirectory: Sendable {
    /// Where the directory is.
    public let url: URL

    /// A new, empty directory whose name starts with `lode-test-LABEL-`.
    public init(_ label: String = "lode") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lode-test-\(label)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Where the directory is, as a path.
    public var path: String { url.path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
