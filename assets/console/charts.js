// The overview's charts: grants, releases, expiries and refusals per second,
// and the wait p50 and p99, over the last minutes. The page samples
// GET /v1/prefixes itself every few seconds (one read of a bounded list,
// whatever the data) and keeps at most ten minutes of samples; the charts
// are inline SVG drawn here.

import { api, h } from "./util.js";

export const EVERY_MS = 3000;
const KEEP = Math.ceil(600000 / EVERY_MS) + 1;
const COUNTS = ["grants", "releases", "expiries", "refusals"];

// Each sample: when, the totals summed over the prefixes, and the slowest
// prefix's wait quantiles of the last minute.
const samples = [];
let listener = null;
// The prefixes as the last sample read them, for the overview's table.
export let latestPrefixes = [];

async function sample() {
  try {
    const { items } = await api("/v1/prefixes");
    latestPrefixes = items;
    const totals = Object.fromEntries(COUNTS.map((c) => [c, items.reduce((n, p) => n + Number(p.total[c]), 0)]));
    const worst = (q) => items.reduce((m, p) => (p[q] === null ? m : Math.max(m ?? 0, p[q])), null);
    samples.push({ at: Date.now(), totals, p50: worst("wait_p50_ms"), p99: worst("wait_p99_ms") });
    if (samples.length > KEEP) samples.shift();
    listener?.();
  } catch {
    // Not signed in yet, or the server is away: the next tick tries again.
  }
}

export function startSampling() {
  sample();
  setInterval(sample, EVERY_MS);
}

// Rates between consecutive samples (a prefix folded into `other` or a
// restart can lower a total: never below zero).
function series() {
  const rates = Object.fromEntries(COUNTS.map((c) => [c, []]));
  const waits = { p50: [], p99: [] };
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1], samples[i]];
    const seconds = (b.at - a.at) / 1000;
    for (const c of COUNTS) rates[c].push([b.at, Math.max(0, b.totals[c] - a.totals[c]) / seconds]);
    waits.p50.push([b.at, b.p50]);
    waits.p99.push([b.at, b.p99]);
  }
  return { rates, waits };
}

const round = (v) => (v >= 10 ? Math.round(v) : Math.round(v * 10) / 10);

// One small chart of one or two lines (points [at, value|null]) over the
// samples kept (a minute at least, ten at most), its latest and peak values
// in its label and beside it.
function chart(id, title, unit, lines) {
  const width = 260, height = 70, now = Date.now();
  const span = Math.max(60000, now - (samples[0]?.at ?? now));
  const over = span >= 90000 ? `${Math.round(span / 60000)} minutes` : `${Math.round(span / 1000)} seconds`;
  const values = lines.flatMap((l) => l.points.map(([, v]) => v)).filter((v) => v !== null);
  const peak = values.length ? Math.max(...values) : 0;
  const top = peak > 0 ? peak * 1.1 : 1;
  const x = (at) => width - ((now - at) / span) * width;
  const y = (v) => height - (v / top) * height;
  // Numbers and fixed class names only, parsed as HTML (where <svg> is SVG).
  const paths = [`<line x1="0" y1="${height - 0.5}" x2="${width}" y2="${height - 0.5}" class="axis"/>`];
  for (const line of lines) {
    let d = "";
    let pen = "M";
    let end = "";
    for (const [at, v] of line.points) {
      if (v === null) { pen = "M"; continue; }
      end = `cx="${x(at).toFixed(1)}" cy="${y(v).toFixed(1)}"`;
      d += `${pen}${x(at).toFixed(1)},${y(v).toFixed(1)}`;
      pen = "L";
    }
    if (d) paths.push(`<path d="${d}" class="${line.class}" fill="none"/>`, `<circle ${end} r="2" class="${line.class}"/>`);
  }
  const picture = h("div");
  picture.innerHTML = `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" aria-hidden="true">${paths.join("")}</svg>`;
  const latest = lines.map((l) => {
    const last = l.points[l.points.length - 1];
    return `${l.name} ${last && last[1] !== null ? round(last[1]) : "—"}`;
  }).join(", ");
  const text = `${latest} ${unit}; peak ${round(peak)}`;
  const newest = lines[0].points[lines[0].points.length - 1];
  const figure = h("figure", { class: "chart", id, "data-peak": String(peak), "data-points": String(lines[0].points.length),
    "data-latest": newest && newest[1] !== null ? String(newest[1]) : "" },
    h("figcaption", {}, h("strong", { text: title }), h("span", { class: "muted", text })),
    picture);
  picture.setAttribute("role", "img");
  picture.setAttribute("aria-label", `${title} over the last ${over}: ${text}`);
  return figure;
}

// The charts as they are now; after each new sample they are drawn again
// in place while the page shows them.
export function charts() {
  listener = () => document.getElementById("charts")?.replaceWith(charts());
  const { rates, waits } = series();
  const note = samples.length < 2
    ? h("p", { class: "muted", text: `Sampled every ${EVERY_MS / 1000} s since the page opened: the charts fill in as samples come.` })
    : "";
  return h("div", { id: "charts" }, note,
    h("div", { class: "charts" },
      chart("chart-grants", "Grants", "/s", [{ name: "now", class: "line", points: rates.grants }]),
      chart("chart-releases", "Releases", "/s", [{ name: "now", class: "line", points: rates.releases }]),
      chart("chart-expiries", "Expiries", "/s", [{ name: "now", class: "line", points: rates.expiries }]),
      chart("chart-refusals", "Refusals", "/s", [{ name: "now", class: "line", points: rates.refusals }]),
      chart("chart-wait", "Wait (slowest prefix)", "ms", [{ name: "p50", class: "line", points: waits.p50 },
        { name: "p99", class: "line2", points: waits.p99 }])));
}
