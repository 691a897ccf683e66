// ksched cluster page: one WebSocket (/stream) feeds everything; see transport/web/stream.py
// for the protocol. Read-only: the page never writes to the store. format.js, nodes.js and
// explain.js load first (index.html); this file holds the state, the stream and the tables.
"use strict";

const POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group";
// scheduling.k8s.io/v1alpha2 PodGroup, keyed by its group beside Coscheduling's (framework/api/groups.py)
const SCHEDULING_POD_GROUP = "PodGroup.scheduling.k8s.io";
const CHART_SECONDS = 300;
const KEEP_SAMPLES = 600;

const state = {
  rv: 0,
  objects: { Pod: new Map(), Node: new Map(), PodGroup: new Map(), [SCHEDULING_POD_GROUP]: new Map(),
    ClusterQueue: new Map(), LocalQueue: new Map(), Workload: new Map(),
    ResourceSlice: new Map(), ResourceClaim: new Map() },  // DRA: devices per node (nodes.js)
  samples: [],
  waiting: new Map(),        // pod key -> {pod, group, node, deadline (server wall time)}
  skew: 0,                   // server clock minus ours, seconds
  sort: { key: "age", dir: -1 },
  explainId: 0,
  explaining: null,          // the explain panel: {id, key, result, all, open}
  openNode: null,            // the node whose card the map opened
  usage: new Map(),          // node name -> {cpu, memory, pods, names: Set}, kept by apply()
  nodeOrder: null,           // node names in natural order, until a node comes or goes (nodes.js)
  drawnAt: -Infinity,        // performance.now() of the last render
  ws: null,
  retry: 500,
  connects: 0,               // hellos received; lastResumed: whether the last one resumed
  lastResumed: false,
};
const MAX_ROWS = 500;        // pending rows drawn; the count says how many there are
const PROGRESS_MS = 250;     // while the first snapshot arrives, the page redraws this often at most

const serverNow = () => Date.now() / 1000 + state.skew;

// --- objects ------------------------------------------------------------------------------------

const meta = (o) => o.metadata || {};
const podKey = (o) => `${meta(o).namespace || "default"}/${meta(o).name}`;
const CLUSTER_SCOPED = new Set(["Node", "ClusterQueue", "ResourceSlice"]);
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
  if (item.kind === "Node" && (item.type === "DELETED") === map.has(key)) state.nodeOrder = null;  // a node came or went
  if (item.kind === "Pod") account(map.get(key), -1);  // usage per node follows each change (nodes.js)
  if (item.type === "DELETED") map.delete(key);
  else map.set(key, { obj: item.object, view: item.view });
  if (item.kind === "Pod" && item.type !== "DELETED") account(map.get(key), 1);
  state.rv = Math.max(state.rv, item.resourceVersion);
}

// A snapshot frame's rows back as {object, view}, as transport/web/columns.py unflatten()
// does: every container a column names is made, then each value that is not null is set.
// Columns are paths of one to three names ("object", "view.cpu", "object.metadata.name").
function rowReader(columns) {
  const paths = columns.map((c) => c.split("."));
  const parents = [...new Set(paths.filter((p) => p.length === 3).map((p) => `${p[0]}.${p[1]}`))].map((c) => c.split("."));
  const tops = [...new Set(paths.filter((p) => p.length > 1).map((p) => p[0]))];
  const setters = paths.map((p) => (p.length === 1 ? (o, v) => { o[p[0]] = v; }
    : p.length === 2 ? (o, v) => { o[p[0]][p[1]] = v; } : (o, v) => { o[p[0]][p[1]][p[2]] = v; }));
  return (row) => {
    const out = {};
    for (const t of tops) out[t] = {};
    for (const [a, b] of parents) out[a][b] = {};
    for (let i = 0; i < row.length; i++) if (row[i] !== null) setters[i](out, row[i]);  // a row may end early
    return out;
  };
}

