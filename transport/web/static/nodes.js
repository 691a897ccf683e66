// ksched cluster page: the nodes, as cards (a small cluster) or as a utilisation map
// (a large one: one cell per node, grouped by a label, drawn only while on screen).
"use strict";

const CARD_LIMIT = 60;       // "auto" shows cards up to this many nodes, the map above it
const MAX_CARDS = 200;       // cards drawn when cards are asked for on a large cluster
const MAX_CHIPS = 40;        // pod names drawn per node card
const CELL = 14;             // map cell pitch in CSS pixels (12 px cell, 2 px gap)
const FREE = "(no label)";

const nodeMap = { groups: [], where: new Map(), shape: "", observer: null, visible: new Set(), usage: new Map(), devices: new Map() };

// What the pods bound to a node request, kept up to date one change at a time (apply() in
// app.js calls this with -1 for the old version of a pod and +1 for the new one).
function account(entry, sign) {
  if (!entry) return;
  const { obj, view } = entry;
  const node = (obj.spec || {}).nodeName;
  if (!node || !view || view.invalid || view.terminal) return;
  let u = state.usage.get(node);
  if (!u) { u = { cpu: 0, memory: 0, pods: 0, names: new Set() }; state.usage.set(node, u); }
  u.cpu += sign * view.cpu; u.memory += sign * view.memory; u.pods += sign;
  if (sign > 0) u.names.add(podKey(obj)); else u.names.delete(podKey(obj));
  if (u.pods === 0) state.usage.delete(node);
}

const usageByNode = () => state.usage;

const emptyUsage = { cpu: 0, memory: 0, pods: 0, names: new Set() };

function shares(view, u) {
  return { cpu: percent(u.cpu, view.cpu), memory: percent(u.memory, view.memory), pods: percent(u.pods, view.pods) };
}

function bar(resource, used, total) {
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  const nums = usedOf(resource, used, total);
  const full = total > 0 && used >= total ? " full" : "";
  return `<div class="bar ${resource}${full}" title="${resource}: ${esc(nums)} (${pct.toFixed(0)}%)"><span class="what">${resource}</span>
    <div class="track"><div class="fill" style="width:${pct.toFixed(1)}%"></div></div><span class="nums">${esc(nums)}</span></div>`;
}

function nodeCard({ obj, view }, usage, waitingOn) {
  const name = meta(obj).name;
  const labels = Object.entries(meta(obj).labels || {}).sort().map(([k, v]) => `${k}=${v}`).join("\n") || "no labels";
  if (!view || view.invalid) {
    return `<div class="node" data-node="${esc(name)}"><h3>${esc(name)}</h3><p class="error">${esc(view && view.invalid)}</p></div>`;
  }
  const u = usage.get(name) || emptyUsage;
  const more = u.names.size > MAX_CHIPS ? `<span class="muted">+${u.names.size - MAX_CHIPS} more</span>` : "";
  const chips = [...u.names].sort(natural).slice(0, MAX_CHIPS).map((k) => `<span class="chip" data-pod="${esc(k)}">${esc(showName(k))}</span>`)
    .concat((waitingOn.get(name) || []).map((k) => `<span class="chip waiting" data-pod="${esc(k)}" title="waiting at Permit, not bound yet">${esc(showName(k))} · Permit</span>`));
  return `<div class="node" data-node="${esc(name)}" title="${esc(labels)}">
    <h3>${esc(name)} <span class="state">${view.unschedulable ? "Ready,SchedulingDisabled" : "Ready"}</span></h3>
    ${bar("cpu", u.cpu, view.cpu)}${bar("memory", u.memory, view.memory)}${bar("pods", u.pods, view.pods)}
    ${view.taints.length ? `<div class="taints">taints: ${esc(view.taints.join(", "))}</div>` : ""}
    ${deviceChips(name)}<div class="chips">${chips.join("")}${more}</div></div>`;
}

