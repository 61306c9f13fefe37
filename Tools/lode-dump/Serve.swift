import Foundation
import Lode
import LodeStudio

/// `serve`: Lode Studio on the loopback address — prints the URL with its access token and serves
/// the store's pages (read-only) until Ctrl-C or `seconds` have passed.
func serve(_ path: String, port: UInt16, seconds: Double?) throws {
    let store = try openStore(path)
    let server: StudioServer
    do {
        server = try StudioServer(store: store, path: path, port: port)
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