// Part of the first picture: every object current at msg.resourceVersion, as rows. The
// resourceVersion becomes the page's (resume point) only with the last frame.
function applySnapshot(msg) {
  const read = rowReader(msg.columns);
  for (const row of msg.rows) {
    const { object, view } = read(row);
    apply({ type: "ADDED", kind: msg.kind, object, view, resourceVersion: 0 });
  }
  if (msg.last) state.rv = Math.max(state.rv, msg.resourceVersion);
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
      case "snapshot":  // drawn as it comes, at most every PROGRESS_MS until the last frame
        applySnapshot(msg);
        if (msg.last || performance.now() - state.drawnAt >= PROGRESS_MS) scheduleRender();
        break;
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
    state.usage.clear();
    state.nodeOrder = null;
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
  state.drawnAt = performance.now();
  $("#rv").textContent = `resourceVersion ${state.rv}`;
  renderNodes();
  renderPending();
  renderGangs();
  renderPodGroups();
  renderQueues();
  renderChart();
}

// --- queues (Kueue): per ClusterQueue, usage against nominal quota per flavor and resource ---------

// The page's units (format.js): cpu in cores, memory in GiB.
function amount(resource, v) { return resource === "cpu" ? cores(v) : resource === "memory" ? `${gib(v)} GiB` : String(v); }

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
  const cqs = [...state.objects.ClusterQueue.values()].sort((a, b) => natural(meta(a.obj).name, meta(b.obj).name));
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
    const group = (meta(obj).labels || {})[POD_GROUP_LABEL];
    rows.push({ key, name: showName(key), gang: group ? `${meta(obj).namespace || "default"}/${group}` : "", priority: (obj.spec || {}).priority || 0,
      nominated: (obj.status || {}).nominatedNodeName || "", age: c === null ? 0 : now - c, message });
  }
  const { key, dir } = state.sort;
  rows.sort((a, b) => (a[key] < b[key] ? -dir : a[key] > b[key] ? dir : natural(a.name, b.name)));
  return rows;
}

