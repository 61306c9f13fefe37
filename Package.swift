// swift-tools-version:6.0
import CompilerPluginSupport
import Foundation
import PackageDescription

// Internal invariant checks: with `LODE_INTERNAL_CHECKS=1` in the build's environment (`make test`
// sets it), the structures that keep an invariant — RankedKeys, EntryTable, CollectionChange,
// SectionedChange, ListMirror — check all of it after every mutation. Off otherwise: the checks cost
// time in proportion to the structure's size.
let internalChecks: [SwiftSetting] =
    Context.environment["LODE_INTERNAL_CHECKS"] == "1" ? [.define("LODE_INTERNAL_CHECKS")] : []

// The model macro's plug-in is built against SwiftSyntax by one of two routes:
// - the swift-syntax package, as every macro package is: the default, and the only route when Lode
//   is a dependency of another package named by version (SwiftPM refuses unsafe flags there);
// - the SwiftSyntax host libraries that ship with the toolchain (`usr/lib/swift/host` beside
//   `swiftc`), with search-path flags SwiftPM counts as unsafe: where the package cannot be fetched.
// `LODE_SWIFT_SYNTAX=package` or `=toolchain` chooses; unset, a root checkout of Lode (not one SwiftPM
// or Xcode checked out as a dependency) uses the toolchain's libraries when they are there and no
// swift-syntax checkout is, and everything else uses the package. `make` sets `toolchain`.
func swiftHostLibraries() -> String? {
    if let explicit = Context.environment["LODE_SWIFT_HOST_LIBRARIES"], !explicit.isEmpty { return explicit }
    for folder in (Context.environment["PATH"] ?? "").split(separator: ":") {
        let compiler = URL(fileURLWithPath: String(folder)).appendingPathComponent("swiftc")
        guard FileManager.default.isExecutableFile(atPath: compiler.path) else { continue }
        let host = compiler.resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("lib/swift/host")
        if FileManager.default.fileExists(atPath: host.appendingPathComponent("SwiftSyntax.swiftmodule").path)
        {
            return host.path
        }
    }
    let fallback = "/usr/lib/swift/host"
    return FileManager.default.fileExists(atPath: fallback + "/SwiftSyntax.swiftmodule") ? fallback : nil
}

func usesToolchainSyntax() -> Bool {
    switch Context.environment["LODE_SWIFT_SYNTAX"] {
    case "toolchain": return true
    case "package": return false
    default:
        let directory = Context.packageDirectory
        // A dependency's manifest is read from its checkout, or (while versions are resolved) from its
        // repository at a revision, which SwiftPM presents at the root of a virtual file system.
        let isDependency =
            directory == "/" || directory.contains("/.build/checkouts/")
            || directory.contains("/SourcePackages/checkouts/")
        let hasCheckout = FileManager.default.fileExists(atPath: directory + "/.build/checkouts/swift-syntax")
        return !isDependency && !hasCheckout && swiftHostLibraries() != nil
    }
}

let toolchainSyntax = usesToolchainSyntax()
let hostLibraries = swiftHostLibraries() ?? "/usr/lib/swift/host"
/// The plug-in's (and its tests') settings and dependencies for the route chosen.
let syntaxSwiftSettings: [SwiftSetting] = toolchainSyntax ? [.unsafeFlags(["-I", hostLibraries])] : []
let syntaxLinkerSettings: [LinkerSetting] =
    toolchainSyntax
    ? [.unsafeFlags(["-L", hostLibraries, "-Xlinker", "-rpath", "-Xlinker", hostLibraries])] : []
let expansionDependencies: [Target.Dependency] =
    toolchainSyntax
    ? []
    : [
        .product(name: "SwiftSyntax", package: "swift-syntax"),
        .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
        .product(name: "SwiftDiagnostics", package: "swift-syntax"),
    ]
let pluginDependencies: [Target.Dependency] =
    ["LodeMacrosExpansion"]
    + (toolchainSyntax
        ? []
        : [
            .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
        ])
