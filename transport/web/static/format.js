// ksched cluster page: formatting shared by the views. Units are the same everywhere:
// cpu in cores, memory in GiB, pods as a count, and the share of allocatable in percent.
"use strict";

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

// Natural order: big-2 before big-10, as a person reads names.
const naturalCollator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });
const natural = (a, b) => naturalCollator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);

// Up to two decimals, trailing zeros dropped: 2.5, 0.25, 64, 0.01.
function decimal(x) {
  if (x !== 0 && Math.abs(x) < 0.01) return x.toPrecision(1);
  return String(Math.round(x * 100) / 100);
}

const cores = (milli) => decimal(milli / 1000);
const gib = (bytes) => decimal(bytes / 2 ** 30);
const percent = (used, total) => (total > 0 ? Math.round((100 * used) / total) : 0);

// "2.5/4 cores", "1.5/8 GiB", "2/10 pods": used / allocatable in one unit per resource.
const RESOURCES = [
  { key: "cpu", unit: "cores", fmt: cores },
  { key: "memory", unit: "GiB", fmt: gib },
  { key: "pods", unit: "pods", fmt: String },
];

function usedOf(resource, used, total) {
  const r = RESOURCES.find((x) => x.key === resource);
  return total > 0 ? `${r.fmt(used)}/${r.fmt(total)} ${r.unit}` : `${r.fmt(used)} ${r.unit}`;
}

function duration(seconds) {
  seconds = Math.max(0, Math.floor(seconds));
  if (seconds < 120) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return seconds % 60 ? `${m}m${seconds % 60}s` : `${m}m`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
}

// The node-label filter: `key=value`, `key!=value`, `key` and `!key`, comma-separated.
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
