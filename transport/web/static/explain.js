// ksched cluster page: a pod's decision (`explain`). The chosen node and the best-scoring
// nodes come first with their totals in view; each node's per-plugin breakdown is one
// click away; the node-label filter applies here too.
"use strict";

const TOP_NODES = 10;        // rows shown before "show all"

function explain(key) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return;
  const [namespace, ...rest] = key.split("/");
  state.explainId += 1;
  state.explaining = { id: state.explainId, key, result: null, all: false, open: new Set() };
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

// One line per node: ✓ when every filter passed, else the filter that rejected it and why.
function nodeVerdict(n) {
  if (n.preFilter) return ["fail", `PreFilter ${n.preFilter.plugin || ""}: ${(n.preFilter.reasons || []).join("; ")}`];
  if (n.feasible) return ["pass", "✓ fits"];
  const failed = Object.entries(n.filters || {}).find(([, st]) => st && st.code !== "Success" && st.code !== "Skip");
  if (!failed) return ["fail", "—"];
  const [cls, text] = verdict(failed[1]);
  return [cls, `${failed[0]} ${text}`];
}

// Chosen first, then the feasible nodes by total score, then the rest in natural order.
function rankedNodes(r) {
  const keep = labelFilter($("#node-filter").value);
  const labelsOf = (name) => { const e = state.objects.Node.get(name); return e ? meta(e.obj).labels || {} : {}; };
  const rank = ([name, n]) => (name === r.chosen ? 0 : n.feasible ? 1 : 2);
  return Object.entries(r.nodes).filter(([name]) => keep(labelsOf(name))).sort((a, b) => rank(a) - rank(b)
    || (rank(a) === 1 ? (b[1].totalScore || 0) - (a[1].totalScore || 0) : 0) || natural(a[0], b[0]));
}

function breakdown(n) {
  const filters = Object.entries(n.filters || {}).map(([p, st]) => {
    const [cls, text] = verdict(st);
    return `<tr><td>${esc(p)}</td><td class="${cls}">${esc(text)}</td></tr>`;
  }).join("");
  const scores = Object.entries(n.scores || {}).map(([p, sc]) => `<tr><td>${esc(p)}</td>
    <td class="score">${sc.raw} / ${sc.normalized} × ${sc.weight} = <b>${sc.weighted}</b></td></tr>`).join("");
  return `<div class="plugins">${filters ? `<table><thead><tr><th>Filter plugin</th><th>verdict</th></tr></thead><tbody>${filters}</tbody></table>` : ""}
    ${scores ? `<table><thead><tr><th>Score plugin</th><th>raw / normalized × weight = weighted</th></tr></thead><tbody>${scores}</tbody></table>` : ""}
    ${!filters && !scores ? `<p class="muted">no plugin ran on this node</p>` : ""}</div>`;
}

function onExplain(msg) {
  if (!state.explaining || msg.id !== state.explaining.id) return;
  if (msg.error) { $("#explain-summary").innerHTML = `<span class="error">${esc(msg.error.reason)}: ${esc(msg.error.message)}</span>`; return; }
  state.explaining.result = msg.result;
  renderExplain();
}

function renderExplain() {
  const ex = state.explaining;
  if (!ex || !ex.result) return;
  const r = ex.result;
  const total = Object.keys(r.nodes).length;
  const feasible = Object.values(r.nodes).filter((n) => n.feasible).length;
  let summary = r.chosen ? `Chosen node: ${r.chosen} (profile ${r.profile}); ${feasible} of ${total} nodes fit.`
    : `Unschedulable: ${r.message || ""}`;
  if (r.boundTo) summary += ` Bound to ${r.boundTo}; explained as if it were not bound yet, on the cluster as it is now.`;
  $("#explain-summary").textContent = summary;
  const ranked = rankedNodes(r);
  const rows = ex.all ? ranked : ranked.slice(0, TOP_NODES);
  const body = rows.map(([name, n]) => {
    const [cls, text] = nodeVerdict(n);
    const chosen = name === r.chosen;
    const open = ex.open.has(name);
    const head = `<tr data-node="${esc(name)}" class="${chosen ? "chosen" : ""}${open ? " open" : ""}">
      <td class="node-name">${esc(name)}${chosen ? " ★" : ""}</td>
      <td class="total">${n.feasible && n.totalScore !== undefined ? n.totalScore : ""}</td>
      <td class="${cls}">${esc(text)}</td>
      <td><button type="button" class="plugins-toggle" aria-expanded="${open}">${open ? "hide" : "plugins"}</button></td></tr>`;
    return open ? `${head}<tr class="breakdown" data-for="${esc(name)}"><td colspan="4">${breakdown(n)}</td></tr>` : head;
  }).join("");
  const hidden = total - ranked.length;
  const more = ranked.length > rows.length ? `<button type="button" id="explain-all">show all ${ranked.length} nodes</button>` : "";
  $("#explain").innerHTML = `<thead><tr><th>Node</th><th>Total score</th><th>Filter verdict</th><th></th></tr></thead><tbody>${body}</tbody>`;
  $("#explain-more").innerHTML = `${more}${hidden ? ` <span class="muted">${hidden} nodes hidden by the label filter</span>` : ""}`;
}

function wireExplain() {
  $("#explain").addEventListener("click", (ev) => {
    const row = ev.target.closest("tr[data-node]");
    if (!row || !state.explaining) return;
    const open = state.explaining.open;
    if (open.has(row.dataset.node)) open.delete(row.dataset.node); else open.add(row.dataset.node);
    renderExplain();
  });
  $("#explain-more").addEventListener("click", (ev) => {
    if (ev.target.id === "explain-all" && state.explaining) { state.explaining.all = true; renderExplain(); }
  });
  $("#node-filter").addEventListener("input", renderExplain);
  $("#explain-close").addEventListener("click", () => { state.explaining = null; $("#explain-view").hidden = true; });
}
