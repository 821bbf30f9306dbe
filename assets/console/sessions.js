// Sessions: the live ones the token may see, paged on the server, and one
// session with the locks, unconfirmed reservations and memberships bound to
// it (what its end would release).

import { adminAction, adminButton, api, duration, encode, endsBy, h, main, nextPage, since, table, whoAmI }
  from "./util.js";

export async function sessions(params) {
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "100" });
  if (cursor) query.set("cursor", cursor);
  const list = await api(`/v1/sessions?${query}`);
  const next = nextPage("sessions", list);
  main.replaceChildren(h("h2", { text: "Sessions" }),
    table(`Live sessions, read at ${new Date().toLocaleTimeString()}`,
      ["session", "holder", "TTL", "time left", "ends by", "locks", "unconfirmed reservations", "memberships"],
      list.items.map((s) => [h("a", { href: `#/sessions/${encode(s.id)}`, text: s.id }), s.holder,
        duration(s.ttl_ms), duration(s.expires_in_ms), endsBy(s), String(s.locks ?? 0), String(s.reservations ?? 0),
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
  const [bound] = await Promise.all([api(`/v1/sessions/${encode(id)}/leases`), whoAmI()]);
  const force = () => adminAction(
    `Force close session ${id}? Its locks, unconfirmed reservations and memberships end now.`,
    "Force close", () => api(`/v1/sessions/${encode(id)}`, "DELETE"));
  const fact = (name, value) => [h("dt", { text: name }), h("dd", { text: value })];
  main.replaceChildren(title,
    h("dl", { class: "facts" },
      fact("holder", found.holder), fact("opened", found.acquired_at), fact("TTL", duration(found.ttl_ms)),
      fact("time left", duration(found.expires_in_ms)), fact("ends by", endsBy(found)),
      fact("locks", found.locks ?? 0),
      fact("unconfirmed reservations", found.reservations ?? 0), fact("memberships", found.members ?? 0),
      fact("metadata", found.metadata ? JSON.stringify(found.metadata) : "—")),
    adminButton("Force close", force),
    bound.truncated ? h("p", { class: "muted", text: "Each list below shows the first 1000; the counts above are all of them." }) : "",
    h("h3", { text: "Locks" }),
    table("The locks bound to this session", ["key", "mode", "fencing token", "held for"],
      bound.locks.map((l) => [h("a", { href: `#/locks/${encode(l.key)}`, text: l.key }), l.mode,
        String(l.fencing_token), since(l.acquired_at)]),
      "No lock is bound to this session."),
    h("h3", { text: "Unconfirmed reservations" }),
    table("The reservations bound to this session", ["pool", "subnet", "fencing token"],
      bound.reservations.map((r) => [h("a", { href: `#/pools/${encode(r.pool)}`, text: r.pool }), r.subnet,
        String(r.fencing_token)]),
      "No unconfirmed reservation is bound to this session."),
    h("h3", { text: "Memberships" }),
    table("The group memberships bound to this session", ["group", "member", "capabilities"],
      bound.members.map((m) => [h("a", { href: `#/groups/${encode(m.group)}`, text: m.group }), m.member,
        m.capabilities ? JSON.stringify(m.capabilities) : "—"]),
      "No membership is bound to this session."));
  // Its own events, and those of what is bound to it.
  return (e) => e.session === id;
}
