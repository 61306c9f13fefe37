import Foundation
import Lode
import LodeInspection
import LodeStudio

/// `serve`: Lode Studio on the loopback address — prints the URL with its access token and serves
/// the store's pages (read-only) until Ctrl-C or `seconds` have passed.
func serve(_ path: String, port: UInt16, seconds: Double?) throws {
    // The pages first, read by the check itself: a damaged file is served as its page report only
    // (LMDB would walk a damaged page blindly).
    try requireDirectory(path)
    let pages = try Store.checkPages(atPath: path)
    let server: StudioServer
    do {
        if pages.isClean {
            server = try StudioServer(
                store: try openStore(path), path: path, port: port)
        } else {
            server = try StudioServer(damaged: pages, path: path, port: port)
            FileHandle.standardError.write(
                Data("lode-dump: \(path): data.mdb is damaged; serving its page report only\n".utf8))
        }
    } catch let error as HTTPServerError {
        throw DumpError(description: "\(path): \(error)")
    }
    stopOnInterrupt()
    print("Lode Studio for \(path): open \(server.url)  (loopback only; Ctrl-C stops)")
    fflush(nil)
    let deadline = seconds.map { Date().addingTimeInterval($0) }
    while !stopRequested.load(ordering: .relaxed) {
        if let deadline, Date() >= deadline { break }
        Thread.sleep(forTimeInterval: 0.05)
    }
    server.stop()
    print("stopped")
}