// DRA: per node, the devices its ResourceSlices publish, each with the claim that holds
// it and the claim's pods (transport/web/devices_feed.py sends the views joined here).
function devicesByNode() {
  const holders = new Map();
  for (const [key, { view }] of state.objects.ResourceClaim) {
    for (const id of (view && view.devices) || []) holders.set(id, { claim: key, pods: view.pods || [] });
  }
  const out = new Map();
  for (const { view } of state.objects.ResourceSlice.values()) {
    if (!view || !view.node) continue;
    const list = out.get(view.node) || [];
    for (const id of view.devices || []) list.push({ id, name: id.split("/").pop(), holder: holders.get(id) || null });
    out.set(view.node, list);
  }
  for (const list of out.values()) list.sort((a, b) => natural(a.id, b.id));
  return out;
}

function deviceChips(name) {
  const devices = (nodeMap.devices && nodeMap.devices.get(name)) || [];
  if (!devices.length) return "";
  const held = devices.filter((d) => d.holder).length;
  const chips = devices.map((d) => {
    const h = d.holder;
    const who = h ? `${showName(h.claim)}${h.pods.length ? ` (${h.pods.join(", ")})` : ""}` : "free";
    return `<span class="device${h ? " held" : ""}" data-device="${esc(d.id)}" title="${esc(d.id)}: ${esc(h ? `allocated to claim ${who}` : "free")}">${esc(d.name)} · ${esc(who)}</span>`;
  });
  return `<div class="devices"><span class="what">devices ${held}/${devices.length} allocated</span>${chips.join("")}</div>`;
}

function waitingByNode() {
  const out = new Map();
  for (const w of state.waiting.values()) out.set(w.node, [...(out.get(w.node) || []), w.pod]);
  return out;
}

// The nodes the label filter keeps, in natural order (sorted again only when a node
// comes or goes: at 5,000 nodes the sort is most of a redraw).
function shownNodes() {
  const keep = labelFilter($("#node-filter").value);
  const nodes = state.objects.Node;
  if (!state.nodeOrder) state.nodeOrder = [...nodes.keys()].sort(natural);
  const shown = [];
  for (const name of state.nodeOrder) {
    const e = nodes.get(name);
    if (keep(meta(e.obj).labels || {})) shown.push(e);
  }
  return { all: nodes.size, shown };
}

function renderNodes() {
  const usage = usageByNode();
  nodeMap.usage = usage;
  nodeMap.devices = devicesByNode();
  const { all, shown } = shownNodes();
  $("#node-count").textContent = shown.length === all ? `(${all})` : `(${shown.length} of ${all})`;
  const mode = $("#node-mode").value;
  const asMap = mode === "map" || (mode === "auto" && all > CARD_LIMIT);
  $("#map-controls").hidden = !asMap;
  const waitingOn = waitingByNode();
  if (asMap) {
    $("#nodes").innerHTML = "";
    $("#nodes").className = "";
    renderMap(shown);
  } else {
    $("#map").innerHTML = "";
    nodeMap.shape = "";
    const cards = shown.slice(0, MAX_CARDS).map((e) => nodeCard(e, usage, waitingOn)).join("");
    const rest = shown.length > MAX_CARDS ? `<p class="muted">+${shown.length - MAX_CARDS} more nodes: narrow the filter or use the map</p>` : "";
    $("#nodes").className = "grid";
    $("#nodes").innerHTML = cards + rest;
  }
  renderNodeDetail(usage, waitingOn);
}

// --- the map -----------------------------------------------------------------------------------

function colourFor(entry, u) {
  const view = entry.view;
  if (!view || view.invalid) return "#333";
  if (view.unschedulable) return "#9aa3ab";
  const s = shares(view, u);
  const by = $("#map-colour").value;
  const p = Math.min(100, by === "max" ? Math.max(s.cpu, s.memory, s.pods) : s[by]) / 100;
  return `hsl(${(140 - 140 * p).toFixed(0)},62%,${(84 - 34 * p).toFixed(0)}%)`;
}

