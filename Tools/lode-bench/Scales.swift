import Foundation

/// `lode-bench --scales 0.02,0.2,1`: the store workloads whose targets must hold at every scale
/// (issue 63: 20,000, 200,000 and 1,000,000 objects), each run at each scale in one process, then one
/// table of Lode's ratio to the baseline against its target, scale by scale.
enum Scales {
    /// A workload's figure and the ratio it is held to.
    struct Target {
        /// The workload's name (`--only`).
        var workload: String
        /// The start of its figure's title (a workload may print several figures).
        var figure: String
        /// The system Lode is compared with.
        var baseline: String
        /// The ratio to reach: Lode's operations per second over the baseline's.
        var ratio: Double
        /// The row's name in the table.
        var label: String
    }

    static let targets: [Target] = [
        Target(
            workload: "scan-decode", figure: "full scan, every object decoded", baseline: "SQLite",
            ratio: 1.5,
            label: "full scan + decode"),
        Target(
            workload: "projection", figure: "projection: one field", baseline: "SQLite (SELECT name)",
            ratio: 2,
            label: "one field of every object"),
        Target(
            workload: "point-reads", figure: "random point reads", baseline: "SQLite", ratio: 2,
            label: "random point reads"),
        Target(
            workload: "update-10pct", figure: "update 10% of objects", baseline: "SQLite", ratio: 1.2,
            label: "update 10%"),
        Target(
            workload: "bulk-insert", figure: "bulk insert, one index", baseline: "SQLite", ratio: 1.5,
            label: "bulk insert, one index"),
        Target(
            workload: "range-query", figure: "indexed range query", baseline: "SQLite", ratio: 2,
            label: "indexed range 1%"),
        Target(
            workload: "links-inverse", figure: "links: one project's tasks",
            baseline: "SQLite indexed foreign key",
            ratio: 1.5, label: "one project's tasks (inverse link)"),
    ]

    /// The figures of one scale.
    struct Run {
        var scale: Double
        var figures: [Figure]
    }

    /// Runs the chosen workloads (every one of ``targets`` when `only` is nil) at each scale, in the
    /// order given, handing each figure to `report` as it is measured.
    static func run(
        _ scales: [Double], settings: Settings, only: Set<String>?, report: (Figure) -> Void
    ) throws -> [Run] {
        let workloads = Workloads.all + Workloads.namedParts
        var runs: [Run] = []
        for scale in scales {
            var scaled = settings
            scaled.scale = scale
            var figures: [Figure] = []
            for target in targets where only?.contains(target.workload) ?? true {
                guard let run = workloads.first(where: { $0.0 == target.workload })?.1 else {
                    throw BenchError.usage("no workload \(target.workload)")
                }
                for figure in try run(scaled) {
                    report(figure)
                    figures.append(figure)
                }
            }
            runs.append(Run(scale: scale, figures: figures))
        }
        return runs
    }

    /// Lode's ratio to `target`'s baseline in `figures`, if they hold its figure.
    static func ratio(_ target: Target, in figures: [Figure]) -> (ratio: Double, size: Int)? {
        guard let figure = figures.first(where: { $0.workload.hasPrefix(target.figure) }),
            let ratio = figure.ratios.first(where: { $0.0 == target.baseline })?.1
        else { return nil }
        return (ratio, figure.size)
    }

    /// One row per target, one column per scale: the ratio, whether it meets the target, and a bar
    /// of the ratio as a share of the target (full at the target).
    static func printSummary(_ runs: [Run]) {
        print("\n## Ratios to the baseline at each scale, against their targets (issue 63)")
        var header = "workload".padding(toLength: 38, withPad: " ", startingAt: 0)
        for run in runs {
            let objects = Int((1_000_000 * run.scale).rounded())
            header += "\(String(format: "%g", run.scale)) (\(objects))".padding(
                toLength: 24, withPad: " ", startingAt: 0)
        }
        print(header + "target")
        for target in targets {
            let cells = runs.map { ratio(target, in: $0.figures) }
            guard cells.contains(where: { $0 != nil }) else { continue }
            var line = target.label.padding(toLength: 38, withPad: " ", startingAt: 0)
            for cell in cells {
                guard let cell else {
                    line += "—".padding(toLength: 24, withPad: " ", startingAt: 0)
                    continue
                }
                let share = min(cell.ratio / target.ratio, 1)
                let bar = String(repeating: "█", count: Int(share * 8))
                    .padding(toLength: 8, withPad: "·", startingAt: 0)
                line +=
                    (String(format: "%.2f× ", cell.ratio) + bar + (cell.ratio >= target.ratio ? " met" : ""))
                    .padding(toLength: 24, withPad: " ", startingAt: 0)
            }
            print(line + String(format: "≥ %g×", target.ratio))
        }
    }
}