let macroTestDependencies: [Target.Dependency] =
    toolchainSyntax
    ? []
    : [
        .product(name: "SwiftSyntax", package: "swift-syntax"),
        .product(name: "SwiftDiagnostics", package: "swift-syntax"),
        .product(name: "SwiftParser", package: "swift-syntax"),
        .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
        .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
    ]

let package = Package(
    name: "Lode",
    products: [
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "Lode", targets: ["Lode"]),
        .library(name: "LodeInspection", targets: ["LodeInspection"]),
        .library(name: "ModelStorage", targets: ["ModelStorage"]),
        .library(name: "LodeTesting", targets: ["LodeTesting"]),
        .library(name: "LodeSync", targets: ["LodeSync"]),
        .library(name: "LodeMacros", targets: ["LodeMacros"]),
    ],
    // swift-syntax 603 is the toolchain's (Swift 6.3); a newer toolchain takes a newer one.
    dependencies: toolchainSyntax
        ? [] : [.package(url: "https://github.com/swiftlang/swift-syntax.git", "603.0.0"..<"700.0.0")],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            path: "Sources/CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        .systemLibrary(
            name: "CSodium",
            path: "Sources/CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            path: "Sources/CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"], path: "Sources/LMDB"),
        .target(name: "ModelStorage", path: "Sources/ModelStorage", swiftSettings: internalChecks),
        // Lode's layers, bottom to top: each target imports only the ones below it (see the
        // Architecture article). `Lode` re-exports them for apps; `LodeInspection` is for tools.
        .target(name: "LodeCodec", path: "Sources/LodeCodec"),
        .target(
            name: "LodeStore", dependencies: ["CSodium", "LMDB", "LodeCodec"], path: "Sources/LodeStore"),
        // Full-text search: tokenizers, the query language, postings, search, ranking and highlights,
        // kept by the write path through the store's attached-index seam.
        .target(
            name: "LodeText", dependencies: ["LMDB", "LodeCodec", "LodeStore"], path: "Sources/LodeText"),
        .target(
            name: "LodeQuery", dependencies: ["LMDB", "LodeCodec", "LodeStore", "LodeText"],
            path: "Sources/LodeQuery"),
        .target(
            name: "LodeLive",
            dependencies: ["LMDB", "LodeCodec", "LodeStore", "LodeText", "LodeQuery", "ModelStorage"],
            path: "Sources/LodeLive", swiftSettings: internalChecks),
        .target(
            name: "LodeStorage",
            dependencies: ["LodeCodec", "LodeStore", "LodeQuery", "LodeLive", "ModelStorage"],
            path: "Sources/LodeStorage"),
        .target(
            name: "Lode",
            dependencies: ["LodeCodec", "LodeStore", "LodeText", "LodeQuery", "LodeLive", "LodeStorage"],
            path: "Sources/Lode"),
        // Sync sits above live: it reads the change log as its outbox and writes downloaded changes
        // as ordinary commits.
        .target(
            name: "LodeSync", dependencies: ["CLibPQ", "LMDB", "LodeCodec", "LodeStore", "LodeLive"],
            path: "Sources/LodeSync"),
        .target(
            name: "LodeInspection", dependencies: ["LMDB", "LodeCodec", "LodeStore", "LodeText"],
            path: "Sources/LodeInspection"),
        // The model macro: its declarations (with Lode re-exported), its compiler plug-in, and the
        // expansion the plug-in runs — a library of its own so that the macro's tests link it without
        // depending on a macro target, which would make SwiftPM build every test target, and every
        // library they use a second time, for the host (the `-tool` build).
        .target(
            name: "LodeMacrosExpansion", dependencies: expansionDependencies,
            path: "Sources/LodeMacrosExpansion",
            swiftSettings: syntaxSwiftSettings, linkerSettings: syntaxLinkerSettings),
        .macro(
            name: "LodeMacrosPlugin", dependencies: pluginDependencies, path: "Sources/LodeMacrosPlugin",
            swiftSettings: syntaxSwiftSettings, linkerSettings: syntaxLinkerSettings),
        .target(
            name: "LodeMacros", dependencies: ["LodeCodec", "LodeStore", "LodeText", "LodeMacrosPlugin"],
            path: "Sources/LodeMacros"),
        .target(name: "LodeTesting", dependencies: ["Lode", "ModelStorage"], path: "Sources/LodeTesting"),
        .executableTarget(
            name: "lode-bench",
            dependencies: [
                "Lode", "LodeInspection", "LodeSync", "LodeTestSupport", "LMDB", "CLMDB", "ModelStorage",
                "CSQLite", "CMalloc", "LodeCodec", "LodeStudio", "StoredQuery", "LodeMacros",
            ],
            path: "Tools/lode-bench"),
        .target(name: "LodeDemoModel", dependencies: ["Lode", "LodeMacros"], path: "Tools/LodeDemoModel"),
        // The browser inspector (Lode Studio): a tool over the inspection product and the commit
        // feed, served by libmicrohttpd on the loopback address.
        .target(
            name: "LodeStudio",
            dependencies: ["CMicroHTTPD", "Lode", "LodeCodec", "LodeInspection", "StoredQuery"],
            path: "Tools/LodeStudio", resources: [.copy("Resources")]),
        // `--where` expressions, their plans and pages of records, without the app's types: for
        // lode-dump and Lode Studio.
        .target(
            name: "StoredQuery", dependencies: ["Lode", "LodeQuery", "LodeInspection"],
            path: "Tools/StoredQuery"),
        .executableTarget(
            name: "lode-demo", dependencies: ["Lode", "LodeDemoModel", "ModelStorage"],
            path: "Tools/lode-demo"),
        .executableTarget(
            name: "lode-sync", dependencies: ["Lode", "LodeDemoModel", "LodeSync"], path: "Tools/lode-sync"),
        .executableTarget(
            name: "lode-dump", dependencies: ["Lode", "LodeInspection", "LodeStudio", "StoredQuery"],
            path: "Tools/lode-dump"
        ),
        .executableTarget(
            name: "lmdb-test-helper",
            dependencies: ["LMDB", "CLMDB"],
            path: "Tests/Helpers/lmdb-test-helper"
        ),
        .testTarget(
            name: "LMDBTests",
            dependencies: ["LMDB", "CLMDB", "LodeTestSupport", "lmdb-test-helper"],
            path: "Tests/LMDBTests"
        ),
        .target(name: "LodeTestSupport", path: "Tests/Helpers/LodeTestSupport"),
        .executableTarget(
            name: "lode-test-helper",
            dependencies: [
                "LMDB", "Lode", "LodeInspection", "LodeMacros", "LodeSync", "LodeTestSupport", "ModelStorage",
            ],
            path: "Tests/Helpers/lode-test-helper"),
        .executableTarget(
            name: "lode-versions-helper", dependencies: ["Lode", "LodeMacros", "LodeTestSupport"],
            path: "Tests/Helpers/lode-versions-helper"),
        // Lode's tests: one target per layer, each depending only on its layer and those below (and on
        // the executables it runs: the test helpers, and `lode-dump` as an independent checker), so the
        // compiler holds the tests to the layering and a change in one layer rebuilds only the tests
        // of the layers above it. The helper targets hold what several layers' tests share. The live and
        // storage tests also use LodeTesting, the replay helpers apps' tests use, as their oracle.
        .target(
            name: "LodeTestModels",
            dependencies: ["LodeCodec", "LodeStore", "LodeMacros", "LodeTestSupport"],
            path: "Tests/Helpers/LodeTestModels"),
        .target(
            name: "LodeLiveTestSupport",
            dependencies: [
                "LodeStore", "LodeQuery", "LodeLive", "ModelStorage", "LodeTestSupport", "LodeTestModels",
            ],
            path: "Tests/Helpers/LodeLiveTestSupport"),
        .testTarget(
            name: "LodeCodecTests", dependencies: ["LodeCodec", "LodeTestSupport"],
            path: "Tests/LodeCodecTests"),
        .testTarget(
            name: "LodeStoreTests",
            dependencies: [
                "CSodium", "LMDB", "LodeCodec", "LodeStore", "LodeTestSupport", "LodeTestModels",
                "lode-test-helper",
                "lode-dump",
            ],
            path: "Tests/LodeStoreTests"),
        .testTarget(
            name: "LodeTextTests", dependencies: ["LodeCodec", "LodeStore", "LodeText", "LodeTestSupport"],
            path: "Tests/LodeTextTests"),
        .testTarget(
            name: "LodeQueryTests",
            dependencies: [
                "LMDB", "LodeCodec", "LodeStore", "LodeText", "LodeQuery", "LodeTestSupport",
                "LodeTestModels",
                "lode-test-helper", "lode-dump",
            ],
            path: "Tests/LodeQueryTests"),
        .testTarget(
            name: "LodeLiveTests",
            dependencies: [
                "LMDB", "LodeCodec", "LodeStore", "LodeText", "LodeQuery", "LodeLive", "ModelStorage",
                "LodeTestSupport", "LodeTestModels", "LodeLiveTestSupport", "LodeTesting", "lode-test-helper",
                "lode-versions-helper",
                "lode-dump",
            ],
            path: "Tests/LodeLiveTests"),
        .testTarget(
            name: "LodeStorageTests",
            dependencies: [
                "LMDB", "LodeCodec", "LodeStore", "LodeQuery", "LodeLive", "LodeStorage", "ModelStorage",
                "LodeTestSupport", "LodeTestModels", "LodeLiveTestSupport", "LodeTesting", "lode-test-helper",
            ],
            path: "Tests/LodeStorageTests"),
        // Inspection reads what the app's layers wrote, as a tool does: its tests write with them.
        .testTarget(
            name: "LodeInspectionTests",
            dependencies: [
                "LMDB", "LodeCodec", "LodeStore", "LodeQuery", "LodeLive", "LodeInspection", "ModelStorage",
                "LodeTestSupport", "LodeTestModels", "LodeLiveTestSupport", "lode-test-helper", "lode-dump",
            ],
            path: "Tests/LodeInspectionTests"),
        .testTarget(
            name: "LodeSyncTests",
            dependencies: [
                "LMDB", "LodeCodec", "LodeStore", "LodeQuery", "LodeLive", "LodeSync", "ModelStorage",
                "LodeTestSupport", "LodeTestModels", "LodeLiveTestSupport", "lode-test-helper", "lode-sync",
                "lode-dump",
            ],
            path: "Tests/LodeSyncTests"),
        .testTarget(
            name: "LodeToolsTests",
            dependencies: [
                "Lode", "LMDB", "LodeCodec", "LodeStore", "LodeText", "LodeQuery", "LodeLive",
                "LodeInspection",
                "LodeStudio", "StoredQuery", "ModelStorage", "LodeTestSupport", "LodeTestModels",
                "lode-test-helper", "lode-demo", "lode-dump",
            ],
            path: "Tests/LodeToolsTests"),
        // What an app imports, as the README and the articles show it, and the layering itself.
        .testTarget(
            name: "LodeTests",
            dependencies: [
                "Lode", "LodeStorage", "ModelStorage", "LodeTestSupport", "lode-test-helper",
            ],
            path: "Tests/LodeTests"),
        // The model macro: expansions and diagnostics, and its generated codec beside Codable's.
        .testTarget(
            name: "LodeMacrosTests",
            dependencies: [
                "LodeMacros", "LodeMacrosExpansion", "Lode", "LodeCodec", "LodeStore", "LodeTestSupport",
            ] + macroTestDependencies,
            path: "Tests/LodeMacrosTests",
            swiftSettings: syntaxSwiftSettings, linkerSettings: syntaxLinkerSettings),
        .testTarget(
            name: "ModelStorageTests", dependencies: ["ModelStorage"], path: "Tests/ModelStorageTests"),
        .testTarget(
            name: "LodeTestingTests",
            dependencies: [
                "LodeTesting", "Lode", "LodeCodec", "LodeStore", "LodeQuery", "LodeLive", "LodeStorage",
                "LodeInspection", "ModelStorage",
            ],
            path: "Tests/LodeTestingTests"),
    ],
    swiftLanguageModes: [.v6]
)