function renderPending() {
  const rows = pendingPods();
  $("#pending-count").textContent = rows.length > MAX_ROWS ? `(${rows.length}, first ${MAX_ROWS} shown)` : `(${rows.length})`;
  document.querySelectorAll("#pending th").forEach((th) => {
    th.className = th.dataset.sort === state.sort.key ? (state.sort.dir > 0 ? "sorted-asc" : "sorted-desc") : "";
  });
  $("#pending tbody").innerHTML = rows.slice(0, MAX_ROWS).map((r) => `<tr data-pod="${esc(r.key)}">
    <td class="name">${esc(r.name)}${r.gang ? `<span class="gang" data-gang="${esc(r.gang)}" title="member of PodGroup ${esc(showName(r.gang))}">gang ${esc(showName(r.gang))}</span>` : ""}</td><td class="priority">${r.priority}</td><td class="nominated">${esc(r.nominated)}</td>
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
  const groups = [...state.objects.PodGroup.values()].sort((a, b) => natural(podKey(a.obj), podKey(b.obj)));
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

// scheduling.k8s.io PodGroups: members name their group in spec.schedulingGroup.podGroupName.
function renderPodGroups() {
  const members = new Map();  // "namespace/group" -> [bound, total]
  for (const { obj } of state.objects.Pod.values()) {
    const group = ((obj.spec || {}).schedulingGroup || {}).podGroupName;
    if (!group) continue;
    const key = `${meta(obj).namespace || "default"}/${group}`;
    const counts = members.get(key) || [0, 0];
    if ((obj.spec || {}).nodeName) counts[0] += 1;
    counts[1] += 1;
    members.set(key, counts);
  }
  const groups = [...state.objects[SCHEDULING_POD_GROUP].values()].sort((a, b) => natural(podKey(a.obj), podKey(b.obj)));
  $("#pod-groups tbody").innerHTML = groups.map(({ obj }) => {
    const gkey = podKey(obj);
    const policy = (obj.spec || {}).schedulingPolicy || {};
    const [bound, total] = members.get(gkey) || [0, 0];
    const cond = ((obj.status || {}).conditions || []).find((c) => c && c.type === "PodGroupScheduled");
    const scheduled = cond ? `${cond.status}${cond.reason && cond.status !== "True" ? ` (${cond.reason})` : ""}` : "";
    return `<tr data-group="${esc(gkey)}"><td class="name">${esc(showName(gkey))}</td>
      <td class="policy">${policy.gang ? "Gang" : "Basic"}</td><td class="min">${policy.gang ? policy.gang.minCount : ""}</td>
      <td class="members">${bound}/${total}</td><td class="scheduled">${esc(scheduled)}</td>
      <td class="reason">${esc(cond && cond.status !== "True" ? cond.message || "" : "")}</td></tr>`;
  }).join("") || `<tr class="empty"><td colspan="6" class="muted">no scheduling.k8s.io PodGroups</td></tr>`;
}

// The plot area inside the chart's 600x150 viewBox: room left for the y ticks, below for the x ticks.
const PLOT = { left: 44, right: 590, top: 10, bottom: 118 };

function chartAxes(maxRate) {
  const { left, right, top, bottom } = PLOT;
  const xAt = (secondsAgo) => right - ((right - left) * secondsAgo) / CHART_SECONDS;
  const xTicks = [];
  for (let ago = CHART_SECONDS; ago >= 0; ago -= 60) {
    const label = ago === 0 ? "now" : `-${ago / 60}m`;
    xTicks.push(`<line x1="${xAt(ago)}" y1="${bottom}" x2="${xAt(ago)}" y2="${bottom + 4}"/>
      <text class="tick" x="${xAt(ago)}" y="${bottom + 14}" text-anchor="middle">${label}</text>`);
  }
  const yTicks = [0, maxRate / 2, maxRate].map((v) => {
    const y = bottom - ((bottom - top) * v) / maxRate;
    return `<line x1="${left - 4}" y1="${y}" x2="${left}" y2="${y}"/>
      <text class="tick" x="${left - 6}" y="${y + 3}" text-anchor="end">${v.toFixed(v < 10 && v % 1 ? 1 : 0)}</text>`;
  });
  return `<g class="axis x-axis"><line x1="${left}" y1="${bottom}" x2="${right}" y2="${bottom}"/>${xTicks.join("")}
      <text class="label" x="${(left + right) / 2}" y="${bottom + 28}" text-anchor="middle">time (minutes ago)</text></g>
    <g class="axis y-axis"><line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}"/>${yTicks.join("")}
      <text class="label" x="10" y="${(top + bottom) / 2}" text-anchor="middle" transform="rotate(-90 10 ${(top + bottom) / 2})">bound/s</text></g>`;
}

function renderChart() {
  const s = state.samples;
  const svg = $("#chart");
  if (s.length < 2) { svg.innerHTML = chartAxes(1); return; }
  const end = s[s.length - 1].t;
  const rates = [];
  for (let i = 1; i < s.length; i++) {
    const dt = s[i].t - s[i - 1].t;
    if (s[i].t >= end - CHART_SECONDS && dt > 0) rates.push([s[i].t, Math.max(0, (s[i].scheduled - s[i - 1].scheduled) / dt), s[i].pending]);
  }
  const peakRate = Math.max(0, ...rates.map((r) => r[1]));
  const peakPending = Math.max(0, ...rates.map((r) => r[2]));
  const maxRate = Math.max(1, peakRate), maxPending = Math.max(1, peakPending);  // the y scales
  const { left, right, top, bottom } = PLOT;
  const x = (t) => left + ((right - left) * (t - (end - CHART_SECONDS))) / CHART_SECONDS;
  const line = (i, max) => rates.map((r) => `${x(r[0]).toFixed(1)},${(bottom - ((bottom - top) * r[i]) / max).toFixed(1)}`).join(" ");
  svg.innerHTML = `${chartAxes(maxRate)}<polyline class="bound" points="${line(1, maxRate)}"/><polyline class="pending" points="${line(2, maxPending)}"/>
    <text class="peak" x="${left + 6}" y="${top + 10}" font-size="10" fill="#6b7580">peak ${peakRate.toFixed(1)} bound/s, ${peakPending} pending (dashed, own scale)</text>`;
  const last = rates[rates.length - 1];
  $("#rate").textContent = last ? last[1].toFixed(1) : "0";
  $("#pending-now").textContent = String(s[s.length - 1].pending);
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
  wireNodes();
  wireExplain();
  document.querySelectorAll("#pending th[data-sort]").forEach((th) => th.addEventListener("click", () => {
    state.sort = { key: th.dataset.sort, dir: state.sort.key === th.dataset.sort ? -state.sort.dir : 1 };
    renderPending();
  }));
  document.body.addEventListener("click", (ev) => {
    const el = ev.target.closest("[data-pod]");
    if (el && !el.closest("#explain")) explain(el.dataset.pod);
  });
  setInterval(() => { if (!$("#app").hidden) { renderPending(); renderGangs(); } }, 1000);  // ages and countdowns tick locally
  connect();
});
