/// The pages Lode Studio serves: plain HTML, CSS and a little JavaScript, no build step and nothing
/// fetched from elsewhere. Values from the store reach the page only through `textContent` (a type
/// or field name is data, never markup).
enum StudioPages {
    /// The summary: the store's file, version, schema and readers, and a row per type.
    static let summaryPage = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>Lode Studio</title>
        <link rel="stylesheet" href="/static/studio.css">
        <script src="/static/studio.js" defer></script>
        </head>
        <body>
        <header><h1>Lode Studio</h1><p id="store"></p></header>
        <main>
        <section id="status" role="status">Reading the store…</section>
        <section>
        <h2>File</h2>
        <dl id="file"></dl>
        </section>
        <section>
        <h2>Types</h2>
        <table id="types"><thead><tr>
        <th>type</th><th>objects</th><th>primary key</th><th>indexes</th><th>links</th>
        </tr></thead><tbody></tbody></table>
        </section>
        <section>
        <h2>Readers</h2>
        <table id="readers"><thead><tr>
        <th>pid</th><th>version</th><th>behind</th><th>process</th>
        </tr></thead><tbody></tbody></table>
        </section>
        </main>
        </body>
        </html>

        """

    /// The summary page's script: reads `/api/summary` and fills the page.
    static let script = """
        "use strict";
        function cell(row, text) {
          const td = document.createElement("td");
          td.textContent = text;
          row.appendChild(td);
        }
        function entry(list, name, value) {
          const dt = document.createElement("dt");
          dt.textContent = name;
          const dd = document.createElement("dd");
          dd.textContent = value;
          list.append(dt, dd);
        }
        function bytes(count) {
          const units = ["B", "KiB", "MiB", "GiB", "TiB"];
          let value = count, unit = 0;
          while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
          return (unit === 0 ? value : value.toFixed(1)) + " " + units[unit];
        }
        async function load() {
          const status = document.getElementById("status");
          let summary;
          try {
            const response = await fetch("/api/summary", { credentials: "same-origin" });
            const body = await response.json();
            if (!response.ok) throw new Error(body.error || response.statusText);
            summary = body;
          } catch (error) {
            status.textContent = "The store cannot be read: " + error.message;
            status.className = "error";
            return;
          }
          status.textContent = "Version " + summary.version;
          status.className = "";
          document.getElementById("store").textContent = summary.path;
          const file = document.getElementById("file");
          file.replaceChildren();
          entry(file, "file", bytes(summary.fileBytes));
          entry(file, "map", bytes(summary.mapBytes) + " (" + bytes(summary.usedBytes) + " used)");
          entry(file, "schema version", String(summary.schemaVersion));
          entry(file, "migrations", summary.migrations.length ? summary.migrations.join(", ") : "none");
          const types = document.querySelector("#types tbody");
          types.replaceChildren();
          for (const type of summary.types) {
            const row = document.createElement("tr");
            row.dataset.type = type.name;
            cell(row, type.name);
            cell(row, String(type.objectCount));
            cell(row, type.primaryKey);
            cell(row, type.indexes.map(i => i.name + (i.isUnique ? " (unique)" : "")).join(", "));
            cell(row, type.links.map(l => l.field + " → " + l.target).join(", "));
            types.appendChild(row);
          }
          const readers = document.querySelector("#readers tbody");
          readers.replaceChildren();
          for (const reader of summary.readers) {
            const row = document.createElement("tr");
            cell(row, String(reader.processID));
            cell(row, reader.version === undefined ? "—" : String(reader.version));
            cell(row, reader.behind === undefined ? "—" : String(reader.behind));
            cell(row, reader.processIsAlive ? "running" : "gone (stale slot)");
            readers.appendChild(row);
          }
        }
        document.addEventListener("DOMContentLoaded", load);

        """

    /// The pages' style.
    static let style = """
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
        header { background: #243b53; color: #fff; padding: 12px 24px; }
        header h1 { margin: 0; font-size: 20px; }
        header p { margin: 4px 0 0; font-family: ui-monospace, monospace; opacity: 0.8; }
        main { padding: 12px 24px; }
        h2 { font-size: 16px; margin: 20px 0 8px; }
        table { border-collapse: collapse; background: #fff; }
        th, td { border: 1px solid #d9e2ec; padding: 4px 10px; text-align: left; }
        th { background: #f0f4f8; }
        dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
        dt { color: #52606d; }
        dd { margin: 0; }
        .error { color: #ab091e; font-weight: 600; }

        """
}
