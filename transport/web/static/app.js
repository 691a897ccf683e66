// ksched cluster page: one WebSocket (/stream) feeds everything; see transport/web/stream.py
// for the protocol. Read-only: the page never writes to the store.
"use strict";

const POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group";
const CHART_SECONDS = 300;
const KEEP_SAMPLES = 600;

const state = {
  rv: 0,
  objects: { Pod: new Map(), Node: new Map(), PodGroup: new Map(), ClusterQueue: new Map(), LocalQueue: new Map(), Workload: new Map() },
  samples: [],
  waiting: new Map(),        // pod key -> {pod, group, node, deadline (server wall time)}
  skew: 0,                   // server clock minus ours, seconds
  sort: { key: "age", dir: -1 },
  explainId: 0,
  explaining: null,          // pod key shown in the explain panel
  ws: null,
  retry: 500,
  connects: 0,               // hellos received; lastResumed: whether the last one resumed
  lastResumed: false,
};
const MAX_ROWS = 500;        // pending rows drawn; the count says how many there are
const MAX_CHIPS = 40;        // pod names drawn per node card

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const serverNow = () => Date.now() / 1000 + state.skew;

// --- formatting, as `ksched get` prints it (transport/tables.py) ---------------------------------

function milliCpu(m) { return m % 1000 === 0 ? String(m / 1000) : `${m}m`; }