function renderMap(shown) {
  const key = $("#group-by").value.trim();
  const byGroup = new Map();
  for (const e of shown) {
    const g = key ? (meta(e.obj).labels || {})[key] ?? FREE : "all nodes";
    if (!byGroup.has(g)) byGroup.set(g, []);
    byGroup.get(g).push(e);
  }
  const names = [...byGroup.keys()].sort((a, b) => (a === FREE) - (b === FREE) || natural(a, b));
  const width = Math.max(CELL, $("#map").clientWidth || document.documentElement.clientWidth - 40);
  const cols = Math.max(1, Math.floor(width / CELL));
  const shape = `${cols}|${names.map((n) => `${n}:${byGroup.get(n).length}`).join("|")}`;
  if (shape !== nodeMap.shape) buildMap(names, byGroup, cols, shape);
  nodeMap.groups.forEach((g, i) => { g.nodes = byGroup.get(names[i]); });
  nodeMap.where = new Map();
  nodeMap.groups.forEach((g, gi) => g.nodes.forEach((e, i) => nodeMap.where.set(meta(e.obj).name, [gi, i])));
  nodeMap.groups.forEach((g) => { g.summary.textContent = groupSummary(g.nodes); });
  for (const gi of nodeMap.visible) drawGroup(nodeMap.groups[gi]);
}

function groupSummary(nodes) {
  let used = 0, total = 0, mused = 0, mtotal = 0, pods = 0;
  for (const { obj, view } of nodes) {
    if (!view || view.invalid) continue;
    const u = nodeMap.usage.get(meta(obj).name) || emptyUsage;
    used += u.cpu; total += view.cpu; mused += u.memory; mtotal += view.memory; pods += u.pods;
  }
  return `${nodes.length} nodes · cpu ${percent(used, total)}% · memory ${percent(mused, mtotal)}% · ${pods} pods`;
}

function buildMap(names, byGroup, cols, shape) {
  if (nodeMap.observer) nodeMap.observer.disconnect();
  nodeMap.visible = new Set();
  const key = $("#group-by").value.trim();
  $("#map").innerHTML = names.map((n, gi) => {
    const rows = Math.ceil(byGroup.get(n).length / cols);
    return `<div class="map-group"><h3>${esc(key ? `${key}=${n}` : n)} <span class="muted summary"></span></h3>
      <canvas data-group="${gi}" width="${cols * CELL}" height="${rows * CELL}" style="width:${cols * CELL}px;height:${rows * CELL}px"></canvas></div>`;
  }).join("") || `<p class="muted">no nodes</p>`;
  nodeMap.groups = names.map((n, gi) => {
    const canvas = document.querySelector(`#map canvas[data-group="${gi}"]`);
    return { name: n, cols, canvas, summary: canvas.parentElement.querySelector(".summary"), nodes: byGroup.get(n) };
  });
  nodeMap.shape = shape;
  nodeMap.observer = new IntersectionObserver((entries) => {
    for (const en of entries) {
      const gi = Number(en.target.dataset.group);
      if (en.isIntersecting) { nodeMap.visible.add(gi); drawGroup(nodeMap.groups[gi]); } else nodeMap.visible.delete(gi);
    }
  });
  nodeMap.groups.forEach((g) => nodeMap.observer.observe(g.canvas));
}

function drawGroup(g) {
  if (!g || !g.canvas.isConnected) return;
  const ctx = g.canvas.getContext("2d");
  ctx.clearRect(0, 0, g.canvas.width, g.canvas.height);
  g.nodes.forEach((e, i) => {
    ctx.fillStyle = colourFor(e, nodeMap.usage.get(meta(e.obj).name) || emptyUsage);
    ctx.fillRect((i % g.cols) * CELL, Math.floor(i / g.cols) * CELL, CELL - 2, CELL - 2);
    if (meta(e.obj).name === state.openNode) {
      ctx.strokeStyle = "#1d232a"; ctx.lineWidth = 2;
      ctx.strokeRect((i % g.cols) * CELL + 1, Math.floor(i / g.cols) * CELL + 1, CELL - 4, CELL - 4);
    }
  });
}

