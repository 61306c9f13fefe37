import SwiftDiagnostics
import SwiftSyntax

/// A message of the model macro, at a node of the user's declaration.
struct ModelDiagnostic: DiagnosticMessage {
    let message: String
    let severity: DiagnosticSeverity
    var diagnosticID: MessageID { MessageID(domain: "LodeMacros", id: message) }

    /// An error at `node`.
    static func error(_ node: some SyntaxProtocol, _ message: String) -> Diagnostic {
        Diagnostic(node: Syntax(node), message: ModelDiagnostic(message: message, severity: .error))
    }
}

/// Thrown by the analysis when a diagnostic was reported and the expansion should produce nothing.
struct ModelRefused: Error {}
