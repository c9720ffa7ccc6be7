// The Tugboat console's page: plain JavaScript modules, SVG, no build
// step. The state is the feed's summaries (GET /api/feed, Server-Sent
// Events: a snapshot, then batches of changes); each view draws from it,
// at most once per animation frame. The flows ask the server for what
// the CLI's trace computes (/api/flow/...), again when their objects change.

const $ = (sel, root = document) => root.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids) if (c !== null && c !== undefined) e.append(c);
  return e;
};
// put replaces a node's children, skipping null and undefined.
const put = (node, ...kids) => node.replaceChildren(...kids.filter((k) => k !== null && k !== undefined));
const SVG = "http://www.w3.org/2000/svg";
const svgEl = (tag, attrs = {}, text) => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};

// ---- state -------------------------------------------------------------

const state = {
  objects: {}, // kind -> Map(key -> summary)
  status: {}, // kind -> {synced, forbidden, error}
  connected: false,
};
const kind = (k) => (state.objects[k] ??= new Map());
const dirty = new Set(); // kinds changed since the last render
const changedPods = new Set(); // pod keys changed since the last render
let fullRender = true;

// Exposed for the browser tests and the benchmark. marks are
// performance.now() times of the first snapshot's way: feed opened,
// snapshot received (its bytes in), parsed, applied; the render that
// drew every chip started and ended.
window.__console = { state, snapshots: 0, batches: 0, snapshotAt: 0, firstRenderMs: 0, lastRenderMs: 0, renders: 0, marks: {}, rollouts: {} };
const mark = (name) => { window.__console.marks[name] ??= performance.now(); };

function applySnapshot(snap) {
  state.objects = {};
  for (const [k, m] of Object.entries(snap.objects || {})) state.objects[k] = new Map(Object.entries(m || {}));
  state.status = snap.status || {};
  fullRender = true;
  window.__console.snapshots++;
  window.__console.snapshotAt = performance.now();
  scheduleRender();
}

function applyBatch(batch) {
  for (const ch of batch) {
    if (ch.k === "_kind") { state.status[ch.id] = ch.o; dirty.add("_kind"); continue; }
    if (ch.o === undefined || ch.o === null) kind(ch.k).delete(ch.id);
    else kind(ch.k).set(ch.id, ch.o);
    dirty.add(ch.k);
    if (ch.k === "pods") changedPods.add(ch.id);
  }
  window.__console.batches++;
  scheduleRender();
}

function connect() {
  mark("feedOpened");
  const es = new EventSource("api/feed");
  es.addEventListener("snapshot", (e) => {
    mark("snapshotReceived");
    const snap = JSON.parse(e.data);
    mark("snapshotParsed");
    state.connected = true;
    setConn();
    applySnapshot(snap);
    mark("snapshotApplied");
  });
  es.addEventListener("batch", (e) => applyBatch(JSON.parse(e.data)));
  es.onerror = () => { state.connected = false; setConn(); };
}

function setConn() {
  const pods = kind("pods").size, nodes = kind("nodes").size;
  $("#conn").textContent = state.connected ? `live · ${nodes} nodes · ${pods} pods` : "disconnected: retrying…";
}

// The token: a console beyond loopback answers 401 until the page logs
// in. The first request is the one the page needs anyway (the demo's,
// 404 without --demo), so the feed opens one round trip after load;
// ensureLogin returns its answer.
async function ensureLogin() {
  const r = await fetch("api/demo");
  if (r.status !== 401) return r;
  const dlg = $("#token-dialog");
  dlg.showModal();
  await new Promise((resolve) => {
    $("#token-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const body = new URLSearchParams({ token: $("#token-input").value });
      const res = await fetch("api/login", { method: "POST", body });
      if (res.ok) { dlg.close(); resolve(); } else { $("#token-error").textContent = await res.text(); }
    });
  });
  return fetch("api/demo");
}

// ---- filters -------------------------------------------------------------

function parseSelector(s) {
  const reqs = [];
  for (const part of s.split(",").map((x) => x.trim()).filter(Boolean)) {
    let m;
    if ((m = part.match(/^([^!=]+)!=(.*)$/))) reqs.push((l) => l[m[1].trim()] !== m[2].trim());
    else if ((m = part.match(/^([^=]+)==?(.*)$/))) reqs.push((l) => l[m[1].trim()] === m[2].trim());
    else if (part.startsWith("!")) reqs.push((l) => !(part.slice(1) in l));
    else reqs.push((l) => part in l);
  }
  return (labels) => reqs.every((r) => r(labels || {}));
}
let nsFilter = "", labelMatch = () => true, ownerFilter = null;
const nsOK = (o) => !nsFilter || o.ns === nsFilter;
const podVisible = (p) => nsOK(p) && labelMatch(p.labels) && (!ownerFilter || ownerOf(p).includes(ownerFilter));

// ownerOf is a pod's owner chain as "Kind/ns/name" keys, nearest first.
function ownerOf(p) {
  const out = [];
  let o = p.owner;
  while (o && out.length < 4) {
    const key = `${o.kind}/${p.ns}/${o.name}`;
    out.push(key);
    o = kind("workloads").get(key)?.owner;
  }
  return out;
}

// ---- status words and glyphs (never colour alone) ---------------------------

function podLook(p) {
  if (p.deleting) return { cls: "s-wait", glyph: "⌫", word: "Terminating" };
  switch (p.phase) {
    case "Running":
      return p.isReady ? { cls: "s-ok", glyph: "✓", word: p.status } : { cls: "s-warn", glyph: "◐", word: p.status === "Running" ? "Running, not ready" : p.status };
    case "Succeeded": return { cls: "s-done", glyph: "■", word: p.status };
    case "Failed": return { cls: "s-bad", glyph: "✗", word: p.status };
    case "Pending": {
      const bad = /Err|BackOff|Invalid|Failed|Unschedulable/.test(p.status);
      return bad ? { cls: "s-bad", glyph: "✗", word: p.status } : { cls: "s-wait", glyph: "…", word: p.node ? p.status : "Pending (unscheduled)" };
    }
  }
  return { cls: "s-wait", glyph: "?", word: p.status || "Unknown" };
}

