// The overview, locks by prefix, a key's holders and queue, a session.
// Each page renders into `main` and answers which events make it read again.

import { adminAction, api, duration, encode, filterForm, h, main, sessionLink, state, table } from "./util.js";
import { charts } from "./charts.js";

export async function overview() {
  const [locks, queues] = await Promise.all([api("/v1/locks?limit=1000"), api("/v1/queues?limit=10")]);
  const minute = [...state.seconds.entries()].filter(([s]) => s > Date.now() / 1000 - 60);
  const perMinute = minute.reduce((sum, [, n]) => sum + n, 0);
  main.replaceChildren(
    h("h2", { text: "Overview" }),
    h("ul", { class: "figures", "aria-label": "Figures" },
      h("li", {}, h("strong", { id: "live-locks", text: `${locks.items.length}${locks.next_cursor ? "+" : ""}` }), "live locks"),
      h("li", {}, h("strong", { id: "waiters", text: queues.waiters }), `waiters on ${queues.keys} keys`),
      h("li", {}, h("strong", { id: "events-minute", text: perMinute }), "events in the last minute")),
    h("h3", { text: "Lock activity" }),
    charts(),
    h("h3", { text: "Longest queues" }),
    table("The keys with the most waiters", ["key", "waiters", "longest wait"],
      queues.items.map((q) => [h("a", { href: `#/locks/${encode(q.key)}`, text: q.key }),
        String(q.waiters), duration(q.longest_wait_ms)]),
      "Nobody waits."),
    h("h3", { text: "Latest events" }),
    table("The latest changes, newest first", ["revision", "type", "resource", "holder", "reason"],
      state.recent.slice(0, 20).map((e) => [String(e.revision), e.type, e.key ?? e.subnet ?? e.group ?? e.session ?? "",
        e.holder ?? "", e.reason ?? ""]),
      "No change since the page opened."));
  return () => true;
}

export async function locks(params) {
  const prefix = params.get("prefix") || "";
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "100" });
  if (prefix) query.set("prefix", prefix);
  if (cursor) query.set("cursor", cursor);
  const list = await api(`/v1/locks?${query}`);
  const rows = list.items.map((l) => [
    h("a", { href: `#/locks/${encode(l.key)}`, text: l.key }), l.holder, l.mode,
    String(l.fencing_token), duration(l.expires_in_ms)]);
  const next = list.next_cursor
    ? h("a", { href: `#/locks?prefix=${encode(prefix)}&cursor=${encode(list.next_cursor)}`, text: "Next page" })
    : "";
  main.replaceChildren(h("h2", { text: "Locks" }), filterForm("locks", [["prefix", "Key prefix"]], params),
    table(`Live locks${prefix ? ` under ${prefix}` : ""}, read at ${new Date().toLocaleTimeString()}`,
      ["key", "holder", "mode", "fencing token", "time left"], rows, "No live lock."), next);
  return (e) => e.key !== undefined && e.key.startsWith(prefix);
}

export async function key(params, name) {
  let lock = null;
  try {
    lock = await api(`/v1/locks/${encode(name)}`);
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  const queue = await api(`/v1/locks/${encode(name)}/waiters`);
  const holders = lock ? (lock.holders || [lock]) : [];
  const force = () => adminAction(
    `Force release ${name}? Every holder loses it now, and the next waiter is granted.`,
    "Force release", () => api(`/v1/locks/${encode(name)}`, "DELETE"));
  main.replaceChildren(
    h("h2", {}, "Lock ", h("code", { text: name })),
    h("h3", { text: "Holders" }),
    lock?.session ? h("p", {}, "Bound to session ", sessionLink(lock.session)) : "",
    table("Who holds the key", ["holder", "fencing token", "acquired", "time left"],
      holders.map((l) => [l.holder, String(l.fencing_token), l.acquired_at, duration(l.expires_in_ms)]),
      "Nobody holds this key."),
    lock ? h("p", {}, h("button", { type: "button", class: "danger", onclick: force, text: "Force release" }),
      h("span", { class: "muted", text: " (admin)" })) : "",
    h("h3", { text: "Queue" }),
    table("Who waits, the next to be granted first",
      ["#", "holder", "mode", "waiting for", "gives up in", "replica"],
      queue.items.map((w) => [String(w.position), w.holder, w.mode, duration(w.waited_ms),
        duration(w.wait_left_ms), w.replica]),
      "Nobody waits for this key."));
  return (e) => e.key === name;
}

export async function session(params, id) {
  let found = null;
  try {
    found = await api(`/v1/sessions/${encode(id)}`);
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  const title = h("h2", {}, "Session ", h("code", { text: id }));
  if (!found) {
    main.replaceChildren(title, h("p", { text: "No live session by this id: it ended, or it was never yours to see." }));
    return (e) => e.session === id;
  }
  const force = () => adminAction(
    `Force close session ${id}? Its locks, unconfirmed reservations and memberships end now.`,
    "Force close", () => api(`/v1/sessions/${encode(id)}`, "DELETE"));
  const fact = (name, value) => [h("dt", { text: name }), h("dd", { text: value })];
  main.replaceChildren(title,
    h("dl", { class: "facts" },
      fact("holder", found.holder), fact("opened", found.acquired_at), fact("TTL", duration(found.ttl_ms)),
      fact("time left", duration(found.expires_in_ms)), fact("locks", found.locks ?? 0),
      fact("unconfirmed reservations", found.reservations ?? 0), fact("memberships", found.members ?? 0),
      fact("metadata", found.metadata ? JSON.stringify(found.metadata) : "—")),
    h("p", {}, h("button", { type: "button", class: "danger", onclick: force, text: "Force close" }),
      h("span", { class: "muted", text: " (admin)" })));
  return (e) => e.session === id;
}
