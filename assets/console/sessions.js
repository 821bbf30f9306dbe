// Sessions: the live ones the token may see, paged on the server, and one
// session with what is bound to it.

import { adminAction, adminButton, api, duration, encode, h, main, table } from "./util.js";

export async function sessions(params) {
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "100" });
  if (cursor) query.set("cursor", cursor);
  const list = await api(`/v1/sessions?${query}`);
  const next = list.next_cursor
    ? h("a", { href: `#/sessions?cursor=${encode(list.next_cursor)}`, text: "Next page" })
    : "";
  main.replaceChildren(h("h2", { text: "Sessions" }),
    table(`Live sessions, read at ${new Date().toLocaleTimeString()}`,
      ["session", "holder", "TTL", "time left", "locks", "unconfirmed reservations", "memberships"],
      list.items.map((s) => [h("a", { href: `#/sessions/${encode(s.id)}`, text: s.id }), s.holder,
        duration(s.ttl_ms), duration(s.expires_in_ms), String(s.locks ?? 0), String(s.reservations ?? 0),
        String(s.members ?? 0)]),
      "No live session."), next);
  // A session opens or ends, or something is bound to one or leaves it.
  return (e) => e.session !== undefined;
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
    adminButton("Force close", force));
  return (e) => e.session === id;
}
