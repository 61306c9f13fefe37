// lode-bench: measures Lode against raw LMDB (the same bytes), SQLite (the C API, used carefully) and,
// for live results, the naive way (re-query and diff). Usage: lode-bench [--quick] [--scale X |
// --scales X,Y,Z] [--runs N] [--only NAME[,NAME]] [--json] [--list]; with --instructions, instruction
// counts under callgrind instead of times; with --scales, the store workloads at each scale and one
// table of their ratios against issue 63's targets.
import Foundation

var settings = Settings()
var only: Set<String>?
var json = false
var instructions = false
var list = false
var scaleGiven = false
var scales: [Double]?
var arguments = Array(CommandLine.arguments.dropFirst())
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("lode-bench: \(message)\n".utf8))
    exit(2)
}
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--quick":
        settings.quick = true
        settings.runs = 1
    case "--scale":
        guard let value = arguments.first.flatMap(Double.init), value > 0 else {
            fail("--scale needs a positive number")
        }
        settings.scale = value
        scaleGiven = true
        arguments.removeFirst()
    case "--scales":
        let values = arguments.first.map { $0.split(separator: ",").map { Double($0) } } ?? []
        guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 }) else {
            fail("--scales needs positive numbers separated by commas (0.02,0.2,1)")
        }
        scales = values.compactMap { $0 }
        arguments.removeFirst()
    case "--runs":
        guard let value = arguments.first.flatMap(Int.init), value > 0 else {
            fail("--runs needs a positive integer")
        }
        settings.runs = value
        arguments.removeFirst()
    case "--only":
        guard let value = arguments.first else { fail("--only needs workload names") }
        only = Set(value.split(separator: ",").map(String.init))
        arguments.removeFirst()
    case "--json":
        json = true
    case "--instructions":
        instructions = true
    case "--instruction-child":
        // lode-bench --instruction-child WORKLOAD SYSTEM [--scale X]: one count, run by --instructions.
        guard arguments.count >= 2 else { fail("--instruction-child needs a workload and a system") }
        let (workload, system) = (arguments[0], arguments[1])
        arguments.removeFirst(2)
        if arguments.first == "--scale", arguments.count > 1, let value = Double(arguments[1]) {
            settings.scale = value
        }
        do {
            try Instructions.runChild(workload: workload, system: system, settings: settings)
        } catch {
            fail("\(workload) / \(system) failed: \(error)")
        }
        exit(0)
    case "--list":
        list = true
    case "--help", "-h":
        print(
            "usage: lode-bench [--quick] [--scale X | --scales X,Y,Z] [--runs N] [--only NAME[,NAME]] [--json] [--list]\n"
                + "       lode-bench --instructions [--scale X] [--only NAME[,NAME]] [--json] [--list]")
        exit(0)
    default:
        fail("unknown argument \(argument) (see --help)")
    }
}
if scales != nil, instructions || scaleGiven || settings.quick {
    fail("--scales runs the timed workloads at each scale: without --scale, --quick or --instructions")
}
if list {
    // After every argument, so `--list --instructions` and `--instructions --list` agree.
    for name in instructions ? Instructions.all.map(\.name) : Workloads.all.map(\.0) { print(name) }
    if !instructions {
        for (name, _) in Workloads.namedParts {
            print(name + " (a part of \(Workloads.whole(ofPart: name)))")
        }
    }
    exit(0)
}
if instructions {
    let known = Set(Instructions.all.map(\.name))
    if let unknown = only?.subtracting(known).first {
        fail("unknown workload \(unknown) (see --instructions --list)")
    }
    if !scaleGiven { settings.scale = Instructions.defaultScale }
    do {
        let results = try Instructions.run(settings: settings, only: only)
        if json {
            let data = try JSONSerialization.data(
                withJSONObject: Instructions.json(results), options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            for (workload, counts) in results { Instructions.printTable(workload, counts) }
        }
    } catch {
        fail("\(error)")
    }
    exit(0)
}
if let only {
    let known = Set(Workloads.all.map(\.0) + Workloads.namedParts.map(\.0))
    if let unknown = only.subtracting(known).first { fail("unknown workload \(unknown) (see --list)") }
}

if let scales {
    let known = Set(Scales.targets.map(\.workload))
    if let unknown = only?.subtracting(known).first {
        fail("--scales measures \(known.sorted().joined(separator: ", ")), not \(unknown)")
    }
    do {
        let results = try Scales.run(scales, settings: settings, only: only) { figure in
            if !json { printTable(figure) }
        }
        if json { printJSON(results.flatMap(\.figures)) } else { Scales.printSummary(results) }
    } catch {
        fail("\(error)")
    }
    exit(0)
}

var figures: [Figure] = []
// The parts of a workload run when named, not again in a run of everything.
let parts = only == nil ? [] : Workloads.namedParts
for (name, run) in Workloads.all + parts where only?.contains(name) ?? true {
    do {
        let results = try run(settings)
        figures += results
        if !json { for figure in results { printTable(figure) } }
    } catch {
        FileHandle.standardError.write(Data("lode-bench: \(name) failed: \(error)\n".utf8))
        exit(1)
    }
}
if json { printJSON(figures) }

func printTable(_ figure: Figure) {
    print("\n## \(figure.workload) — \(figure.size) \(figure.size == 1 ? "item" : "items")")
    print(
        "system".padding(toLength: 40, withPad: " ", startingAt: 0)
            + "median      min–max                 ops/s")
    for timing in figure.timings {
        print(
            timing.system.padding(toLength: 40, withPad: " ", startingAt: 0)
                + format(timing.median).padding(toLength: 12, withPad: " ", startingAt: 0)
                + (format(timing.minimum) + "–" + format(timing.maximum)).padding(
                    toLength: 24, withPad: " ", startingAt: 0)
                + formatRate(timing.opsPerSecond))
    }
    for (system, ratio) in figure.ratios {
        print(String(format: "ratio to %@: %.2f×", system, ratio))
    }
    for note in figure.notes { print(note) }
}

func printJSON(_ figures: [Figure]) {
    let objects: [[String: Any]] = figures.map { figure in
        [
            "workload": figure.workload, "size": figure.size,
            "systems": figure.timings.map {
                [
                    "name": $0.system, "medianSeconds": $0.median, "minSeconds": $0.minimum,
                    "maxSeconds": $0.maximum, "p99Seconds": $0.percentile(99), "runs": $0.runs.count,
                    "opsPerSecond": $0.opsPerSecond,
                ]
            },
            "ratios": Dictionary(uniqueKeysWithValues: figure.ratios.map { ($0.0, $0.1) }),
            "notes": figure.notes,
        ]
    }
    let data = try! JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}
