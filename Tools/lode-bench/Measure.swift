import Foundation

/// One system's timings for a workload.
struct Timing {
    var system: String
    /// Seconds per run.
    var runs: [Double]
    /// Operations per run.
    var operations: Int

    var median: Double { percentile(50) }
    var minimum: Double { runs.min() ?? 0 }
    var maximum: Double { runs.max() ?? 0 }

    /// The run at percentile `p` (nearest rank).
    func percentile(_ p: Double) -> Double {
        guard !runs.isEmpty else { return 0 }
        let sorted = runs.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.min(Swift.max(rank, 0), sorted.count - 1)]
    }
    var opsPerSecond: Double { median > 0 ? Double(operations) / median : 0 }
}

/// A workload's result: Lode first, then its baselines.
struct Figure {
    var workload: String
    var size: Int
    var timings: [Timing]
    /// Extra facts (memory, plan, notes), printed under the table.
    var notes: [String] = []

    /// Lode's ops/s divided by each baseline's (above 1: Lode is faster).
    var ratios: [(String, Double)] {
        guard let lode = timings.first else { return [] }
        return timings.dropFirst().map {
            ($0.system, $0.opsPerSecond > 0 ? lode.opsPerSecond / $0.opsPerSecond : 0)
        }
    }
}

/// One system of a workload for ``alternate(runs:_:)``: an untimed preparation and the timed body.
struct System {
    var name: String
    var prepare: () throws -> Void = {}
    var body: () throws -> Void
}

/// Runs every system `runs` times, taking turns run by run (and starting each round with the next
/// system, so none always runs first): machine drift spreads over all of them. Returns each
/// system's seconds per run, in the order given.
func alternate(runs: Int, _ systems: [System]) throws -> [[Double]] {
    var seconds = Array(repeating: [Double](), count: systems.count)
    let clock = ContinuousClock()
    for round in 0..<runs {
        for offset in 0..<systems.count {
            let index = (round + offset) % systems.count
            try systems[index].prepare()
            let elapsed = try clock.measure { try systems[index].body() }
            seconds[index].append(
                Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
    }
    return seconds
}

/// Runs `body` `runs` times and returns the seconds of each run.
func measure(runs: Int, _ body: () throws -> Void) rethrows -> [Double] {
    try measure(runs: runs, prepare: {}, body: body)
}

/// Runs `body` `runs` times, after an untimed `prepare` each time; returns the seconds of each run.
func measure(runs: Int, prepare: () throws -> Void, body: () throws -> Void) rethrows -> [Double] {
    var seconds: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<runs {
        try prepare()
        let elapsed = try clock.measure { try body() }
        seconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    return seconds
}

/// The bytes this process has caused to be written to storage so far (`write_bytes` in
/// /proc/self/io; 0 where the kernel does not count them).
func writtenBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
        return Int(line.split(separator: " ").last ?? "") ?? 0
    }
    return 0
}

/// The resident set size of this process, in bytes (from /proc/self/statm).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func format(_ seconds: Double) -> String {
    if seconds < 1e-3 { return String(format: "%.1f µs", seconds * 1e6) }
    if seconds < 1 { return String(format: "%.2f ms", seconds * 1e3) }
    return String(format: "%.2f s", seconds)
}

func formatRate(_ rate: Double) -> String {
    if rate >= 1e6 { return String(format: "%.2f M/s", rate / 1e6) }
    if rate >= 1e3 { return String(format: "%.1f k/s", rate / 1e3) }
    return String(format: "%.1f /s", rate)
}

/// A fresh directory under the temporary directory, removed by `cleanUp`.
final class Scratch {
    let url: URL
    init(_ label: String) {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lode-bench-\(label)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A deterministic generator (SplitMix64), so runs are comparable.
struct Generator: RandomNumberGenerator {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
