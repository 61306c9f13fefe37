import Foundation
import Testing

@testable import LodeSync

/// `lode-sync run`'s status output: a download's progress rewritten in place on a terminal, a line
/// at most each second in a log, and the other changes one line each.
@Suite struct StatusOutputTests {
    final class Captured: @unchecked Sendable {
        var text = ""
    }

    func status(applied: Int?, total: Int = 1000) -> SyncStatus {
        var status = SyncStatus()
        status.isConnected = true
        status.download = applied.map { SyncStatus.DownloadProgress(applied: $0, total: total) }
        return status
    }

    @Test func onATerminalTheProgressLineIsRewrittenInPlace() {
        let captured = Captured()
        var output = StatusOutput(terminal: true) { captured.text += $0 }
        let start = ContinuousClock.now
        output.show(status(applied: 0), final: false, now: start)
        output.show(status(applied: 100), final: false, now: start + .milliseconds(50))  // too soon
        output.show(status(applied: 200), final: false, now: start + .milliseconds(150))
        output.show(status(applied: nil), final: false, now: start + .milliseconds(300))
        #expect(
            captured.text
                == "\r"
                + "connected · pending uploads 0 · server version 0 · downloading 0 of 1000 rows (0%)\u{1B}[K"
                + "\r"
                + "connected · pending uploads 0 · server version 0 · downloading 200 of 1000 rows (20%)\u{1B}[K"
                + "\r" + "connected · pending uploads 0 · server version 0\u{1B}[K\n")
    }

    @Test func inALogTheProgressIsALineEachSecond() {
        let captured = Captured()
        var output = StatusOutput(terminal: false) { captured.text += $0 }
        let start = ContinuousClock.now
        for step in 0..<25 {
            output.show(status(applied: step * 40), final: false, now: start + .milliseconds(step * 100))
        }
        output.show(status(applied: nil), final: false, now: start + .seconds(3))
        output.show(status(applied: nil), final: false, now: start + .seconds(4))  // unchanged: nothing
        let lines = captured.text.split(separator: "\n")
        #expect(
            lines == [
                "connected · pending uploads 0 · server version 0 · downloading 0 of 1000 rows (0%)",
                "connected · pending uploads 0 · server version 0 · downloading 400 of 1000 rows (40%)",
                "connected · pending uploads 0 · server version 0 · downloading 800 of 1000 rows (80%)",
                "connected · pending uploads 0 · server version 0",
            ])
    }
}
