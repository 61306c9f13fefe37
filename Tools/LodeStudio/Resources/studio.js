"use strict";
const page = document.body.dataset.page;
const params = new URLSearchParams(location.search);
// `commits`: the time of each commit the page was told of (the ones its lists show), newest last.
const live = { handlers: [], ticks: [], commits: [] };

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}
function link(text, path, query) {
  const a = el("a", text);
  a.href = path + (query ? "?" + new URLSearchParams(query).toString() : "");
  return a;
}
function cell(row, content, className) {
  const td = el("td", undefined, className);
  if (content instanceof Node) td.appendChild(content); else td.textContent = content;
  row.appendChild(td);
  return td;
}
function entry(list, name, value) {
  list.append(el("dt", name), el("dd", value));
}
function bytes(count) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = count, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return (unit === 0 ? value : value.toFixed(1)) + " " + units[unit];
}
function status(text, isError) {
  const node = document.getElementById("status");
  node.textContent = text;
  node.className = isError ? "error" : "";
}
async function api(path, query) {
  const url = path + (query ? "?" + new URLSearchParams(query).toString() : "");
  const response = await fetch(url, { credentials: "same-origin" });
  let body;
  try { body = await response.json(); } catch (error) { throw new Error(response.status + " " + response.statusText); }
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}
function time(ms) {
  const date = new Date(ms);
  return date.toLocaleTimeString([], { hour12: false }) + "." + String(date.getMilliseconds()).padStart(3, "0");
}
function describe(change) {
  if (change.op === "clear") return "clear " + change.type;
  if (change.op === "bulk") return "bulk " + change.type + " (" + change.count + " objects)";
  let text = change.op + " " + change.type + " " + change.label;
  if (change.fields) text += " (" + change.fields.join(", ") + ")";
  return text;
}

// The objects a link field points at, each opening that object.
function linkTo(linked) {
  const span = el("span", undefined, "links");
  linked.targets.forEach((target, n) => {
    if (n > 0) span.append(", ");
    span.appendChild(link(target.label, "/object", { type: linked.type, key: target.key }));
  });
  span.title = "→ " + linked.type;
  return span;
}

// A value as the tables show it: maps and arrays fold open.
function render(value) {
  if (value === null || value === undefined) return el("span", "null", "null");
  if (Array.isArray(value)) {
    const details = el("details");
    details.appendChild(el("summary", "[" + value.length + (value.length === 1 ? " item]" : " items]")));
    const list = el("ol", undefined, "nested");
    for (const item of value) { const li = el("li"); li.appendChild(render(item)); list.appendChild(li); }
    details.appendChild(list);
    return details;
  }
  if (typeof value === "object") {
    const keys = Object.keys(value);
    const details = el("details");
    details.appendChild(el("summary", "{" + keys.length + (keys.length === 1 ? " field}" : " fields}")));
    const list = el("dl", undefined, "nested");
    for (const key of keys) { const dd = el("dd"); dd.appendChild(render(value[key])); list.append(el("dt", key), dd); }
    details.appendChild(list);
    return details;
  }
  return el("span", String(value), typeof value);
}

// Live: server-sent events from every process's commits, and the store's figures each second.
function follow() {
  const indicator = document.getElementById("live");
  const source = new EventSource("/api/events");
  source.addEventListener("hello", event => {
    indicator.textContent = "live from version " + JSON.parse(event.data).version;
    indicator.className = "live on";
  });
  source.addEventListener("tick", event => {
    const tick = JSON.parse(event.data);
    indicator.textContent = "live · version " + tick.version;
    indicator.className = "live on";
    live.ticks.push(tick);
    if (live.ticks.length > 301) live.ticks.shift();
    if (page === "summary") drawCharts();
  });
  source.addEventListener("commits", event => {
    const batch = JSON.parse(event.data);
    indicator.textContent = "live · version " + batch.version;
    for (const commit of batch.commits) live.commits.push(commit.time);
    const newest = live.commits[live.commits.length - 1];
    while (live.commits.length && newest - live.commits[0] > 300000) live.commits.shift();
    for (const handler of live.handlers) handler(batch);
    if (page === "summary") drawCharts();
  });
  source.addEventListener("notice", event => {
    indicator.textContent = JSON.parse(event.data).message;
  });
  source.addEventListener("failure", event => {
    status("The store can no longer be followed: " + JSON.parse(event.data).error, true);
    indicator.textContent = "stopped";
    indicator.className = "live off";
  });
  source.onerror = () => {
    // A refused stream (the store cannot be followed) is not retried; a dropped one is.
    indicator.textContent = source.readyState === EventSource.CLOSED ? "not live" : "reconnecting…";
    indicator.className = "live off";
  };
}

