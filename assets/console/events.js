// A tail of the event stream, filtered as the server filters (a key prefix,
// a pool, a group: any of them) and by type. Rows are added in batches of
// at most STEP per animation frame and at most KEEP are kept, so a thousand
// events a second leave the page responsive. It can pause, and read history from a
// revision with the paging route before following again.

import { api, encode, h, main, state } from "./util.js";

const KEEP = 500;
const STEP = 100;
const TYPES = ["lock.acquired", "lock.released", "lock.updated", "reservation.reserved", "reservation.confirmed",
  "reservation.released", "reservation.updated", "session.opened", "session.ended", "group.created",
  "group.deleted", "group.member_joined", "group.member_updated", "group.member_left", "limit.changed",
  "limit.deleted", "capacity.changed", "capacity.deleted"];

function selects(filter, e) {
  const { prefix, pool, group, type } = filter;
  if (type && e.type !== type) return false;
  if (!prefix && !pool && !group) return true;
  return (prefix && (e.key ?? e.limit)?.startsWith(prefix)) || (pool && e.pool === pool)
    || (group && e.group === group);
}

function row(e) {
  const resource = e.key !== undefined ? h("a", { href: `#/locks/${encode(e.key)}`, text: e.key })
    : e.pool !== undefined ? h("a", { href: `#/pools/${encode(e.pool)}`, text: `${e.pool} ${e.subnet ?? ""}` })
      : e.group !== undefined ? h("a", { href: `#/groups/${encode(e.group)}`, text: `${e.group} ${e.member ?? ""}` })
        : e.session !== undefined ? h("a", { href: `#/sessions/${encode(e.session)}`, text: e.session })
          : e.limit ?? "";
  return h("tr", {}, [String(e.revision), e.at, e.type, resource, e.holder ?? "", e.reason ?? ""]
    .map((c) => h("td", {}, c)));
}

export async function events(params) {
  const filter = Object.fromEntries(["prefix", "pool", "group", "type"].map((n) => [n, params.get(n) || ""]));
  const body = h("tbody");
  // Counts change many times a second: shown, not announced.
  const counter = h("p", { id: "tail-status", text: "Following: new events appear at the top." });
  const note = h("p", { id: "tail-history", role: "status" });
  let queue = [];
  let held = null; // live events that arrive while history is read
  let paused = false;
  let frame = 0;
  let seen = 0;

  // The oldest STEP queued rows go on top of the table in one frame; what
  // is left waits for the next frame, so no frame builds more than STEP.
  const flush = () => {
    frame = 0;
    if (paused || queue.length === 0) return;
    const batch = queue.slice(0, STEP);
    queue = queue.slice(STEP);
    const rows = document.createDocumentFragment();
    for (let i = batch.length - 1; i >= 0; i--) rows.append(row(batch[i]));
    body.prepend(rows);
    while (body.rows.length > KEEP) body.lastChild.remove();
    counter.textContent = `Following: ${seen} events so far, the newest ${body.rows.length} shown, newest first.`;
    if (queue.length) frame = requestAnimationFrame(flush);
  };
  const add = (e) => {
    seen += 1;
    queue.push(e);
    if (queue.length > 2 * KEEP) queue = queue.slice(-KEEP);
    if (!frame && !paused) frame = requestAnimationFrame(flush);
  };
  state.tap = (e) => {
    if (!selects(filter, e)) return;
    if (held) held.push(e);
    else add(e);
  };

  const pause = h("button", { type: "button", id: "pause", onclick: () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    if (paused) counter.textContent = `Paused: ${queue.length} events held (the newest ${KEEP} are kept).`;
    else flush();
  } }, "Pause");

  const history = async (e) => {
    e.preventDefault();
    let since = Number(e.target.since.value);
    body.replaceChildren();
    queue = [];
    seen = 0;
    held = [];
    note.textContent = `Reading history after revision ${since}…`;
    let last = since;
    try {
      for (let pages = 0; pages < 100; pages++) {
        const query = new URLSearchParams({ since: String(since), limit: "1000" });
        for (const name of ["prefix", "pool", "group"]) if (filter[name]) query.set(name, filter[name]);
        const page = await api(`/v1/events?${query}`);
        for (const event of page.items) if (selects(filter, event)) add(event);
        if (page.items.length) last = page.items[page.items.length - 1].revision;
        if (page.next_revision === since) break;
        since = page.next_revision;
      }
      note.textContent = `Read history up to revision ${last}; following.`;
    } catch (error) {
      note.textContent = `History: the server answered ${error.status}: ${error.message}`;
    } finally {
      for (const event of held) if (event.revision > last) add(event);
      held = null;
    }
  };

  const field = (name, label, input) => [h("label", { for: `tail-${name}`, text: label }), input];
  const filters = h("form", { role: "search", class: "filters", "aria-label": "Filter the events", onsubmit: (e) => {
    e.preventDefault();
    const query = new URLSearchParams();
    for (const name of ["prefix", "pool", "group", "type"]) if (e.target[name].value) query.set(name, e.target[name].value);
    location.hash = `#/events${query.size ? `?${query}` : ""}`;
  } },
  field("prefix", "Key prefix", h("input", { id: "tail-prefix", name: "prefix", value: filter.prefix })),
  field("pool", "Pool", h("input", { id: "tail-pool", name: "pool", value: filter.pool })),
  field("group", "Group", h("input", { id: "tail-group", name: "group", value: filter.group })),
  field("type", "Type", h("select", { id: "tail-type", name: "type" }, h("option", { value: "", text: "any" }),
    TYPES.map((t) => h("option", { value: t, text: t, selected: t === filter.type ? "" : null })))),
  h("button", { type: "submit", text: "Filter" }));
  const resume = h("form", { class: "filters", "aria-label": "Resume from a revision", onsubmit: history },
    h("label", { for: "tail-since", text: "Resume after revision" }),
    h("input", { id: "tail-since", name: "since", type: "number", min: "0", required: "", value: "0" }),
    h("button", { type: "submit", text: "Read history" }), note);

  main.replaceChildren(h("h2", { text: "Events" }), filters, h("p", {}, pause), resume, counter,
    h("table", { id: "tail" }, h("caption", { class: "muted", text: "The event stream, newest first" }),
      h("thead", {}, h("tr", {}, ["revision", "at", "type", "resource", "holder", "reason"]
        .map((c) => h("th", { scope: "col", text: c })))), body));
  return () => false;
}
