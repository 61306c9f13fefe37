// lode-sync: keeps a store of the demo's task list (lode-demo) in sync through PostgreSQL.
//
//   LODE_SYNC_SERVER='host=… dbname=…' lode-sync setup
//   LODE_SYNC_SERVER='host=… dbname=…' lode-sync run lode-demo.store
//   lode-sync status lode-demo.store
//
// An app's own runner is the same three lines with its own types (see SyncCommand).
import Foundation
import LodeDemoModel
import LodeSync

exit(SyncCommand(types: [.type(DemoProject.self), .type(DemoTask.self)]).run(CommandLine.arguments))