function memory(b) {
  for (const [unit, size] of [["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]]) {
    if (b >= size && b % size === 0) return `${b / size}${unit}`;
  }
  return b >= 2 ** 20 ? `${Math.round(b / 2 ** 20)}Mi` : String(b);
}

function duration(seconds) {
  seconds = Math.max(0, Math.floor(seconds));
  if (seconds < 120) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return seconds % 60 ? `${m}m${seconds % 60}s` : `${m}m`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
}

// --- objects ------------------------------------------------------------------------------------

const meta = (o) => o.metadata || {};
const podKey = (o) => `${meta(o).namespace || "default"}/${meta(o).name}`;
const CLUSTER_SCOPED = new Set(["Node", "ClusterQueue"]);
const keyOf = (kind, o) => (CLUSTER_SCOPED.has(kind) ? meta(o).name : podKey(o));
const showName = (key) => (key.startsWith("default/") ? key.slice(8) : key);

function condition(o, type) {
  return ((o.status || {}).conditions || []).find((c) => c && c.type === type);
}

function created(o) {
  const t = Date.parse(meta(o).creationTimestamp || "");
  return Number.isNaN(t) ? null : t / 1000;
}

function apply(item) {
  const map = state.objects[item.kind];
  if (!map) return;
  const key = keyOf(item.kind, item.object);
  if (item.type === "DELETED") map.delete(key);
  else map.set(key, { obj: item.object, view: item.view });
  state.rv = Math.max(state.rv, item.resourceVersion);
}

// --- the stream ---------------------------------------------------------------------------------

function connect() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/stream`);
  state.ws = ws;
  let refused = false;
  ws.onopen = () => ws.send(JSON.stringify({ token: sessionStorage.getItem("ksched-token"), resourceVersion: state.rv }));
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    switch (msg.type) {
      case "hello": onHello(msg); break;
      case "events": msg.items.forEach(apply); scheduleRender(); break;
      case "sample": state.skew = msg.now - Date.now() / 1000; addSample(msg.sample); renderChart(); break;
      case "waiting": setWaiting(msg.waiting); scheduleRender(); break;
      case "explain": onExplain(msg); break;
      case "error":
        if (msg.reason === "Unauthorized") { refused = true; showLogin(msg.message); }
        else setConn(`error: ${msg.message}`, "down");
        break;
    }
  };
  ws.onclose = () => {
    if (state.ws !== ws) return;
    state.ws = null;
    if (refused) return;
    setConn("reconnecting…", "down");
    setTimeout(connect, state.retry);
    state.retry = Math.min(state.retry * 2, 5000);
  };
}

function onHello(msg) {
  if (!msg.resumed) {
    for (const map of Object.values(state.objects)) map.clear();
  }
  state.retry = 500;
  state.connects += 1;
  state.lastResumed = msg.resumed;
  state.skew = msg.now - Date.now() / 1000;
  state.samples = msg.samples.slice();
  setWaiting(msg.waiting);
  $("#login").hidden = true;
  $("#app").hidden = false;
  setConn("live", "live");
  scheduleRender();
}

function setConn(text, cls) {
  const el = $("#conn");
  el.textContent = text;
  el.className = `conn ${cls}`;
}

function showLogin(message) {
  sessionStorage.removeItem("ksched-token");
  $("#app").hidden = true;
  $("#login").hidden = false;
  $("#login-error").textContent = message && $("#token").value ? message : "";
  setConn("signed out", "down");
}

function setWaiting(list) {
  state.waiting = new Map(list.map((w) => [w.pod, w]));
}

function addSample(s) {
  state.samples.push(s);
  if (state.samples.length > KEEP_SAMPLES) state.samples.splice(0, state.samples.length - KEEP_SAMPLES);
}

// --- rendering ----------------------------------------------------------------------------------

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

function render() {
  $("#rv").textContent = `resourceVersion ${state.rv}`;
  renderNodes();
  renderPending();
  renderGangs();
  renderQueues();
  renderChart();
}

// --- queues (Kueue): per ClusterQueue, usage against nominal quota per flavor and resource ---------

function amount(resource, v) { return resource === "cpu" ? milliCpu(v) : resource === "memory" ? memory(v) : String(v); }

function renderQueues() {
  const lqs = new Map([...state.objects.LocalQueue.values()].map(({ obj, view }) => [podKey(obj), (view || {}).clusterQueue]));
  const used = new Map(), pending = new Map(), admitted = new Map();
  for (const { view } of state.objects.Workload.values()) {
    if (!view || view.invalid || view.finished) continue;
    const cq = view.clusterQueue || lqs.get(view.queue);
    if (!cq) continue;
    const counts = view.clusterQueue ? admitted : pending;
    counts.set(cq, (counts.get(cq) || 0) + 1);
    for (const [f, r, v] of view.usage) used.set(`${cq}|${f}|${r}`, (used.get(`${cq}|${f}|${r}`) || 0) + v);
  }
  const cqs = [...state.objects.ClusterQueue.values()].sort((a, b) => meta(a.obj).name.localeCompare(meta(b.obj).name));
  $("#queues tbody").innerHTML = cqs.map(({ obj, view }) => {
    const name = meta(obj).name;
    const quota = (view && view.quota) || [];
    const bars = quota.map(([f, r, nominal]) => {
      const u = used.get(`${name}|${f}|${r}`) || 0;
      const borrowed = view.cohort ? Math.max(0, u - nominal) : 0;
      const pct = nominal > 0 ? Math.min(100, (100 * u) / nominal) : (u > 0 ? 100 : 0);
      return `<div class="quota${u > nominal ? " full" : ""}" data-fr="${esc(`${f}/${r}`)}"><span class="fr">${esc(`${f}/${r}`)}</span>
        <div class="track"><div class="fill" style="width:${pct.toFixed(1)}%"></div>
        <span class="nums">${esc(amount(r, u))}/${esc(amount(r, nominal))}</span></div>
        <span class="borrowed">${borrowed ? `borrowed ${esc(amount(r, borrowed))}` : ""}</span></div>`;
    }).join("");
    return `<tr data-cq="${esc(name)}"><td class="name">${esc(name)}</td><td class="cohort">${esc((view || {}).cohort || "")}</td>
      <td class="pending">${pending.get(name) || 0}</td><td class="admitted">${admitted.get(name) || 0}</td>
      <td class="usage">${bars}</td></tr>`;
  }).join("") || `<tr class="empty"><td colspan="5" class="muted">no ClusterQueues</td></tr>`;
}

function usageByNode() {
  const out = new Map();
  for (const { obj, view } of state.objects.Pod.values()) {
    const node = (obj.spec || {}).nodeName;
    if (!node || !view || view.invalid || view.terminal) continue;
    const u = out.get(node) || { cpu: 0, memory: 0, pods: 0, names: [] };
    u.cpu += view.cpu; u.memory += view.memory; u.pods += 1; u.names.push(podKey(obj));
    out.set(node, u);
  }
  return out;
}

function labelFilter(text) {
  const terms = text.split(",").map((t) => t.trim()).filter(Boolean).map((t) => {
    let m = t.match(/^([^!=]+)!=(.*)$/);
    if (m) return (l) => l[m[1].trim()] !== m[2].trim();
    m = t.match(/^([^=]+)==?(.*)$/);
    if (m) return (l) => l[m[1].trim()] === m[2].trim();
    if (t.startsWith("!")) return (l) => !(t.slice(1) in l);
    return (l) => t in l;
  });
  return (labels) => terms.every((f) => f(labels));
}

function bar(cls, used, total, fmt) {
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  const nums = total > 0 ? `${fmt(used)}/${fmt(total)}` : fmt(used);
  const full = total > 0 && used >= total ? " full" : "";
  return `<div class="bar ${cls}${full}" title="${cls}: ${esc(nums)} (${pct.toFixed(0)}%)"><span>${cls}</span>
    <div class="track"><div class="fill" style="width:${pct.toFixed(1)}%"></div><span class="nums">${esc(nums)}</span></div></div>`;
}

function renderNodes() {
  const usage = usageByNode();
  const keep = labelFilter($("#node-filter").value);
  const waitingOn = new Map();
  for (const w of state.waiting.values()) waitingOn.set(w.node, [...(waitingOn.get(w.node) || []), w.pod]);
  const nodes = [...state.objects.Node.values()].sort((a, b) => meta(a.obj).name.localeCompare(meta(b.obj).name));
  const shown = nodes.filter(({ obj }) => keep(meta(obj).labels || {}));
  $("#node-count").textContent = shown.length === nodes.length ? `(${nodes.length})` : `(${shown.length} of ${nodes.length})`;
  $("#nodes").innerHTML = shown.map(({ obj, view }) => {
    const name = meta(obj).name;
    const labels = Object.entries(meta(obj).labels || {}).sort().map(([k, v]) => `${k}=${v}`).join("\n") || "no labels";
    if (!view || view.invalid) {
      return `<div class="node" data-node="${esc(name)}"><h3>${esc(name)}</h3><p class="error">${esc(view && view.invalid)}</p></div>`;
    }
    const u = usage.get(name) || { cpu: 0, memory: 0, pods: 0, names: [] };
    const more = u.names.length > MAX_CHIPS ? `<span class="muted">+${u.names.length - MAX_CHIPS} more</span>` : "";
    const chips = u.names.sort().slice(0, MAX_CHIPS).map((k) => `<span class="chip" data-pod="${esc(k)}">${esc(showName(k))}</span>`)
      .concat((waitingOn.get(name) || []).map((k) => `<span class="chip waiting" data-pod="${esc(k)}" title="waiting at Permit, not bound yet">${esc(showName(k))} · Permit</span>`));
    return `<div class="node" data-node="${esc(name)}" title="${esc(labels)}">
      <h3>${esc(name)} <span class="state">${view.unschedulable ? "Ready,SchedulingDisabled" : "Ready"}</span></h3>
      ${bar("cpu", u.cpu, view.cpu, milliCpu)}${bar("memory", u.memory, view.memory, memory)}${bar("pods", u.pods, view.pods, String)}
      ${view.taints.length ? `<div class="taints">taints: ${esc(view.taints.join(", "))}</div>` : ""}
      <div class="chips">${chips.join("")}${more}</div></div>`;
  }).join("");
}

function pendingPods() {
  const now = serverNow();
  const rows = [];
  for (const { obj, view } of state.objects.Pod.values()) {
    if ((obj.spec || {}).nodeName || (view && view.terminal) || meta(obj).deletionTimestamp) continue;
    const key = podKey(obj);
    const w = state.waiting.get(key);
    const cond = condition(obj, "PodScheduled");
    const gates = (obj.spec || {}).schedulingGates || [];
    let message = cond && cond.status === "False" ? cond.message || cond.reason : "";
    if (w) message = `waiting at Permit on ${w.node}${w.group ? ` for gang ${showName(w.group)}` : ""}, ${duration(w.deadline - now)} left`;
    else if (!message && gates.length) message = `gated: ${gates.map((g) => g.name).join(", ")}`;
    else if (!message) message = "not tried yet";
    const c = created(obj);
    rows.push({ key, name: showName(key), priority: (obj.spec || {}).priority || 0,
      nominated: (obj.status || {}).nominatedNodeName || "", age: c === null ? 0 : now - c, message });
  }
  const { key, dir } = state.sort;
  rows.sort((a, b) => (a[key] < b[key] ? -dir : a[key] > b[key] ? dir : a.name.localeCompare(b.name)));
  return rows;
}

function renderPending() {
  const rows = pendingPods();
  $("#pending-count").textContent = rows.length > MAX_ROWS ? `(${rows.length}, first ${MAX_ROWS} shown)` : `(${rows.length})`;
  document.querySelectorAll("#pending th").forEach((th) => {
    th.className = th.dataset.sort === state.sort.key ? (state.sort.dir > 0 ? "sorted-asc" : "sorted-desc") : "";
  });
  $("#pending tbody").innerHTML = rows.slice(0, MAX_ROWS).map((r) => `<tr data-pod="${esc(r.key)}">
    <td class="name">${esc(r.name)}</td><td class="priority">${r.priority}</td><td class="nominated">${esc(r.nominated)}</td>
    <td class="age">${duration(r.age)}</td><td class="message">${esc(r.message)}</td></tr>`).join("")
    || `<tr class="empty"><td colspan="5" class="muted">no pending pods</td></tr>`;
}

function gangMembers() {
  const out = new Map();  // "namespace/group" -> [{obj, view}]
  for (const entry of state.objects.Pod.values()) {
    const group = (meta(entry.obj).labels || {})[POD_GROUP_LABEL];
    if (!group) continue;
    const key = `${meta(entry.obj).namespace || "default"}/${group}`;
    if (!out.has(key)) out.set(key, []);
    out.get(key).push(entry);
  }
  return out;
}

function renderGangs() {
  const now = serverNow();
  const members = gangMembers();
  const groups = [...state.objects.PodGroup.values()].sort((a, b) => podKey(a.obj).localeCompare(podKey(b.obj)));
  $("#gangs tbody").innerHTML = groups.map(({ obj }) => {
    const gkey = podKey(obj);
    let bound = 0, waiting = 0, pending = 0, deadline = Infinity;
    for (const { obj: p, view } of members.get(gkey) || []) {
      const w = state.waiting.get(podKey(p));
      if ((p.spec || {}).nodeName) bound += 1;
      else if (w) { waiting += 1; deadline = Math.min(deadline, w.deadline); }
      else if (!(view && view.terminal)) pending += 1;
    }
    const status = obj.status || {};
    const cond = (status.conditions || []).find((c) => c && c.message);
    return `<tr data-group="${esc(gkey)}"><td class="name">${esc(showName(gkey))}</td><td class="phase">${esc(status.phase || "Pending")}</td>
      <td class="min">${(obj.spec || {}).minMember || 0}</td><td class="bound">${bound}</td><td class="waiting">${waiting}</td>
      <td class="pending">${pending}</td><td class="deadline">${deadline === Infinity ? "" : `${duration(deadline - now)} left`}</td>
      <td class="reason">${esc(cond ? cond.message : "")}</td></tr>`;
  }).join("") || `<tr class="empty"><td colspan="8" class="muted">no PodGroups</td></tr>`;
}

function renderChart() {
  const s = state.samples;
  const svg = $("#chart");
  if (s.length < 2) { svg.innerHTML = ""; return; }
  const end = s[s.length - 1].t;
  const rates = [];
  for (let i = 1; i < s.length; i++) {
    const dt = s[i].t - s[i - 1].t;
    if (s[i].t >= end - CHART_SECONDS && dt > 0) rates.push([s[i].t, Math.max(0, (s[i].scheduled - s[i - 1].scheduled) / dt), s[i].pending]);
  }
  const peakRate = Math.max(0, ...rates.map((r) => r[1]));
  const peakPending = Math.max(0, ...rates.map((r) => r[2]));
  const maxRate = Math.max(1, peakRate), maxPending = Math.max(1, peakPending);  // the y scales
  const x = (t) => (600 * (t - (end - CHART_SECONDS))) / CHART_SECONDS;
  const line = (i, max) => rates.map((r) => `${x(r[0]).toFixed(1)},${(115 - (105 * r[i]) / max).toFixed(1)}`).join(" ");
  svg.innerHTML = `<polyline class="bound" points="${line(1, maxRate)}"/><polyline class="pending" points="${line(2, maxPending)}"/>
    <text x="4" y="12" font-size="10" fill="#6b7580">peak ${peakRate.toFixed(1)} bound/s, ${peakPending} pending</text>`;
  const last = rates[rates.length - 1];
  $("#rate").textContent = last ? last[1].toFixed(1) : "0";
  $("#pending-now").textContent = String(s[s.length - 1].pending);
}

// --- explain ------------------------------------------------------------------------------------

function explain(key) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return;
  const [namespace, ...rest] = key.split("/");
  state.explainId += 1;
  state.explaining = { id: state.explainId, key };
  $("#explain-view").hidden = false;
  $("#explain-pod").textContent = showName(key);
  $("#explain-summary").textContent = "asking the scheduler…";
  $("#explain").innerHTML = "";
  state.ws.send(JSON.stringify({ op: "explain", id: state.explainId, namespace, name: rest.join("/") }));
}

function verdict(st) {
  if (!st) return ["", "—"];
  if (st.code === "Success") return ["pass", "✓"];
  if (st.code === "Skip") return ["skip", "skip"];
  return ["fail", `${st.code}: ${(st.reasons || []).join("; ")}`];
}

function onExplain(msg) {
  if (!state.explaining || msg.id !== state.explaining.id) return;
  if (msg.error) { $("#explain-summary").innerHTML = `<span class="error">${esc(msg.error.reason)}: ${esc(msg.error.message)}</span>`; return; }
  const r = msg.result;
  const nodes = Object.entries(r.nodes);
  const filters = [], scores = [];
  for (const [, n] of nodes) {
    for (const p of Object.keys(n.filters || {})) if (!filters.includes(p)) filters.push(p);
    for (const p of Object.keys(n.scores || {})) if (!scores.includes(p)) scores.push(p);
  }
  let summary = r.chosen ? `Chosen node: ${r.chosen} (profile ${r.profile}).` : `Unschedulable: ${r.message || ""}`;
  if (r.boundTo) summary += ` Bound to ${r.boundTo}; this dry run on the cluster as it is now still counts the pod there.`;
  $("#explain-summary").textContent = summary;
  const head = `<thead><tr><th rowspan="2">Node</th>${filters.length ? `<th class="group" colspan="${filters.length}">Filter</th>` : ""}
    ${scores.length ? `<th class="group" colspan="${scores.length}">Score: raw / normalized × weight = weighted</th>` : ""}<th rowspan="2">Total</th></tr>
    <tr>${filters.map((p) => `<th>${esc(p)}</th>`).join("")}${scores.map((p) => `<th>${esc(p)}</th>`).join("")}</tr></thead>`;
  const body = nodes.map(([name, n]) => {
    let cells;
    if (n.preFilter) cells = `<td class="fail" colspan="${Math.max(1, filters.length)}">PreFilter ${esc(n.preFilter.plugin || "")}: ${esc((n.preFilter.reasons || []).join("; "))}</td>`;
    else cells = filters.map((p) => { const [cls, text] = verdict(n.filters[p]); return `<td class="${cls}">${esc(text)}</td>`; }).join("");
    cells += scores.map((p) => {
      const sc = (n.scores || {})[p];
      return `<td class="score">${sc ? `${sc.raw} / ${sc.normalized} × ${sc.weight} = ${sc.weighted}` : ""}</td>`;
    }).join("");
    const total = n.feasible && n.totalScore !== undefined ? n.totalScore : "";
    return `<tr data-node="${esc(name)}" class="${name === r.chosen ? "chosen" : ""}"><td>${esc(name)}${name === r.chosen ? " ★" : ""}</td>${cells}<td class="total">${total}</td></tr>`;
  }).join("");
  $("#explain").innerHTML = head + `<tbody>${body}</tbody>`;
}

// --- wiring -------------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("#login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem("ksched-token", $("#token").value);
    $("#login-error").textContent = "";
    if (state.ws) state.ws.close();
    connect();
  });
  $("#node-filter").addEventListener("input", renderNodes);
  document.querySelectorAll("#pending th[data-sort]").forEach((th) => th.addEventListener("click", () => {
    state.sort = { key: th.dataset.sort, dir: state.sort.key === th.dataset.sort ? -state.sort.dir : 1 };
    renderPending();
  }));
  document.body.addEventListener("click", (ev) => {
    const el = ev.target.closest("[data-pod]");
    if (el && !el.closest("#explain")) explain(el.dataset.pod);
  });
  $("#explain-close").addEventListener("click", () => { state.explaining = null; $("#explain-view").hidden = true; });
  setInterval(() => { if (!$("#app").hidden) { renderPending(); renderGangs(); } }, 1000);  // ages and countdowns tick locally
  connect();
});
