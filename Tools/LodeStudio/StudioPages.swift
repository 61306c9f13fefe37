import Foundation

/// The pages Lode Studio serves: plain HTML, CSS and a little JavaScript in files of their own
/// (`Resources/`: `page.html` around each page's sections in `pages/NAME.html`, `studio.js`,
/// `studio.css`), served from the package's resources — no build step, nothing fetched from
/// elsewhere. Values from the store reach the page only through `textContent` (a type, field or value
/// is data, never markup).
enum StudioPages {
    /// The pages there are.
    static let names = ["summary", "type", "object", "schema", "changes", "check"]

    /// A file of the resources that could not be read.
    struct MissingResource: Error, CustomStringConvertible {
        /// The file, relative to `Resources/`.
        let file: String
        let reason: String
        var description: String { "Lode Studio's resource \(file) cannot be read: \(reason)" }
    }

    /// Every resource, read once.
    private static let files: Result<[String: String], MissingResource> = {
        guard let root = Bundle.module.url(forResource: "Resources", withExtension: nil) else {
            return .failure(
                MissingResource(file: "Resources", reason: "the package's resource bundle has none"))
        }
        var files: [String: String] = [:]
        for file in ["page.html", "studio.js", "studio.css"] + names.map({ "pages/\($0).html" }) {
            do {
                files[file] = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            } catch {
                return .failure(MissingResource(file: file, reason: "\(error)"))
            }
        }
        return .success(files)
    }()

    /// The resource `file` (relative to `Resources/`).
    ///
    /// - Throws: ``MissingResource`` when the resources were not installed with the tool.
    static func resource(_ file: String) throws(MissingResource) -> String {
        let files = try files.get()
        guard let text = files[file] else { throw MissingResource(file: file, reason: "no such resource") }
        return text
    }

    /// The page named `name` (one of ``names``): the shared header and navigation around the page's
    /// own sections, which the script fills.
    ///
    /// - Throws: ``MissingResource`` when the resources were not installed with the tool.
    static func page(_ name: String) throws(MissingResource) -> String {
        try resource("page.html").replacingOccurrences(of: "{{page}}", with: name)
            .replacingOccurrences(of: "{{sections}}", with: try resource("pages/\(name).html"))
    }
}
