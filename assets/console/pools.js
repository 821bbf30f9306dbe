// Pools with their usage, and a pool's page: its map on a canvas (hover or
// arrow keys name the block under the pointer), a legend, and the same data
// as a table of reservations for those who do not see the canvas.

import { api, duration, encode, endsBy, h, main, nextPage, sessionLink, table } from "./util.js";
import { LARGEST, MAX_BITS, PALETTE, draw, formatAddress, layout, parseCidr, pattern } from "./map.js";

// Pools as a tree (each child under its parent, indented) with a usage bar
// each. The list carries no usage: each pool on the page is read once, at
// most READS at a time, and a page holds at most 50.
const READS = 6;

export async function pools(params) {
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "50" });
  if (cursor) query.set("cursor", cursor);
  const list = await api(`/v1/pools?${query}`);
  // A pool deleted since the list was read is left out, not an error.
  const read = (p) => api(`/v1/pools/${encode(p.name)}`).catch((error) => {
    if (error.status === 404) return null;
    throw error;
  });
  const usage = (await bounded(list.items, READS, read)).filter(Boolean);
  const next = nextPage("pools", list);
  const link = (n) => (n ? h("a", { href: `#/pools/${encode(n)}`, text: n }) : "—");
  const rows = tree(usage).map(({ pool: p, level }) => {
    const name = h("span", { class: "tree-name", "data-level": String(level) },
      level ? h("span", { class: "muted", "aria-hidden": "true", text: "↳ " }) : "", link(p.name));
    // Indented through the CSSOM: the page's Content-Security-Policy refuses
    // style attributes.
    name.style.paddingLeft = `${level * 1.5}rem`;
    return [name, p.cidr, link(p.parent), String(p.depth ?? 0), usageBar(p),
      String(p.reserved_count), String(p.allocated_count), p.largest_free ?? "—"];
  });
  main.replaceChildren(h("h2", { text: "Pools" }),
    table("Pools and their usage, each child under its parent", ["pool", "cidr", "parent", "depth", "used",
      "reserved", "allocated", "largest free block"], rows, "No pool."), next);
  return (e) => e.pool !== undefined;
}

