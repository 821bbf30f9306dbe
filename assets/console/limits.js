// Rate limits by name prefix, and one limit's bucket. A bucket refills
// without an event: an open page reads its limits again every second (one
// request), with the denials per second of their key prefix's bucket
// between two reads of GET /v1/prefixes.

import { adminAction, adminButton, api, duration, encode, filterForm, h, main, nextPage, table, whoAmI } from "./util.js";

const per = (l) => `${l.rate} per ${duration(l.period_ms)}`;

// What is available now of the burst, as a meter and in words.
function level(l) {
  return h("span", {}, h("meter", { min: "0", max: String(l.burst), value: String(l.available),
    "aria-label": `${l.name}: ${l.available} of ${l.burst} available` }), ` ${l.available} of ${l.burst}`);
}

// The prefix bucket a name counts under (the longest listed prefix it
// starts with, else "other"), and its denials per second between reads.
let lastDenials = null;
async function denialsPerSecond() {
  const { items } = await api("/v1/prefixes");
  const now = { at: Date.now(), by: new Map(items.map((p) => [p.prefix, Number(p.limits?.denials ?? 0)])) };
  const before = lastDenials;
  lastDenials = now;
  const rate = (prefix) => {
    if (!before || !before.by.has(prefix)) return null;
    const seconds = (now.at - before.at) / 1000;
    return seconds > 0 ? Math.max(0, now.by.get(prefix) - before.by.get(prefix)) / seconds : null;
  };
  const bucket = (name) => items.map((p) => p.prefix).filter((p) => p !== "other" && name.startsWith(p))
    .sort((a, b) => b.length - a.length)[0] ?? "other";
  return (name) => {
    const prefix = bucket(name);
    const r = rate(prefix);
    return `${r === null ? "—" : (r >= 10 ? Math.round(r) : r.toFixed(1))} (${prefix})`;
  };
}

function rows(items, denials) {
  return items.map((l) => [h("a", { href: `#/limits/${encode(l.name)}`, text: l.name }),
    l.name.endsWith("/") ? `family: ${per(l)} each` : per(l), level(l), duration(l.full_in_ms), denials(l.name)]);
}

export async function limits(params) {
  const prefix = params.get("prefix") || "";
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "100" });
  if (prefix) query.set("prefix", prefix);
  if (cursor) query.set("cursor", cursor);
  const read = () => Promise.all([api(`/v1/limits?${query}`), denialsPerSecond()]);
  const [list, denials] = await read();
  const caption = `Rate limits${prefix ? ` under ${prefix}` : ""}`;
  const columns = ["limit", "rate", "available now", "full in", "denials/s (prefix)"];
  const body = h("div", { id: "limits-table" }, table(caption, columns, rows(list.items, denials), "No rate limit."));
  main.replaceChildren(h("h2", { text: "Rate limits" }), filterForm("limits", [["prefix", "Name prefix"]], params),
    body, nextPage("limits", list, { prefix }));
  const touched = (e) => e.type?.startsWith("limit.") && (e.limit ?? "").startsWith(prefix);
  return Object.assign(touched, { tick: async () => {
    const [again, d] = await read();
    body.replaceChildren(table(caption, columns, rows(again.items, d), "No rate limit."));
  } });
}

export async function limit(params, name) {
  await whoAmI();
  const path = `/v1/limits/${encode(name)}`;
  const read = () => Promise.all([api(path), denialsPerSecond()]);
  const facts = h("dl", { class: "facts", "aria-label": "The limit" });
  const show = ([l, denials]) => {
    const fact = (label, value, id) => [h("dt", { text: label }), h("dd", { id }, value)];
    facts.replaceChildren(...fact("rate", per(l), "limit-rate"), ...fact("burst", String(l.burst), "limit-burst"),
      ...fact("available now", level(l), "limit-available"), ...fact("full in", duration(l.full_in_ms), "limit-full-in"),
      ...fact("denials per second", denials(l.name), "limit-denials"));
  };
  show(await read());
  // A deleted limit is not read again (a read would answer 404): the page
  // says so and links back to the list. Set before the delete is sent, as
  // its event may arrive before its answer.
  let gone = false;
  const ended = () => {
    gone = true;
    facts.replaceChildren(h("dt", { text: "state" }), h("dd", { id: "limit-gone" },
      "deleted; ", h("a", { href: "#/limits", text: "back to the limits" })));
  };
  const remove = adminButton("Delete this limit", () => adminAction(
    `Delete the rate limit ${name}? Takes from it are then refused (404) until it is defined again.`,
    "Delete limit", async () => {
      gone = true;
      try {
        await api(path, "DELETE");
      } catch (error) {
        gone = false;
        throw error;
      }
      ended();
    }));
  main.replaceChildren(h("h2", {}, "Rate limit ", h("code", { text: name })),
    h("p", { class: "muted", text: name.endsWith("/") ? "A family: every name under it has a bucket of its own with these numbers, forgotten once full again."
      : "One bucket, shared by every client and replica that takes from it." }), facts, remove);
  const touched = (e) => {
    if (gone || !e.type?.startsWith("limit.") || e.limit !== name) return false;
    if (e.type === "limit.deleted") ended();
    return e.type !== "limit.deleted";
  };
  return Object.assign(touched, { tick: async () => {
    if (gone) return;
    const now = await read();
    if (!gone) show(now);
  } });
}