function cellAt(canvas, ev) {
  const g = nodeMap.groups[Number(canvas.dataset.group)];
  const r = canvas.getBoundingClientRect();
  const col = Math.floor((ev.clientX - r.left) / CELL), row = Math.floor((ev.clientY - r.top) / CELL);
  const i = row * g.cols + col;
  return col < g.cols && i >= 0 && i < g.nodes.length ? g.nodes[i] : null;
}

// Where a node's cell is on screen (the test hovers there as a person would).
nodeMap.cellCenter = (name) => {
  const at = nodeMap.where.get(name);
  if (!at) return null;
  const g = nodeMap.groups[at[0]];
  g.canvas.scrollIntoView({ block: "center" });
  const r = g.canvas.getBoundingClientRect();
  return { x: r.left + (at[1] % g.cols) * CELL + CELL / 2 - 1, y: r.top + Math.floor(at[1] / g.cols) * CELL + CELL / 2 - 1 };
};

function tipText(e) {
  const name = meta(e.obj).name, view = e.view;
  if (!view || view.invalid) return `${name}\n${view ? view.invalid : "no status"}`;
  const u = nodeMap.usage.get(name) || emptyUsage, s = shares(view, u);
  const lines = [`${name}${view.unschedulable ? " (cordoned)" : ""}`,
    `cpu ${usedOf("cpu", u.cpu, view.cpu)} (${s.cpu}%)`,
    `memory ${usedOf("memory", u.memory, view.memory)} (${s.memory}%)`,
    `pods ${usedOf("pods", u.pods, view.pods)} (${s.pods}%)`];
  if (view.taints.length) lines.push(`taints: ${view.taints.join(", ")}`);
  const devices = (nodeMap.devices && nodeMap.devices.get(name)) || [];
  if (devices.length) lines.push(`devices ${devices.filter((d) => d.holder).length}/${devices.length} allocated`);
  return lines.join("\n");
}

function onMapMove(ev) {
  const tip = $("#map-tip");
  const e = ev.target.tagName === "CANVAS" ? cellAt(ev.target, ev) : null;
  if (!e) { tip.hidden = true; return; }
  tip.textContent = tipText(e);
  tip.dataset.node = meta(e.obj).name;
  tip.hidden = false;
  tip.style.left = `${Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8)}px`;
  tip.style.top = `${Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8)}px`;
}

function onMapClick(ev) {
  const e = ev.target.tagName === "CANVAS" ? cellAt(ev.target, ev) : null;
  if (!e) return;
  state.openNode = meta(e.obj).name;
  renderNodeDetail(nodeMap.usage, waitingByNode());
  nodeMap.groups.forEach((g, gi) => { if (nodeMap.visible.has(gi)) drawGroup(g); });
}

// The card of the node opened from the map.
function renderNodeDetail(usage, waitingOn) {
  const el = $("#node-detail");
  const entry = state.openNode && !$("#map-controls").hidden ? state.objects.Node.get(state.openNode) : null;
  el.hidden = !entry;
  el.innerHTML = entry ? `${nodeCard(entry, usage, waitingOn)}<button type="button" id="node-detail-close">close</button>` : "";
}

function wireNodes() {
  for (const id of ["#node-filter", "#group-by"]) $(id).addEventListener("input", () => { nodeMap.shape = ""; renderNodes(); });
  for (const id of ["#node-mode", "#map-colour"]) $(id).addEventListener("change", () => { nodeMap.shape = ""; renderNodes(); });
  $("#map").addEventListener("mousemove", onMapMove);
  $("#map").addEventListener("mouseleave", () => { $("#map-tip").hidden = true; });
  $("#map").addEventListener("click", onMapClick);
  $("#node-detail").addEventListener("click", (ev) => {
    if (ev.target.id === "node-detail-close") { state.openNode = null; renderNodes(); }
  });
  window.addEventListener("resize", () => { nodeMap.shape = ""; scheduleRender(); });
}