// Calls `read` on each item, at most `limit` at once; the answers in order.
async function bounded(items, limit, read) {
  const out = new Array(items.length);
  let at = 0;
  const worker = async () => {
    while (at < items.length) {
      const i = at++;
      out[i] = await read(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

// The pools in tree order: each top pool (or one whose parent is not on the
// page) in name order, then its children in address order, depth first.
function tree(pools) {
  const byName = new Map(pools.map((p) => [p.name, p]));
  const out = [];
  const visit = (p, level) => {
    out.push({ pool: p, level });
    for (const c of p.children ?? []) if (byName.has(c.name)) visit(byName.get(c.name), level + 1);
  };
  for (const p of pools) if (!p.parent || !byName.has(p.parent)) visit(p, 0);
  return out;
}

// Addresses reserved or allocated (children included) of the pool's total,
// as a bar and in words beside it; the bar's width set through the CSSOM.
function usageBar(p) {
  const total = BigInt(p.total_addresses);
  const used = total - BigInt(p.free_addresses);
  const percent = total > 0n ? Number((used * 10000n) / total) / 100 : 0;
  const fill = h("span", { class: "usage-fill" });
  fill.style.width = `${percent}%`;
  return h("span", { class: "usage", "data-used": String(used), "data-total": String(total) },
    h("span", { class: "usage-bar", "aria-hidden": "true" }, fill),
    h("span", { class: "usage-text", text: `${percent}% (${used} of ${total} addresses)` }));
}

let grid = null; // the last layout, kept while the resolution stays
// The keyboard's block, kept across re-reads of one map, and whether the
// keyboard is on the map: a re-read then names that block at once, not
// only when the new map's focus event arrives.
const focus = { map: "", at: 0, held: false };
const defaults = new Map(); // each pool's map resolution when none is asked

export async function pool(params, name) {
  const wanted = params.get("prefix_len");
  const path = `/v1/pools/${encode(name)}`;
  const [usage, map, reservations] = await Promise.all([api(path),
    api(`${path}/map${wanted ? `?prefix_len=${encode(wanted)}` : ""}`), api(`${path}/reservations?limit=1000`)]);
  const cidr = parseCidr(map.cidr);
  const bits = map.prefix_len - cidr.length;
  if (!wanted) defaults.set(name, map.prefix_len);
  const picker = h("select", { id: "resolution", onchange: (e) => {
    location.hash = `#/pools/${encode(name)}${e.target.value ? `?prefix_len=${e.target.value}` : ""}`;
  } }, h("option", { value: "", selected: wanted ? null : "",
    text: `the server's default${defaults.has(name) ? ` (/${defaults.get(name)})` : ""}` }),
  Array.from({ length: Math.min(MAX_BITS, cidr.bits - cidr.length) + 1 }, (_, i) => cidr.length + i)
    .map((len) => h("option", { value: len, selected: wanted && len === map.prefix_len ? "" : null,
      text: `/${len} (${2 ** (len - cidr.length)} blocks)` })));
  const items = reservations.items.map((r) => ({ ...r, range: parseCidr(r.subnet) }));
  const rows = items.map((r) => [r.subnet, r.holder, r.state,
    r.expires_in_ms === null ? "confirmed" : duration(r.expires_in_ms), endsBy(r), sessionLink(r.session)]);
  const figures = h("ul", { class: "figures", "aria-label": "Usage" },
    h("li", {}, h("strong", { text: usage.cidr }), "addresses"),
    h("li", {}, h("strong", { id: "pool-reserved", text: usage.reserved_count }), "reserved"),
    h("li", {}, h("strong", { id: "pool-allocated", text: usage.allocated_count }), "allocated"),
    h("li", {}, h("strong", { text: usage.largest_free ?? "none" }), "largest free block"));
  const parts = [h("h2", {}, "Pool ", h("code", { text: name })), figures, plan(usage),
    h("p", {}, h("label", { for: "resolution", text: "Block size " }), picker)];
  if (bits > MAX_BITS) {
    parts.push(h("p", { class: "muted", text: `Too many blocks to draw (2^${bits}): choose a larger block size.` }));
  } else {
    parts.push(mapFigure(map, cidr, bits, items));
  }
  parts.push(h("h3", { text: "Reservations" }),
    table(`Live reservations of ${name}${reservations.next_cursor ? " (the first 1000)" : ""}`,
      ["subnet", "holder", "state", "time left", "ends by", "session"], rows, "No live reservation."));
  main.replaceChildren(...parts);
  return (e) => e.pool === name && e.type.startsWith("reservation.");
}

// Where the pool sits in the address plan: its parent, its children, and
// the rules a reserve in it must keep (its own, narrowing its parent's).
function plan(usage) {
  const link = (n, text = n) => h("a", { href: `#/pools/${encode(n)}`, text });
  const r = usage.rules ?? {};
  const lens = [r.min_prefix_len && `at least /${r.min_prefix_len}`, r.max_prefix_len && `at most /${r.max_prefix_len}`,
    r.default_prefix_len && `/${r.default_prefix_len} when none is asked`].filter(Boolean);
  const rules = [lens.length ? `prefix length ${lens.join(", ")}` : "",
    r.allowed?.length ? `only inside ${r.allowed.join(", ")}` : "",
    r.disallowed?.length ? `never inside ${r.disallowed.join(", ")}` : "",
    r.required_labels?.length ? `labels required: ${r.required_labels.join(", ")}` : ""].filter(Boolean);
  const fact = (label, value, id) => [h("dt", { text: label }), h("dd", { id }, value)];
  return h("dl", { class: "facts", "aria-label": "Address plan" },
    fact("parent", usage.parent ? link(usage.parent) : "none (a top pool)", "pool-parent"),
    fact("depth", String(usage.depth ?? 0), "pool-depth"),
    fact("children", usage.children?.length
      ? usage.children.flatMap((c, i) => [i ? ", " : "", link(c.name, `${c.name} (${c.cidr})`)]) : "none",
    "pool-children"),
    fact("rules", rules.length ? rules.join("; ") : "none", "pool-rules"));
}

function mapFigure(map, cidr, bits, items) {
  if (!grid || grid.count !== 2 ** bits) grid = layout(bits);
  let index = 0;
  const runs = map.runs.map((r) => {
    const run = [index, Number(r.count), r.state];
    index += run[1];
    return run;
  });
  let largest = -1;
  runs.forEach((r, i) => { if (r[2] === "free" && (largest < 0 || r[1] > runs[largest][1])) largest = i; });
  const canvas = h("canvas", { id: "pool-map", tabindex: "0", role: "img",
    "aria-label": `Map of ${map.cidr} in /${map.prefix_len} blocks; arrow keys move from block to block`,
    "aria-describedby": "map-block", "data-runs": runs.map((r) => r.join(":")).join(" "),
    "data-cell": grid.cell, "data-cols": grid.cols });
  draw(canvas, grid, runs, largest);
  const context = canvas.getContext("2d");
  const drawn = context.getImageData(0, 0, canvas.width, canvas.height);
  const named = h("p", { id: "map-block", role: "status", text: "Point at a block, or focus the map and use the arrow keys." });
  const size = 1n << BigInt(cidr.bits - map.prefix_len);
  const which = `${map.pool} /${map.prefix_len}`;
  if (focus.map !== which) Object.assign(focus, { map: which, at: 0, held: false });
  let cursor = focus.at;
  const name = (i) => {
    const start = cidr.value + BigInt(i) * size;
    const run = runs.find(([first, count]) => i >= first && i < first + count);
    const holders = items.filter((r) => {
      const end = r.range.value + (1n << BigInt(r.range.bits - r.range.length));
      return r.range.value < start + size && end > start;
    });
    const who = holders.slice(0, 3).map((r) => `${r.subnet} held by ${r.holder} ${r.expires_at ? `until ${r.expires_at}` : "(confirmed)"}`);
    const child = map.runs[runs.indexOf(run)]?.child;
    named.textContent = `${formatAddress(start, cidr.v6)}/${map.prefix_len}: ${run[2]}${child ? ` (pool ${child})` : ""}${who.length ? `; ${who.join("; ")}` : ""}${holders.length > 3 ? ` and ${holders.length - 3} more` : ""}`;
  };
  const show = (i, mark) => {
    cursor = focus.at = Math.max(0, Math.min(grid.count - 1, i));
    context.putImageData(drawn, 0, 0);
    if (mark) {
      context.strokeStyle = "#000";
      context.lineWidth = 2;
      context.strokeRect(grid.xy[2 * cursor] * grid.cell + 1, grid.xy[2 * cursor + 1] * grid.cell + 1, grid.cell - 2, grid.cell - 2);
    }
    name(cursor);
  };
  canvas.addEventListener("mousemove", (e) => {
    const scale = canvas.width / canvas.clientWidth; // the page may shrink it
    const x = Math.floor((e.offsetX * scale) / grid.cell), y = Math.floor((e.offsetY * scale) / grid.cell);
    if (x < grid.cols && y < grid.rows) name(grid.at[y * grid.cols + x]);
  });
  if (focus.held) name(cursor);
  canvas.addEventListener("focus", () => { focus.held = true; show(cursor, true); });
  canvas.addEventListener("blur", () => {
    // A map replaced by a re-read loses the focus to its successor.
    if (canvas.isConnected) focus.held = false;
    context.putImageData(drawn, 0, 0);
  });
  canvas.addEventListener("keydown", (e) => {
    const x = grid.xy[2 * cursor], y = grid.xy[2 * cursor + 1];
    const at = (dx, dy) => {
      const nx = x + dx, ny = y + dy;
      return nx < 0 || ny < 0 || nx >= grid.cols || ny >= grid.rows ? cursor : grid.at[ny * grid.cols + nx];
    };
    const moves = { ArrowRight: at(1, 0), ArrowLeft: at(-1, 0), ArrowUp: at(0, -1), ArrowDown: at(0, 1),
      PageDown: cursor + 1, PageUp: cursor - 1, Home: 0, End: grid.count - 1 };
    if (!(e.key in moves)) return;
    e.preventDefault();
    show(moves[e.key], true);
  });
  // Coloured through the CSSOM: the page's Content-Security-Policy refuses
  // style attributes.
  const outline = h("span", { class: "outline", "aria-hidden": "true" });
  outline.style.borderColor = LARGEST;
  const legend = h("ul", { class: "legend", "aria-label": "Legend" },
    Object.entries(PALETTE).map(([state, { label }]) => {
      const swatch = h("canvas", { width: 16, height: 16, "aria-hidden": "true" });
      const c = swatch.getContext("2d");
      c.fillStyle = pattern(c, state);
      c.fillRect(0, 0, 16, 16);
      return h("li", {}, swatch, label);
    }),
    h("li", {}, outline,
      largest < 0 ? "no free block" : `the largest free run (${runs[largest][1]} blocks), outlined`));
  return h("figure", {}, canvas, h("figcaption", {}, legend, named,
    h("p", { class: "muted", text: "Arrow keys move on the map; Page Up and Page Down follow the addresses." })));
}
