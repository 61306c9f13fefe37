// The model macro's compiler plug-in: an executable the compiler starts and talks to over standard
// input and output, built against the SwiftSyntax host libraries that ship with the toolchain (see
// Package.swift). It knows nothing of LMDB or of Lode's types: it writes source text that calls them.

@_spi(PluginMessage) import SwiftCompilerPluginMessageHandling
import SwiftSyntaxMacros

/// Resolves the macro types the declarations in `LodeMacros` name.
struct LodeMacrosProvider: PluginProvider {
    func resolveMacro(moduleName: String, typeName: String) throws -> any Macro.Type {
        switch typeName {
        case "ModelMacro": ModelMacro.self
        case "PropertyMarkerMacro": PropertyMarkerMacro.self
        case "SchemaMarkerMacro": SchemaMarkerMacro.self
        default: throw UnknownMacro(name: typeName)
        }
    }
}

/// A macro type this plug-in does not have.
struct UnknownMacro: Error, CustomStringConvertible {
    var name: String
    var description: String { "LodeMacrosPlugin has no macro named \(name)" }
}

let listener = CompilerPluginMessageListener(
    connection: try StandardIOMessageConnection(), provider: LodeMacrosProvider())
try listener.main()