// The commits list of a page (newest first, the last 20), each commit's changes listed.
function showCommits(batch, only) {
  const list = document.getElementById("commits");
  for (const commit of batch.commits) {
    const changes = commit.changes.filter(change => !only || change.type === only);
    if (changes.length === 0) continue;
    const item = el("li");
    item.dataset.version = commit.version;
    item.append(el("b", "version " + commit.version), " ", el("time", time(commit.time)), " ");
    const shown = changes.slice(0, 20).map(describe);
    if (changes.length > 20) shown.push("… " + (changes.length - 20) + " more");
    item.appendChild(el("span", shown.join("; ")));
    list.insertBefore(item, list.firstChild);
  }
  if (!batch.complete) list.insertBefore(el("li", "(the change log was pruned: some commits were missed)"), list.firstChild);
  while (list.children.length > 20) list.removeChild(list.lastChild);
}

// Summary.
let summaryLoading = false, summaryAgain = false;
async function loadSummary() {
  if (summaryLoading) { summaryAgain = true; return; }
  summaryLoading = true;
  try {
    const summary = await api("/api/summary");
    status("Version " + summary.version);
    document.getElementById("store").textContent = summary.path;
    const file = document.getElementById("file");
    file.replaceChildren();
    entry(file, "file", bytes(summary.fileBytes));
    entry(file, "map", bytes(summary.mapBytes) + " (" + bytes(summary.usedBytes) + " used)");
    entry(file, "free pages", summary.freePages + " (" + bytes(summary.freePages * summary.pageSize) + ", reused before the file grows)");
    entry(file, "schema version", String(summary.schemaVersion));
    entry(file, "migrations", summary.migrations.length ? summary.migrations.join(", ") : "none");
    const pinned = summary.readers.filter(reader => reader.version !== undefined);
    entry(file, "oldest pinned version", pinned.length ? pinned[0].version + " (" + pinned[0].behind + " behind, pid " + pinned[0].processID + ")" : "none");
    entry(file, "reader slots", summary.readers.length + " of " + summary.readerSlots);
    const types = document.querySelector("#types tbody");
    types.replaceChildren();
    for (const type of summary.types) {
      const row = el("tr");
      row.dataset.type = type.name;
      cell(row, link(type.name, "/type", { name: type.name }));
      cell(row, String(type.objectCount));
      cell(row, type.primaryKey);
      cell(row, type.indexes.map(i => i.name + (i.isUnique ? " (unique)" : "")).join(", "));
      const links = el("span");
      type.links.forEach((l, n) => {
        if (n > 0) links.append(", ");
        links.append(l.field + " → ", link(l.target, "/type", { name: l.target }));
      });
      cell(row, links);
      types.appendChild(row);
    }
    const readers = document.querySelector("#readers tbody");
    readers.replaceChildren();
    for (const reader of summary.readers) {
      const row = el("tr");
      cell(row, String(reader.processID));
      cell(row, reader.version === undefined ? "—" : String(reader.version));
      cell(row, reader.behind === undefined ? "—" : String(reader.behind));
      cell(row, reader.processIsAlive ? "running" : "gone (stale slot)");
      readers.appendChild(row);
    }
  } catch (error) {
    status("The store cannot be read: " + error.message, true);
  } finally {
    summaryLoading = false;
    if (summaryAgain) { summaryAgain = false; loadSummary(); }
  }
}
// The activity charts: SVG a person reads — a time axis labelled in seconds before now, a value
// axis from 0 to a round top, the values drawn over a window that fits what the feed has seen (from a
// minute to five), and a caption with the figures.
const svgNS = "http://www.w3.org/2000/svg";
function svg(tag, attributes, text) {
  const node = document.createElementNS(svgNS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}
function roundTop(value) {
  if (value <= 0) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}
const plot = { left: 52, right: 350, top: 10, bottom: 112, width: 360, height: 140 };
// The right edge of the charts: the last tick or the newest commit, whichever came later.
function chartNow() {
  const tick = live.ticks.length ? live.ticks[live.ticks.length - 1].time : 0;
  const commit = live.commits.length ? live.commits[live.commits.length - 1] : 0;
  return Math.max(tick, commit) || Date.now();
}
// Draws `points` ({time, value}) into the SVG `id`: bars when `bars`, else a line.
function chart(id, points, format, bars) {
  const node = document.getElementById(id);
  node.replaceChildren();
  const now = chartNow();
  const first = live.ticks.length ? live.ticks[0].time : now;
  const span = Math.min(300, Math.max(60, Math.ceil((now - first) / 1000 / 30) * 30));
  const x = time => plot.right - ((now - time) / 1000 / span) * (plot.right - plot.left);
  const top = roundTop(Math.max(0, ...points.map(point => point.value)));
  const y = value => plot.bottom - (value / top) * (plot.bottom - plot.top);
  node.setAttribute("data-window", String(span));
  node.setAttribute("data-top", String(top));
  // The value axis: 0, half and the top, with grid lines.
  for (const value of [0, top / 2, top]) {
    node.appendChild(svg("line", { x1: plot.left, x2: plot.right, y1: y(value), y2: y(value), class: "grid" }));
    node.appendChild(svg("text", { x: plot.left - 6, y: y(value) + 4, class: "axis value" }, format(value)));
  }
  // The time axis: a label every 10 s (a minute), 30 s or 60 s, "now" at the right.
  const step = span <= 60 ? 10 : span <= 180 ? 30 : 60;
  for (let seconds = 0; seconds <= span; seconds += step) {
    const at = x(now - seconds * 1000);
    node.appendChild(svg("line", { x1: at, x2: at, y1: plot.bottom, y2: plot.bottom + 4, class: "tick" }));
    node.appendChild(svg("text", { x: at, y: plot.bottom + 17, class: "axis time" }, seconds === 0 ? "now" : "−" + seconds + " s"));
  }
  node.appendChild(svg("line", { x1: plot.left, x2: plot.right, y1: plot.bottom, y2: plot.bottom, class: "axis-line" }));
  const shown = points.filter(point => now - point.time <= span * 1000);
  if (bars) {
    const width = Math.max(1, (plot.right - plot.left) / span - 1);
    for (const point of shown) {
      if (point.value <= 0) continue;
      const bar = svg("rect", { x: x(point.time) - width, y: y(point.value), width, height: plot.bottom - y(point.value), class: "bar" });
      bar.setAttribute("data-value", String(point.value));
      bar.appendChild(svg("title", {}, format(point.value) + " at " + time(point.time)));
      node.appendChild(bar);
    }
  } else if (shown.length > 0) {
    const line = svg("polyline", { points: shown.map(point => x(point.time) + "," + y(point.value)).join(" "), class: "line" });
    node.appendChild(line);
    const last = shown[shown.length - 1];
    node.appendChild(svg("circle", { cx: x(last.time), cy: y(last.value), r: 2.5, class: "dot" }));
  }
}
function drawCharts() {
  const ticks = live.ticks;
  // The commits the page was told of — the ones its list shows — in the second each was made.
  const perSecond = new Map();
  for (const at of live.commits) {
    const second = Math.floor(at / 1000) * 1000;
    perSecond.set(second, (perSecond.get(second) || 0) + 1);
  }
  const commits = [...perSecond].map(([time, value]) => ({ time, value }));
  chart("chart-commits", commits, value => Number.isInteger(value) ? String(value) : value.toFixed(1), true);
  chart("chart-file", ticks.map(tick => ({ time: tick.time, value: tick.fileBytes })), bytes, false);
  chart("chart-lag", ticks.map(tick => ({ time: tick.time, value: tick.oldestLag || 0 })), String, false);
  const now = chartNow();
  const total = live.commits.filter(at => now - at <= 60000).length;
  const peak = Math.max(0, ...commits.filter(point => now - point.time <= 60000).map(point => point.value));
  document.getElementById("value-commits").textContent =
    total + " in the last minute" + (total > 0 ? ", at most " + peak + " in one second" : "");
  document.getElementById("value-file").textContent = ticks.length ? bytes(ticks[ticks.length - 1].fileBytes) : "";
  document.getElementById("value-lag").textContent =
    ticks.length ? String(ticks[ticks.length - 1].oldestLag || 0) + " versions now" : "";
}

// One type as a table, a page at a time.
const table = { pages: [], rows: [], loading: false, again: false, marks: null };
function tableQuery(after) {
  const query = { type: params.get("name") || "", limit: params.get("limit") || "50" };
  if (params.get("match")) query.match = params.get("match");
  if (params.get("where")) query.where = params.get("where");
  if (params.get("sort")) query.sort = params.get("sort");
  if (after) query.after = after;
  return query;
}
async function loadTable() {
  if (table.loading) { table.again = true; return; }
  table.loading = true;
  try {
    const after = table.pages[table.pages.length - 1];
    // The rows to mark are those of the commits seen before this read.
    const marks = table.marks || { inserted: new Set(), modified: new Set() };
    table.marks = null;
    const result = await api("/api/records", tableQuery(after));
    renderTable(result, marks);
  } catch (error) {
    status(error.message, true);
  } finally {
    table.loading = false;
    if (table.again) { table.again = false; loadTable(); }
  }
}
function renderTable(result, marks) {
  status("Version " + result.version + " · " + result.objectCount + " objects of " + result.type);
  document.getElementById("title").textContent = result.type;
  document.getElementById("plan").textContent = "plan: " + result.plan + " · " + result.examined + " records read" +
    (result.stoppedEarly ? " (stopped at the page's reading budget: Next reads on)" : "");
  const kinds = {};
  for (const row of result.rows) for (const field in row.kinds) (kinds[field] = kinds[field] || new Set()).add(row.kinds[field]);
  const head = el("tr");
  for (const field of result.fields) {
    const th = el("th");
    const name = el("a", field);
    name.href = "#";
    name.addEventListener("click", event => { event.preventDefault(); sortBy(field); });
    th.append(name, el("small", kinds[field] ? [...kinds[field]].join(" | ") : "", "kind"));
    head.appendChild(th);
  }
  document.querySelector("#records thead").replaceChildren(head);
  const before = table.rows;
  const now = result.rows.map(row => row.key);
  const moved = movedKeys(before, now);
  const body = document.querySelector("#records tbody");
  body.replaceChildren();
  for (const row of result.rows) {
    const tr = el("tr");
    tr.dataset.key = row.key;
    tr.title = row.label;
    const classes = [];
    if (marks.inserted.has(row.key)) classes.push("inserted");
    if (marks.modified.has(row.key)) classes.push("modified");
    if (moved.has(row.key) && !marks.inserted.has(row.key)) classes.push("moved");
    tr.className = classes.join(" ");
    for (const field of result.fields) {
      const value = row.value[field];
      const content = field === result.primaryKey
        ? link(value === undefined ? "" : (typeof value === "object" ? JSON.stringify(value) : String(value)), "/object", { type: result.type, key: row.key })
        : row.links[field] ? linkTo(row.links[field])
        : (value === undefined ? el("span", "", "missing") : render(value));
      const td = cell(tr, content);
      td.dataset.kind = row.kinds[field] || "missing";
      td.title = row.kinds[field] || "not in this record";
    }
    body.appendChild(tr);
  }
  table.rows = now;
  table.next = result.next;
  document.getElementById("next").disabled = !result.next;
  document.getElementById("previous").disabled = table.pages.length === 0;
  document.getElementById("first").disabled = table.pages.length === 0;
  document.getElementById("position").textContent = "page " + (table.pages.length + 1);
}
// Rows on the page before and after that changed places: all but a longest run of them still
// in their old order (a row that moved down leaves the others where they were).
function movedKeys(before, now) {
  const position = new Map(before.map((key, n) => [key, n]));
  const common = now.filter(key => position.has(key));
  const tails = [], tailAt = [], previous = [];
  common.forEach((key, n) => {
    const place = position.get(key);
    let low = 0, high = tails.length;
    while (low < high) { const middle = (low + high) >> 1; if (tails[middle] < place) low = middle + 1; else high = middle; }
    tails[low] = place;
    tailAt[low] = n;
    previous[n] = low > 0 ? tailAt[low - 1] : -1;
  });
  const stay = new Set();
  for (let n = tails.length ? tailAt[tails.length - 1] : -1; n >= 0; n = previous[n]) stay.add(common[n]);
  return new Set(common.filter(key => !stay.has(key)));
}
function sortBy(field) {
  const current = params.get("sort");
  const next = current === field ? "-" + field : field;
  params.set("sort", next);
  location.search = params.toString();
}
function startTable() {
  const form = document.getElementById("query");
  for (const name of ["match", "where", "sort", "limit"]) if (params.get(name)) form.elements[name].value = params.get(name);
  form.addEventListener("submit", event => {
    event.preventDefault();
    for (const name of ["match", "where", "sort", "limit"]) {
      const value = form.elements[name].value.trim();
      if (value) params.set(name, value); else params.delete(name);
    }
    location.search = params.toString();
  });
  document.getElementById("next").addEventListener("click", () => {
    if (!table.next) return;
    table.pages.push(table.next);
    table.rows = [];
    loadTable();
  });
  document.getElementById("previous").addEventListener("click", () => { table.pages.pop(); table.rows = []; loadTable(); });
  document.getElementById("first").addEventListener("click", () => { table.pages = []; table.rows = []; loadTable(); });
  live.handlers.push(batch => {
    const type = params.get("name");
    const marks = { inserted: new Set(), modified: new Set() };
    let touched = false;
    for (const commit of batch.commits) for (const change of commit.changes) {
      if (change.type !== type) continue;
      touched = true;
      if (change.op === "insert") marks.inserted.add(change.key);
      if (change.op === "update") marks.modified.add(change.key);
    }
    showCommits(batch, type);
    if (!touched) return;
    if (table.marks) {
      for (const key of marks.inserted) table.marks.inserted.add(key);
      for (const key of marks.modified) table.marks.modified.add(key);
    } else {
      table.marks = marks;
    }
    loadTable();
  });
  loadTable();
}

// One object.
async function loadObject() {
  try {
    const result = await api("/api/object", { type: params.get("type") || "", key: params.get("key") || "" });
    const object = result.object;
    status("Version " + result.version);
    const title = el("span");
    title.append(link(result.type, "/type", { name: result.type }), " " + object.label);
    document.getElementById("title").replaceChildren(title);
    const body = document.querySelector("#fields tbody");
    body.replaceChildren();
    for (const field of Object.keys(object.value)) {
      const row = el("tr");
      cell(row, field);
      cell(row, object.kinds[field] || "");
      cell(row, object.links[field] ? linkTo(object.links[field]) : render(object.value[field]));
      body.appendChild(row);
    }
    document.getElementById("json").textContent = JSON.stringify(object.value, null, 2);
    showObjectHistory(result.history);
  } catch (error) {
    status(error.message, true);
  }
}

// An object's changes from the store's history, newest first: each field's value before (struck
// through) and after.
function showObjectHistory(history) {
  const table = document.getElementById("history");
  document.getElementById("history-none").hidden = history !== null;
  table.hidden = history === null;
  if (history === null) return;
  const body = table.querySelector("tbody");
  body.replaceChildren();
  for (const change of history) {
    const row = el("tr");
    row.dataset.version = String(change.version);
    cell(row, String(change.version));
    cell(row, new Date(change.time).toISOString());
    cell(row, change.author || "");
    const diff = el("td");
    diff.className = "diff";
    diff.appendChild(el("strong", change.op));
    for (const field of change.fields) {
      const line = el("div");
      line.dataset.field = field.name;
      line.append(field.name + ": ");
      if (field.hasBefore) line.appendChild(el("del", JSON.stringify(field.before)));
      if (field.hasBefore && field.hasAfter) line.append(" → ");
      if (field.hasAfter) line.appendChild(el("ins", JSON.stringify(field.after)));
      diff.appendChild(line);
    }
    row.appendChild(diff);
    body.appendChild(row);
  }
}

// The schema: each type's fields, indexes, links (to click through) and history.
async function loadSchema() {
  try {
    const summary = await api("/api/summary");
    status("Version " + summary.version);
    document.getElementById("store").textContent = summary.path;
    const version = document.getElementById("schema-version");
    entry(version, "schema version", String(summary.schemaVersion));
    summary.migrations.forEach((name, n) => entry(version, "migration " + (n + 1), name));
    const holder = document.getElementById("schema-types");
    holder.replaceChildren();
    for (const type of summary.types) {
      const block = el("article");
      block.id = "type-" + type.name;
      block.dataset.type = type.name;
      const heading = el("h3");
      heading.append(link(type.name, "/type", { name: type.name }), " (version " + type.version + ", " + type.objectCount + " objects)");
      block.appendChild(heading);
      const list = el("dl");
      entry(list, "primary key", type.primaryKey);
      entry(list, "fields", type.fields.join(", "));
      for (const field of Object.keys(type.defaults)) entry(list, "default of " + field, type.defaults[field]);
      for (const index of type.indexes) entry(list, "index " + index.name, index.fields.join(", ") + (index.isUnique ? " (unique)" : "") + " · " + index.entryCount + " entries");
      for (const l of type.links) {
        const dd = el("dd");
        dd.append(l.field + " → ", link(l.target, "/type", { name: l.target }), ", " + (l.isToMany ? "to-many" : "to-one") + ", on delete " + l.rule);
        list.append(el("dt", "link"), dd);
      }
      for (const event of type.history) entry(list, "schema " + event.schemaVersion, "type version " + event.typeVersion + ", " + event.event + ": " + event.fields.join(", "));
      block.appendChild(list);
      holder.appendChild(block);
    }
  } catch (error) {
    status("The store cannot be read: " + error.message, true);
  }
}

// The change log, newest first, a page at a time.
async function loadChanges(before) {
  try {
    const query = before ? { before: String(before) } : {};
    const result = await api("/api/changes", query);
    if (!result.hasChangeLog) { status("The store keeps no change log."); return; }
    status("Version " + result.version);
    document.getElementById("log-range").textContent = result.firstAvailable
      ? "The log holds versions " + result.firstAvailable + " to " + result.version + "." : "";
    const body = document.querySelector("#changes tbody");
    body.replaceChildren();
    for (const commit of result.commits) {
      const row = el("tr");
      row.dataset.version = commit.version;
      cell(row, String(commit.version));
      cell(row, new Date(commit.time).toISOString());
      cell(row, commit.changes.map(describe).join("; "));
      body.appendChild(row);
    }
    const older = document.getElementById("older");
    older.disabled = !result.older || result.older <= (result.firstAvailable || 1);
    older.onclick = () => loadChanges(result.older);
  } catch (error) {
    status(error.message, true);
  }
}

// Check: the file's pages, then the records and indexes.
async function runCheck() {
  const button = document.getElementById("run");
  button.disabled = true;
  status("Checking…");
  try {
    const result = await api("/api/check");
    const pages = document.getElementById("pages");
    pages.replaceChildren(el("h3", "Pages"));
    const facts = el("dl");
    entry(facts, "pages in use", String(result.pages.pagesInUse));
    entry(facts, "free pages", String(result.pages.freePages));
    entry(facts, "databases", String(result.pages.databases));
    pages.appendChild(facts);
    const problems = el("ul", undefined, "problems");
    for (const problem of result.pages.problems) problems.appendChild(el("li", "data.mdb: " + problem));
    pages.appendChild(problems);
    const records = document.getElementById("records-check");
    records.replaceChildren(el("h3", "Records and indexes"));
    if (!result.records) {
      records.appendChild(el("p", "Not read: the file is damaged."));
      status(result.pages.problems.length + (result.pages.truncated ? "+" : "") + " page problems: the file is damaged", true);
      return;
    }
    const list = el("ul", undefined, "problems");
    for (const problem of result.records.problems) list.appendChild(el("li", problem));
    records.append(el("p", result.records.types + " types, " + result.records.records + " records, " + result.records.indexEntries + " index entries checked"), list);
    const count = result.records.problems.length;
    if (count === 0) status("ok: no problems"); else status(count + (count === 1 ? " problem" : " problems"), true);
  } catch (error) {
    status(error.message, true);
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  switch (page) {
  case "summary":
    live.handlers.push(batch => { showCommits(batch); loadSummary(); });
    loadSummary();
    break;
  case "type": startTable(); break;
  case "object": loadObject(); break;
  case "schema": loadSchema(); break;
  case "changes":
    document.getElementById("newest").onclick = () => loadChanges();
    loadChanges();
    break;
  case "check":
    status("Ready.");
    document.getElementById("run").addEventListener("click", runCheck);
    break;
  }
  follow();
});
