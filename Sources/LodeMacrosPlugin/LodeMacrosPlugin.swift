// The model macro's compiler plug-in: an executable the compiler starts and talks to over standard
// input and output. It knows nothing of LMDB or of Lode's types: it writes source text that calls
// them. Built against the swift-syntax package it is a `CompilerPlugin`; against the toolchain's
// host libraries (which have no `SwiftCompilerPlugin`) it runs their message listener itself (see
// Package.swift for how the route is chosen). The expansion itself is in `LodeMacrosExpansion`.

import LodeMacrosExpansion
import SwiftSyntaxMacros

/// The macro types the declarations in `LodeMacros` name.
var lodeMacros: [any Macro.Type] { [ModelMacro.self, PropertyMarkerMacro.self, SchemaMarkerMacro.self] }

#if canImport(SwiftCompilerPlugin)
    import SwiftCompilerPlugin

    /// The plug-in, as the swift-syntax package runs one.
    @main
    struct LodeMacrosPlugin: CompilerPlugin {
        let providingMacros: [any Macro.Type] = lodeMacros
    }
#else
    @_spi(PluginMessage) import SwiftCompilerPluginMessageHandling

    /// Resolves the macro types the declarations in `LodeMacros` name.
    struct LodeMacrosProvider: PluginProvider {
        func resolveMacro(moduleName: String, typeName: String) throws -> any Macro.Type {
            guard let macro = lodeMacros.first(where: { "\($0)" == typeName }) else {
                throw UnknownMacro(name: typeName)
            }
            return macro
        }
    }

    /// A macro type this plug-in does not have.
    struct UnknownMacro: Error, CustomStringConvertible {
        var name: String
        var description: String { "LodeMacrosPlugin has no macro named \(name)" }
    }

    /// The plug-in, listening for the compiler's messages.
    @main
    struct LodeMacrosPlugin {
        static func main() throws {
            let listener = CompilerPluginMessageListener(
                connection: try StandardIOMessageConnection(), provider: LodeMacrosProvider())
            try listener.main()
        }
    }
#endif
