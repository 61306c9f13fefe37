// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Lode",
    products: [
        .library(name: "LMDB", targets: ["LMDB"])
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            path: "Sources/CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"], path: "Sources/LMDB"),
        .executableTarget(
            name: "lmdb-test-helper",
            dependencies: ["LMDB", "CLMDB"],
            path: "Tests/Helpers/lmdb-test-helper"
        ),
        .testTarget(
            name: "LMDBTests",
            dependencies: ["LMDB", "CLMDB", "lmdb-test-helper"],
            path: "Tests/LMDBTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