const stageLook = {
  done: { fill: "#d8f0de", stroke: "#0f5a26", glyph: "✓" },
  failed: { fill: "#fde0de", stroke: "#8a1c14", glyph: "✗" },
  waiting: { fill: "#e3e9f2", stroke: "#2c3e57", glyph: "…" },
  unknown: { fill: "#fff0c2", stroke: "#6b4a00", glyph: "?" },
  skipped: { fill: "#f0f0f0", stroke: "#6a737d", glyph: "–" },
};

const fmtTime = (t) => (t ? new Date(t).toLocaleTimeString([], { hour12: false }) + "." + String(new Date(t).getMilliseconds()).padStart(3, "0") : "");
const fmtDelta = (s) => (s === undefined || s === null ? "" : (s >= 0 ? "+" : "") + (Math.abs(s) < 1 ? Math.round(s * 1000) + "ms" : s.toFixed(1) + "s"));
const mib = (b) => (b / 1048576).toFixed(0) + "Mi";

function arrowDefs(id) {
  const defs = svgEl("defs");
  const m = svgEl("marker", { id, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
  m.append(svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#4d5966" }));
  defs.append(m);
  return defs;
}

// ---- rendering -------------------------------------------------------------

// Changes are drawn once a frame (scheduleRender); a route change is
// drawn at once (renderNow), so a view is never shown, or clicked in,
// with the layout it had when it was last hidden.
let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { if (renderQueued) renderNow(); });
}
// idle tells a test that nothing waits to be drawn: what it clicks now
// is where the page shows it.
window.__console.idle = () => !renderQueued;

function renderNow() {
  renderQueued = false;
  const t0 = performance.now(), full = fullRender;
  render();
  const now = performance.now(), ms = now - t0;
  const c = window.__console;
  c.renders++;
  c.lastRenderMs = ms;
  if (!full) c.maxBatchRenderMs = Math.max(c.maxBatchRenderMs || 0, ms);
  c.chips = document.querySelectorAll(".chip").length;
  if (!c.renderedAt && state.status.pods?.synced && kind("pods").size && c.chips >= kind("pods").size) {
    c.renderedAt = now; // since navigation started
    c.firstRenderMs = now - c.snapshotAt; // since the snapshot arrived
    c.marks.renderStart = t0;
    c.marks.renderEnd = now;
  }
}

function render() {
  setConn();
  renderNamespaces();
  const v = route().view;
  if (v === "cluster") renderCluster();
  else { fullRender = fullRender || dirty.has("pods") || dirty.has("nodes"); }
  if (v === "pod") renderPodView();
  if (v === "service") renderServiceView();
  if (v === "events") renderEvents();
  dirty.clear();
  changedPods.clear();
}

function renderNamespaces() {
  const sel = $("#ns-filter");
  const names = [...kind("namespaces").values()].map((n) => n.name).sort();
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (names.join() === have.join()) return;
  const cur = sel.value;
  put(sel, el("option", { value: "", text: "all" }), ...names.map((n) => el("option", { value: n, text: n })));
  sel.value = names.includes(cur) ? cur : "";
}

// Cluster view: a panel per node (and one for unscheduled pods). A full
// render builds each panel's chips as one HTML string (one parse per
// panel, not 5,000 × 4 createElement and appends); a batch touches only
// the chips whose pod changed, and a panel's head only when its text
// changed. One click listener on #nodes serves every chip (delegated).
// Panels are CSS-contained (contain: content in style.css): a changed
// chip relayouts and repaints its panel only.
const nodePanels = new Map(); // node name ("" unscheduled) -> {root, head, facts, bars, chips, sig}
const chipOf = new Map(); // pod key -> element

// esc escapes text for HTML (names rarely need it: test before replacing).
const escAny = /[&<>"']/, escAll = /[&<>"']/g, escMap = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const esc = (s) => { s = String(s ?? ""); return escAny.test(s) ? s.replace(escAll, (ch) => escMap[ch]) : s; };

function nodePanel(name) {
  let np = nodePanels.get(name);
  if (np) return np;
  const head = el("h3");
  const facts = el("p", { class: "facts" });
  const bars = el("div");
  const chips = el("div", { class: "chips", role: "list", "aria-label": name ? `pods on ${name}` : "unscheduled pods" });
  const root = el("section", { class: "node", "data-node": name, "aria-label": name ? `node ${name}` : "unscheduled" }, head, facts, bars, chips);
  np = { root, head, facts, bars, chips, sig: "" };
  nodePanels.set(name, np);
  return np;
}

// renderNodePanel draws a panel's head, facts and bars (pods: the
// node's pod summaries), and leaves them alone when their text is the
// same as last time.
function renderNodePanel(name, pods) {
  const np = nodePanel(name);
  const n = kind("nodes").get(name);
  let head, facts, bars = "";
  if (!name) {
    head = `<span>Not scheduled</span><span class="badge warn">… ${pods.length} waiting for the scheduler</span>`;
    facts = "pods without spec.nodeName";
  } else {
    const ready = n?.ready === "True";
    head = `<span>${esc(name)}</span><span class="badge ${ready ? "ok" : "bad"}">${ready ? "✓ Ready" : n ? `✗ NotReady (${esc(n.ready)})` : "? no Node object"}</span>` +
      (n?.pressure || []).map((p) => `<span class="badge warn">⚠ ${esc(p)}</span>`).join("") +
      (n?.unschedulable ? `<span class="badge warn">⛔ cordoned</span>` : "");
    const f = [];
    if (n?.ip) f.push("IP " + n.ip);
    if (n?.podCIDR) f.push("pod CIDR " + n.podCIDR);
    if (n?.taints?.length) f.push("taints " + n.taints.join(", "));
    f.push(`${pods.length} pods`);
    facts = f.join(" · ");
    if (n) {
      let cpu = 0, mem = 0;
      for (const p of pods) if (p.phase !== "Succeeded" && p.phase !== "Failed") { cpu += p.cpu || 0; mem += p.mem || 0; }
      const pct = (v, t) => (t ? Math.min(100, Math.round((100 * v) / t)) : 0);
      const c = pct(cpu, n.cpu), m = pct(mem, n.mem);
      bars = `<div class="facts">cpu requested ${cpu}m of ${n.cpu}m allocatable (${c}%)</div>` +
        `<div class="bar" role="img" aria-label="cpu ${c}%"><span style="width:${c}%"></span></div>` +
        `<div class="facts">memory requested ${mib(mem)} of ${mib(n.mem)} allocatable (${m}%)</div>` +
        `<div class="bar" role="img" aria-label="memory ${m}%"><span style="width:${m}%"></span></div>`;
    }
    np.root.classList.toggle("not-ready", !ready);
  }
  const sig = head + "\n" + facts + "\n" + bars;
  if (sig !== np.sig) {
    np.sig = sig;
    np.head.innerHTML = head;
    np.facts.textContent = facts;
    np.bars.innerHTML = bars;
  }
  return np;
}

// chipLook is what a pod's chip shows: class, glyph, STATUS word and
// the longer text for its title and accessible name.
function chipLook(p) {
  const look = podLook(p);
  return {
    cls: `chip ${look.cls}${p.deleting ? " deleting" : ""}`, glyph: look.glyph, word: look.word,
    title: `${p.ns}/${p.name}: ${look.word}, ready ${p.ready}${p.node ? " on " + p.node : ""}${p.ip ? ", IP " + p.ip : ""}${p.restarts ? ", restarts " + p.restarts : ""}`,
  };
}

function chipHTML(p, key) {
  const l = chipLook(p), title = esc(l.title);
  return `<button type="button" class="${l.cls}" role="listitem" tabindex="-1" data-pod="${esc(key)}" data-phase="${esc(p.phase)}" data-status="${esc(l.word)}" data-node="${esc(p.node)}" title="${title}" aria-label="pod ${title}"${podVisible(p) ? "" : " hidden"}><span class="glyph" aria-hidden="true">${l.glyph}</span><span class="name">${esc(p.name)}</span><span class="st">${esc(l.word)}</span></button>`;
}

// updateChip brings an existing chip up to date, writing only what changed.
function updateChip(c, p) {
  const l = chipLook(p);
  if (c.className !== l.cls) c.className = l.cls;
  if (c.dataset.phase !== p.phase) c.dataset.phase = p.phase;
  if (c.dataset.status !== l.word) { c.dataset.status = l.word; c.children[2].textContent = l.word; }
  if (c.dataset.node !== (p.node || "")) c.dataset.node = p.node || "";
  if (c.children[0].textContent !== l.glyph) c.children[0].textContent = l.glyph;
  if (c.children[1].textContent !== p.name) c.children[1].textContent = p.name;
  if (c.title !== l.title) { c.title = l.title; c.setAttribute("aria-label", "pod " + l.title); }
  const hidden = !podVisible(p);
  if (c.hidden !== hidden) c.hidden = hidden;
}

// chip returns the pod's chip, made if it has none, up to date.
function chip(p, key) {
  let c = chipOf.get(key);
  if (c) { updateChip(c, p); return c; }
  const t = document.createElement("template");
  t.innerHTML = chipHTML(p, key);
  c = t.content.firstChild;
  chipOf.set(key, c);
  return c;
}

function podsByNode() {
  const by = new Map();
  for (const name of kind("nodes").keys()) by.set(name, []);
  for (const [key, p] of kind("pods")) {
    const n = p.node || "";
    if (!by.has(n)) by.set(n, []);
    by.get(n).push([key, p]);
  }
  return by;
}

// Chips sort by their owner, then by key (byte order, as tugctl get does).
const cmpStr = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
function sortByOwner(list) {
  const keyed = list.map((x) => [ownerOf(x[1])[0] || "", x]);
  keyed.sort((a, b) => cmpStr(a[0], b[0]) || cmpStr(a[1][0], b[1][0]));
  return keyed.map((x) => x[1]);
}

function renderCluster() {
  const nodes = $("#nodes");
  if (fullRender) {
    const focused = document.activeElement?.classList.contains("chip") ? document.activeElement.dataset.pod : null;
    const by = podsByNode();
    const names = [...by.keys()].sort((a, b) => (a === "") - (b === "") || cmpStr(a, b));
    const panels = [];
    chipOf.clear();
    for (const name of names) {
      const list = sortByOwner(by.get(name));
      const np = renderNodePanel(name, list.map((x) => x[1]));
      np.chips.innerHTML = list.map(([k, p]) => chipHTML(p, k)).join("");
      for (const c of np.chips.children) chipOf.set(c.dataset.pod, c);
      panels.push(np.root);
    }
    for (const [name, np] of nodePanels) if (!by.has(name)) { nodePanels.delete(name); np.root.remove(); }
    put(nodes, ...panels);
    const f = focused && chipOf.get(focused);
    if (f) { f.tabIndex = 0; f.focus(); }
    fullRender = false;
  } else if (changedPods.size || dirty.has("nodes")) {
    const touched = new Set();
    for (const key of changedPods) {
      const p = kind("pods").get(key);
      const old = chipOf.get(key);
      if (!p) { if (old) { touched.add(old.dataset.node); old.remove(); chipOf.delete(key); } continue; }
      const was = old?.dataset.node;
      const c = chip(p, key);
      const np = nodePanel(p.node || "");
      if (!np.root.isConnected) nodes.append(np.root);
      if (c.parentElement !== np.chips) {
        np.chips.append(c);
        if (was !== undefined && was !== (p.node || "")) { c.classList.add("moved"); }
      }
      touched.add(was ?? ""); touched.add(p.node || "");
    }
    if (dirty.has("nodes")) for (const n of kind("nodes").keys()) touched.add(n);
    const by = podsByNode();
    for (const n of touched) if (n !== undefined && (by.has(n) || n === "")) {
      const list = by.get(n) || [];
      const np = renderNodePanel(n, list.map((x) => x[1]));
      if (!np.root.isConnected) nodes.append(np.root);
    }
    const unsched = nodePanels.get("");
    if (unsched && unsched.chips.children.length === 0) unsched.root.remove();
  }
  changedPods.clear();
  // One chip is in the tab order (roving tabindex); arrows move from it.
  if (!nodes.querySelector('.chip[tabindex="0"]:not([hidden])')) {
    const first = nodes.querySelector(".chip:not([hidden])");
    if (first) first.tabIndex = 0;
  }
  renderWorkloads();
  renderConfig();
  renderDemo();
  $("#legend").textContent = "Chips: ✓ Running and ready · ◐ running, not ready · … pending · ✗ failed or stuck · ■ completed · ⌫ terminating. Arrow keys move between pods, Enter opens a pod's creation flow.";
}

function renderWorkloads() {
  const box = $("#workloads");
  const ws = [...kind("workloads").entries()].filter(([, w]) => nsOK(w));
  const forb = Object.entries(state.status).filter(([k, s]) => k.startsWith("workloads/") && s.forbidden).map(([k]) => k.split("/")[1]);
  const children = new Map();
  for (const [key, w] of ws) {
    const parent = w.owner ? `${w.owner.kind}/${w.ns}/${w.owner.name}` : "";
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push([key, w]);
  }
  // A ReplicaSet of a Deployment is its new one when their revisions
  // match, an old one otherwise; while both old and new have replicas, the
  // Deployment's line says the rolling update is trading pods between them.
  const rsRole = (w, parent) => (w.kind === "ReplicaSet" && parent?.kind === "Deployment" && w.revision
    ? ` (revision ${w.revision}, ${w.revision === parent.revision ? "new" : "old"})` : "");
  const rollout = (key, w) => {
    if (w.kind !== "Deployment") return null;
    const rss = (children.get(key) || []).map(([, r]) => r).filter((r) => r.kind === "ReplicaSet" && (r.desired > 0 || r.ready > 0));
    const cur = rss.filter((r) => r.revision === w.revision), old = rss.filter((r) => r.revision !== w.revision);
    if (!cur.length || !old.length) return null;
    const say = (r) => `replicaset/${r.name} ${r.ready}/${r.desired}`;
    const text = `⇄ rolling update: new ${cur.map(say).join(", ")} ← old ${old.map(say).join(", ")}`;
    const seen = (window.__console.rollouts[key] ||= []); // what a test reads: each step once, the last 50
    if (seen.at(-1) !== text) { seen.push(text); if (seen.length > 50) seen.shift(); }
    return el("p", { class: "summary rollout", "data-rollout": key, text });
  };
  const list = (parent) => {
    const items = (children.get(parent) || []).sort((a, b) => a[0].localeCompare(b[0]));
    if (!items.length) return null;
    const pw = kind("workloads").get(parent);
    return el("ul", {}, ...items.map(([key, w]) => el("li", { "data-workload": key },
      el("button", { type: "button", class: "link", "aria-pressed": ownerFilter === key ? "true" : "false",
        onclick: () => { ownerFilter = ownerFilter === key ? null : key; fullRender = true; scheduleRender(); } },
        `${w.kind} ${w.ns}/${w.name} ${w.ready === w.desired ? "✓" : "…"} ${w.ready}/${w.desired} ready${rsRole(w, pw)}`),
      ...[rollout(key, w), list(key)].filter(Boolean))));
  };
  put(box, list("") || el("p", { class: "summary", text: "no workloads" }),
    ...(forb.length ? [el("p", { class: "forbidden", text: `✗ not allowed to list: ${forb.join(", ")}` })] : []),
    ...(ownerFilter ? [el("p", { class: "summary", text: `showing only the pods of ${ownerFilter} (click it again for all)` })] : []));
}

function renderConfig() {
  const box = $("#config");
  const section = (k, title) => {
    const st = state.status[k] || {};
    if (st.forbidden) return el("div", { "data-kind": k }, el("strong", { text: title + ": " }), el("span", { class: "forbidden", text: "✗ forbidden — " + st.forbidden }));
    const names = [...kind(k).values()].filter(nsOK).map((o) => `${o.ns}/${o.name}${o.type ? " (" + o.type + ")" : ""}`).sort();
    return el("div", { "data-kind": k }, el("strong", { text: `${title} (${names.length})` }),
      el("ul", {}, ...names.slice(0, 50).map((n) => el("li", { text: n }))), names.length > 50 ? el("p", { text: `… and ${names.length - 50} more` }) : null);
  };
  put(box, section("secrets", "Secrets"), section("configmaps", "ConfigMaps"));
}

// ---- --demo: the sample workload's way, told step by step ----------------------

let demoInfo = null;

function renderDemo() {
  const box = $("#demo");
  if (!demoInfo) { box.hidden = true; return; }
  const ns = demoInfo.namespace, dep = `Deployment/${ns}/${demoInfo.deployment}`;
  const d = kind("workloads").get(dep);
  const rss = [...kind("workloads").entries()].filter(([, w]) => w.kind === "ReplicaSet" && w.ns === ns && w.owner?.kind === "Deployment" && w.owner.name === demoInfo.deployment);
  const pods = [...kind("pods").entries()].filter(([, p]) => p.ns === ns && ownerOf(p).includes(dep) && !p.deleting);
  const want = d?.desired ?? 0;
  const eps = kind("endpoints").get(`${ns}/${demoInfo.service}`);
  const svc = kind("services").get(`${ns}/${demoInfo.service}`);
  const readyEps = (eps?.addresses || []).filter((a) => a.ready);
  const list = (xs) => xs.slice(0, 4).join(", ") + (xs.length > 4 ? ", …" : "");
  const steps = [
    [!!d, `You applied deployment/${demoInfo.deployment}: the apiserver authenticated you, checked RBAC, validated and defaulted it, and stored it in etcd.`],
    [rss.length > 0 && pods.length >= want && want > 0, `The controller-manager's Deployment controller made ${rss.map(([, w]) => "replicaset/" + w.name).join(", ") || "a ReplicaSet"}, and the ReplicaSet controller made ${pods.length} of ${want} pods (no node yet).`],
    [pods.length >= want && want > 0 && pods.every(([, p]) => p.node), `The scheduler filtered and scored the nodes and bound each pod: ${list(pods.filter(([, p]) => p.node).map(([, p]) => p.name + " → " + p.node))}.`],
    [pods.length >= want && want > 0 && pods.every(([, p]) => p.ip), `Each node's kubelet saw its pods; the runtime made their sandboxes and the CNI gave them IPs: ${list(pods.filter(([, p]) => p.ip).map(([, p]) => p.ip))}.`],
    [pods.length >= want && want > 0 && pods.every(([, p]) => p.phase === "Running"), `The runtime pulled (or found) the image and started the containers: the pods are Running.`],
    [pods.length >= want && want > 0 && pods.every(([, p]) => p.isReady), `The kubelets' readiness probes pass: ${pods.filter(([, p]) => p.isReady).length}/${want} ready, reported back to the apiserver.`],
    [want > 0 && readyEps.length >= want, `The Endpoints controller lists them in service/${demoInfo.service}: ${demoInfo.service}.${ns}.svc resolves to ${svc?.clusterIP || "its ClusterIP"}, and each node's proxy sends its connections to ${readyEps.length} ready endpoints.`],
  ];
  let reached = true;
  put(box, el("strong", { text: `Demo: deployment/${demoInfo.deployment} and service/${demoInfo.service} in namespace ${ns}` }),
    el("ol", {}, ...steps.map(([done, text], i) => {
      const on = reached && done;
      reached = on;
      return el("li", { class: on ? "done" : "waiting", "data-step": i + 1 }, (on ? "✓ " : "… ") + text);
    })),
    el("p", {}, "Follow one pod: ", ...pods.slice(0, 1).map(([k]) => el("a", { href: `#/pod/${k}`, text: "its creation flow" })), " · the Service: ",
      el("a", { href: `#/service/${ns}/${demoInfo.service}`, text: "its communication flow" })));
  box.hidden = false;
}

// ---- creation flow ------------------------------------------------------------

let podFlowKey = "", podFlowTimer = 0, podFlowSeq = 0;

function renderPodView() {
  const dl = $("#pod-list");
  if (dl.dataset.size !== String(kind("pods").size) || dl.dataset.ns !== nsFilter) {
    dl.dataset.size = String(kind("pods").size);
    dl.dataset.ns = nsFilter;
    put(dl, ...[...kind("pods").keys()].filter((k) => nsOK(kind("pods").get(k))).slice(0, 2000).map((k) => el("option", { value: k })));
  }
  const key = route().arg;
  if (!key) { $("#pod-title").textContent = "Choose a pod (or Enter on a chip in the cluster view)"; return; }
  if (key !== podFlowKey) { podFlowKey = key; $("#pod-pick").value = key; $("#pod-describe-out").hidden = true; loadPodFlow(); return; }
  if (changedPods.has(key) || dirty.has("events")) { clearTimeout(podFlowTimer); podFlowTimer = setTimeout(loadPodFlow, 300); }
}

async function loadPodFlow() {
  const key = podFlowKey, seq = ++podFlowSeq;
  const [ns, name] = key.split("/");
  const r = await fetch(`api/flow/pod/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
  if (seq !== podFlowSeq) return;
  if (!r.ok) { $("#pod-title").textContent = `pod ${key}: ${await r.text()}`; put($("#pod-flow")); return; }
  drawPodFlow(await r.json());
}

function drawPodFlow(f) {
  const t = f.trace;
  $("#pod-title").textContent = `Creation flow of pod ${t.namespace}/${t.name}`;
  $("#pod-summary").textContent = t.summary;
  const n = f.stages.length, w = 132, gap = 22, h = 118;
  const svg = svgEl("svg", { viewBox: `0 0 ${n * (w + gap) + 10} ${h + 20}`, role: "group", "aria-label": "stages" });
  svg.append(arrowDefs("arrow"));
  f.stages.forEach((s, i) => {
    const x = 10 + i * (w + gap), look = stageLook[s.status] || stageLook.waiting;
    const failed = f.failed === s.id;
    const g = svgEl("g", { class: `stage st-${s.status}`, "data-stage": s.id, "data-status": s.status, "data-order": i, "data-time": s.time || "", tabindex: "0", role: "img",
      "aria-label": `${s.title}: ${s.status}${s.time ? " at " + fmtTime(s.time) : ""}${s.detail ? " — " + s.detail : ""}` });
    g.append(svgEl("rect", { x, y: 10, width: w, height: h, rx: 8, fill: look.fill, stroke: look.stroke, "stroke-width": failed ? 4 : 1.5, "stroke-dasharray": s.status === "waiting" ? "6 4" : null }));
    g.append(svgEl("text", { x: x + 8, y: 32, "font-size": 15, "font-weight": 700, fill: look.stroke }, `${look.glyph} ${s.title}`));
    g.append(svgEl("text", { x: x + 8, y: 50, "font-size": 11, fill: "#1d232a" }, s.layer));
    g.append(svgEl("text", { x: x + 8, y: 70, "font-size": 12, "font-weight": 600, fill: look.stroke }, s.status));
    if (s.time) g.append(svgEl("text", { x: x + 8, y: 88, "font-size": 11, fill: "#1d232a" }, fmtTime(s.time)));
    const prev = f.stages.slice(0, i).reverse().find((p) => p.time);
    if (s.time && prev) g.append(svgEl("text", { x: x + 8, y: 104, "font-size": 11, fill: "#4d5966" }, fmtDelta((new Date(s.time) - new Date(prev.time)) / 1000)));
    g.append(svgEl("title", {}, s.detail || s.title));
    svg.append(g);
    if (i < n - 1) svg.append(svgEl("line", { x1: x + w + 2, y1: 10 + h / 2, x2: x + w + gap - 2, y2: 10 + h / 2, stroke: "#4d5966", "stroke-width": 2, "marker-end": "url(#arrow)" }));
  });
  put($("#pod-flow"), svg);
  const fd = $("#pod-finding");
  fd.hidden = false;
  if (t.ok) { fd.className = "finding ok"; put(fd, `✓ Every stage is done: ${t.summary}`); }
  else {
    fd.className = "finding";
    put(fd, el("strong", { text: `✗ Stopped at "${f.failed || t.stuck_at}" — layer ${t.layer}, look at the ${t.component}${t.node ? " on " + t.node : ""}` }), el("br"),
      el("span", { text: `Reason: ${t.reason || "-"}` }), el("br"), el("span", { class: "message", text: `Message: ${t.message || "-"}` }),
      t.hint ? el("div", {}, "Next: ", el("code", { class: "next", text: t.hint })) : null);
  }
  put($("#pod-hops"), el("tr", {}, ...["hop", "component", "node", "time", "since prev", "status", "message"].map((x) => el("th", { text: x }))),
    ...t.hops.map((hp) => el("tr", { class: hp.status === "failed" ? "warning" : null }, el("td", { text: hp.title }), el("td", { text: hp.component }),
      el("td", { text: hp.node || "" }), el("td", { text: fmtTime(hp.time) }), el("td", { text: fmtDelta(hp.since_previous_seconds) }),
      el("td", { text: `${(stageLook[hp.status] || stageLook.waiting).glyph} ${hp.status}${hp.reason && hp.status !== "done" ? ": " + hp.reason : ""}` }), el("td", { text: hp.message || "" }))));
}

// ---- communication flow ----------------------------------------------------------

let svcKey = "", svcWhySeq = 0, svcWhyTimer = 0;

function renderServiceView() {
  const dl = $("#svc-list");
  if (dirty.has("services") || !dl.children.length) put(dl, ...[...kind("services").keys()].map((k) => el("option", { value: k })));
  const il = $("#ing-list");
  if (dirty.has("ingresses") || !il.children.length) put(il, ...[...kind("ingresses").keys()].map((k) => el("option", { value: k })));
  const key = route().arg;
  if (!key) { $("#svc-title").textContent = "Choose a Service"; return; }
  const s = kind("services").get(key);
  if (key !== svcKey) { svcKey = key; $("#svc-pick").value = key; put($("#svc-trace-out")); loadServiceWhy(); }
  else if (dirty.has("endpoints") || dirty.has("pods")) { clearTimeout(svcWhyTimer); svcWhyTimer = setTimeout(loadServiceWhy, 300); }
  if (!s) { $("#svc-title").textContent = `service ${key}: not found (or not visible to you)`; return; }
  drawServiceFlow(s, kind("endpoints").get(key));
}

async function loadServiceWhy() {
  const seq = ++svcWhySeq;
  const [ns, name] = svcKey.split("/");
  const r = await fetch(`api/flow/service/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
  if (seq !== svcWhySeq || !r.ok) return;
  const f = await r.json();
  const p = $("#svc-why");
  p.hidden = !f.whyReason;
  p.textContent = f.whyReason ? `✗ No ready endpoint — ${f.whyReason}: ${f.whyMessage}` : "";
  p.dataset.dns = f.dnsName;
  $("#svc-title").dataset.dns = f.dnsName;
  drawServiceFlow(kind("services").get(svcKey), kind("endpoints").get(svcKey));
}

function drawServiceFlow(s, eps) {
  if (!s) return;
  const dns = $("#svc-title").dataset.dns || `${s.name}.${s.ns}.svc.cluster.local`;
  $("#svc-title").textContent = `Communication flow of service ${s.ns}/${s.name}`;
  const addrs = (eps?.addresses || []).slice().sort((a, b) => (a.pod || a.ip).localeCompare(b.pod || b.ip));
  // An endpoint's box has three lines (status, pod, address): a pod's
  // generated name does not fit beside its status in the box's width.
  const rows = Math.max(addrs.length, 1), rh = 60, h = Math.max(150, rows * rh + 40);
  const svg = svgEl("svg", { viewBox: `0 0 1180 ${h}`, role: "group", "aria-label": "communication flow" });
  svg.append(arrowDefs("arrow2"));
  const box = (x, y, w, bh, lines, look, attrs = {}) => {
    const g = svgEl("g", { tabindex: "0", role: "img", "aria-label": lines.join(", "), ...attrs });
    g.append(svgEl("rect", { x, y, width: w, height: bh, rx: 8, fill: look.fill, stroke: look.stroke, "stroke-width": 1.5 }));
    lines.forEach((l, i) => g.append(svgEl("text", { x: x + 8, y: y + 18 + i * 15, "font-size": i ? 11 : 13, "font-weight": i ? 400 : 700, fill: i ? "#1d232a" : look.stroke }, l)));
    svg.append(g);
    return g;
  };
  const arrow = (x1, y1, x2, y2) => svg.append(svgEl("line", { x1, y1, x2, y2, stroke: "#4d5966", "stroke-width": 2, "marker-end": "url(#arrow2)" }));
  const mid = h / 2, ok = stageLook.done, wait = stageLook.waiting;
  const ports = (s.ports || []).map((p) => `${p.port}/${p.protocol}${p.target ? "→" + p.target : ""}${p.nodePort ? " node " + p.nodePort : ""}`).join(", ");
  box(10, mid - 30, 150, 60, ["client pod", "any pod in the cluster"], wait);
  arrow(162, mid, 188, mid);
  const headless = s.clusterIP === "None";
  box(190, mid - 40, 260, 80, ["DNS name", dns, headless ? "answers: the endpoints' IPs" : `answers: ${s.clusterIP || "(no address)"}`, "served by the node's proxy"], ok, { "data-part": "dns" });
  arrow(452, mid, 478, mid);
  box(480, mid - 40, 220, 80, [s.type + " " + (s.clusterIP || ""), ports || "no ports", s.externalName ? "CNAME " + s.externalName : ""].filter(Boolean), ok, { "data-part": "clusterip" });
  arrow(702, mid, 728, mid);
  box(730, mid - 40, 180, 80, ["datapath", "nftables DNAT on the node", "to a ready endpoint (proxy)"], ok, { "data-part": "datapath" });
  if (!addrs.length) {
    box(950, mid - 30, 220, 60, ["✗ no endpoints", eps ? "none listed" : "no Endpoints object"], stageLook.failed, { "data-part": "endpoint-none" });
    arrow(912, mid, 948, mid);
  }
  addrs.forEach((a, i) => {
    const y = 20 + i * rh;
    const look = a.ready ? ok : stageLook.failed;
    box(950, y, 220, rh - 6, [a.ready ? "✓ ready" : "✗ not ready", a.pod || a.ip, `${a.ip}${a.node ? " on " + a.node : ""}`], look,
      { "data-part": "endpoint", "data-pod": a.pod || "", "data-ready": String(a.ready) });
    svg.append(svgEl("line", { x1: 912, y1: mid, x2: 948, y2: y + (rh - 6) / 2, stroke: a.ready ? "#4d5966" : "#8a1c14", "stroke-width": 2, "stroke-dasharray": a.ready ? null : "5 4", "marker-end": "url(#arrow2)" }));
  });
  put($("#svc-flow"), svg);
  put($("#svc-endpoints"), el("tr", {}, ...["endpoint", "pod", "node", "status"].map((x) => el("th", { text: x }))),
    ...addrs.map((a) => el("tr", { class: a.ready ? null : "warning", "data-pod": a.pod || "" }, el("td", { text: a.ip }), el("td", { text: a.pod || "" }), el("td", { text: a.node || "" }),
      el("td", { text: a.ready ? "✓ ready" : "✗ not ready" }))));
}

async function runServiceTrace() {
  const [ns, name] = svcKey.split("/");
  runTrace($("#svc-trace-out"), "service", ns, name, "tracing from every Ready node…");
}

// runIngressTrace is `tugctl trace ingress` for the Ingress picked: its
// class, address, TLS, rules, backends, endpoints and the proxies' Events.
async function runIngressTrace() {
  const [ns, name] = $("#ing-pick").value.trim().split("/");
  const out = $("#ing-trace-out");
  if (!ns || !name) { put(out, el("p", { class: "error", text: "pick an Ingress as namespace/name" })); return; }
  runTrace(out, "ingress", ns, name, "tracing the Ingress…");
}

// runTrace shows one `tugctl trace KIND ns/name` report (the shared
// diagnose package's, as the CLI prints it) in out.
async function runTrace(out, what, ns, name, busy) {
  put(out, el("p", { class: "summary", text: busy }));
  const r = await fetch(`api/trace/${what}/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
  if (!r.ok) { put(out, el("p", { class: "error", text: await r.text() })); return; }
  const t = await r.json();
  put(out, el("h2", { text: `tugctl trace ${what} ${ns}/${name}: ${t.ok ? "✓ every hop is done" : "✗ stopped at " + t.stuck_at}` }),
    el("table", { class: "hops" }, el("tr", {}, ...["hop", "node", "status", "message"].map((x) => el("th", { text: x }))),
      ...t.hops.map((hp) => el("tr", { class: hp.status === "failed" ? "warning" : null, "data-reason": hp.reason || "" }, el("td", { text: hp.title }), el("td", { text: hp.node || "" }),
        el("td", { text: hp.status + (hp.reason ? ": " + hp.reason : "") }), el("td", { text: hp.message || "" })))),
    t.ok ? null : el("p", { class: "finding", text: `layer ${t.layer}: ${t.reason} — ${t.message}${t.hint ? " — next: " + t.hint : ""}` }));
}

// ---- events --------------------------------------------------------------------

const layers = ["scheduler", "kubelet", "runtime", "CNI", "DNS", "proxy", "controllers", "apiserver"];
const layerOn = new Set(layers);

function renderEvents() {
  const q = $("#event-search").value.toLowerCase();
  const evs = [...kind("events").values()].filter((e) => nsOK(e) && layerOn.has(e.layer) &&
    (!q || `${e.reason} ${e.message} ${e.object} ${e.source}`.toLowerCase().includes(q)))
    .sort((a, b) => (b.time || "").localeCompare(a.time || "")).slice(0, 500);
  put($("#events tbody"), ...evs.map((e) => el("tr", { class: e.type === "Warning" ? "warning" : null, "data-layer": e.layer },
    el("td", { text: fmtTime(e.time) }), el("td", { text: e.layer }), el("td", { text: (e.type === "Warning" ? "⚠ " : "") + e.type }),
    el("td", { text: e.reason + (e.count > 1 ? ` ×${e.count}` : "") }), el("td", { text: `${e.kind.toLowerCase()}/${e.object}` }),
    el("td", { text: e.message }), el("td", { text: e.source + (e.host ? " (" + e.host + ")" : "") }))));
}

function setupLayers() {
  const fs = $("#layer-filter");
  for (const l of layers) {
    const cb = el("input", { type: "checkbox", checked: true, "data-layer": l, onchange: (e) => { e.target.checked ? layerOn.add(l) : layerOn.delete(l); renderEvents(); } });
    fs.append(el("label", {}, cb, " " + l));
  }
  $("#event-search").addEventListener("input", renderEvents);
}

// ---- metrics -------------------------------------------------------------------

async function loadMetrics() {
  if (route().view !== "metrics") return;
  const r = await fetch("api/metrics");
  if (!r.ok) return;
  const m = await r.json();
  put($("#charts"), ...(m.charts || []).map(drawChart));
  const notes = Object.entries(m.errors || {}).map(([c, e]) => `${c}: /metrics not read (${e})`);
  if (!Object.keys(m.urls || {}).length) notes.push("Component charts need --metrics apiserver=URL (and scheduler=URL); the others come from the watches.");
  $("#metrics-notes").textContent = notes.join(" · ");
}

function drawChart(c) {
  const w = 340, h = 120, s = c.samples || [];
  const vals = s.map((x) => x.v), max = Math.max(1e-9, ...vals), last = vals.at(-1) ?? 0;
  const svg = svgEl("svg", { viewBox: `0 0 ${w} ${h + 20}`, role: "img", "aria-label": `${c.name}: latest ${last.toFixed(3)}, max ${max.toFixed(3)}` });
  svg.append(svgEl("rect", { x: 30, y: 5, width: w - 35, height: h - 10, fill: "#fff", stroke: "#c9d0d8" }));
  const pts = s.map((x, i) => `${30 + (i * (w - 35)) / Math.max(1, s.length - 1)},${5 + (h - 10) * (1 - x.v / max)}`).join(" ");
  if (s.length) svg.append(svgEl("polyline", { points: pts, fill: "none", stroke: "#0a58ca", "stroke-width": 2 }));
  svg.append(svgEl("text", { x: 2, y: 14, "font-size": 10 }, max.toPrecision(3)), svgEl("text", { x: 2, y: h - 5, "font-size": 10 }, "0"),
    svgEl("text", { x: 32, y: h + 14, "font-size": 11 }, `latest ${last.toPrecision(3)} · last ${s.length * 2}s`));
  return el("figure", {}, el("figcaption", { text: c.name }), svg);
}

// ---- save as PNG -----------------------------------------------------------------

let cssText = ""; // the page's styles, read when a PNG is first saved

// snapshotPNG draws the current view into a PNG data URL: an SVG view as
// itself, an HTML view inside an SVG foreignObject with the page's styles.
async function snapshotPNG() {
  if (!cssText) cssText = await (await fetch("style.css")).text();
  const view = $(`#view-${route().view}`);
  const rect = view.getBoundingClientRect();
  const w = Math.ceil(Math.max(rect.width, 400)), h = Math.ceil(Math.max(view.scrollHeight, 200));
  const html = new XMLSerializer().serializeToString(view);
  const svg = `<svg xmlns="${SVG}" width="${w}" height="${h}"><foreignObject width="100%" height="100%"><div xmlns="http://www.w3.org/1999/xhtml" style="background:#f6f7f9;font:14px system-ui,sans-serif"><style>${cssText.replace(/</g, "\\3c ")}</style>${html}</div></foreignObject></svg>`;
  const img = new Image();
  img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
  await img.decode();
  const canvas = el("canvas", { width: w, height: h });
  const g = canvas.getContext("2d");
  g.fillStyle = "#f6f7f9";
  g.fillRect(0, 0, w, h);
  g.drawImage(img, 0, 0);
  return canvas.toDataURL("image/png");
}
window.__console.snapshotPNG = snapshotPNG;

async function savePNG() {
  const url = await snapshotPNG();
  const a = el("a", { href: url, download: `tugboat-${route().view}-${new Date().toISOString().replace(/[:.]/g, "-")}.png` });
  document.body.append(a);
  a.click();
  a.remove();
}

// ---- routing and keys ---------------------------------------------------------------

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const view = ["cluster", "pod", "service", "events", "metrics"].includes(parts[0]) ? parts[0] : "cluster";
  return { view, arg: parts.slice(1).map(decodeURIComponent).join("/") };
}
const go = (hash) => { location.hash = hash; };

function onRoute() {
  const { view } = route();
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== `view-${view}`;
  for (const a of document.querySelectorAll("nav a")) a.toggleAttribute("aria-current", a.dataset.view === view) && a.setAttribute("aria-current", "page");
  if (view === "cluster") fullRender = true;
  if (view === "pod") podFlowKey = podFlowKey === route().arg ? "" : podFlowKey;
  if (view === "metrics") loadMetrics();
  renderNow();
}

// moveFocus moves the focus dir items along items (shown ones only).
function moveFocus(items, dir) {
  if (!items.length) return;
  let i = items.indexOf(document.activeElement);
  i = i < 0 ? 0 : Math.max(0, Math.min(items.length - 1, i + dir));
  for (const x of items) x.tabIndex = -1;
  items[i].tabIndex = 0;
  items[i].focus();
}

function onKey(e) {
  const typing = /INPUT|SELECT|TEXTAREA/.test(document.activeElement?.tagName);
  if (e.key === "Escape") { if (typing) document.activeElement.blur(); else go("#/cluster"); return; }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  const views = { 1: "#/cluster", 2: "#/pod", 3: "#/service", 4: "#/events", 5: "#/metrics" };
  if (views[e.key]) { go(views[e.key] + (e.key === "2" && podFlowKey ? "/" + podFlowKey : e.key === "3" && svcKey ? "/" + svcKey : "")); e.preventDefault(); return; }
  if (e.key === "/") { $("#label-filter").focus(); e.preventDefault(); return; }
  if (e.key === "n") { $("#ns-filter").focus(); e.preventDefault(); return; }
  if (e.key === "p") { savePNG(); return; }
  if (e.key === "?") { $("#help-dialog").showModal(); return; }
  const dirs = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
  if (dirs[e.key] === undefined) return;
  const v = route().view;
  // The cluster's chips are all shown but the filtered ones (no layout
  // read for each of 5,000); the flows' items are few.
  const items = v === "cluster" ? [...document.querySelectorAll("#nodes .chip:not([hidden])")]
    : [...document.querySelectorAll(v === "pod" ? "#pod-flow .stage" : "#svc-flow g[tabindex]")].filter((x) => x.getBoundingClientRect().width > 0);
  const step = v === "cluster" && (e.key === "ArrowDown" || e.key === "ArrowUp") ? dirs[e.key] * chipsPerRow() : dirs[e.key];
  moveFocus(items, step);
  e.preventDefault();
}

function chipsPerRow() {
  const a = document.activeElement;
  if (!a?.classList.contains("chip")) return 1;
  const row = [...a.parentElement.children].filter((c) => !c.hidden && c.offsetTop === a.offsetTop);
  return Math.max(1, row.length);
}

function setup() {
  setupLayers();
  $("#ns-filter").addEventListener("change", (e) => { nsFilter = e.target.value; fullRender = true; scheduleRender(); });
  $("#label-filter").addEventListener("input", (e) => {
    try { labelMatch = parseSelector(e.target.value); e.target.removeAttribute("aria-invalid"); } catch { e.target.setAttribute("aria-invalid", "true"); }
    fullRender = true; scheduleRender();
  });
  $("#pod-pick").addEventListener("change", (e) => go(`#/pod/${e.target.value.trim()}`));
  $("#svc-pick").addEventListener("change", (e) => go(`#/service/${e.target.value.trim()}`));
  $("#svc-trace").addEventListener("click", runServiceTrace);
  $("#ing-trace").addEventListener("click", runIngressTrace);
  $("#pod-describe").addEventListener("click", async () => {
    const [ns, name] = podFlowKey.split("/");
    const r = await fetch(`api/describe/pod/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
    const out = $("#pod-describe-out");
    out.hidden = false;
    out.textContent = await r.text();
  });
  $("#save-png").addEventListener("click", savePNG);
  // Every chip opens its pod's creation flow (Enter on a focused chip is a click too).
  $("#nodes").addEventListener("click", (e) => {
    const c = e.target.closest(".chip");
    if (c) go(`#/pod/${c.dataset.pod}`);
  });
  addEventListener("hashchange", onRoute);
  addEventListener("keydown", onKey);
  setInterval(loadMetrics, 2000);
  onRoute();
}

setup();
ensureLogin().then(async (r) => {
  if (r.ok) demoInfo = await r.json();
  connect();
});
