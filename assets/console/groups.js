// Groups by name prefix, and a group's live members.

import { api, duration, encode, endsBy, filterForm, h, main, nextPage, sessionLink, table } from "./util.js";

export async function groups(params) {
  const prefix = params.get("prefix") || "";
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "100" });
  if (prefix) query.set("prefix", prefix);
  if (cursor) query.set("cursor", cursor);
  const list = await api(`/v1/groups?${query}`);
  const next = nextPage("groups", list, { prefix });
  main.replaceChildren(h("h2", { text: "Groups" }), filterForm("groups", [["prefix", "Group prefix"]], params),
    table(`Groups${prefix ? ` under ${prefix}` : ""}`, ["group", "members", "created"],
      list.items.map((g) => [h("a", { href: `#/groups/${encode(g.name)}`, text: g.name }),
        String(g.members), g.created_at]),
      "No group."), next);
  return (e) => e.group !== undefined && e.group.startsWith(prefix);
}

// A member names no holder; one bound to a session has its session's, which
// never changes: read once per session, at most 50 new ones per read.
const holders = new Map();
async function sessionHolders(ids) {
  const unknown = [...new Set(ids)].filter((id) => id && !holders.has(id)).slice(0, 50);
  await Promise.all(unknown.map(async (id) => {
    try {
      holders.set(id, (await api(`/v1/sessions/${encode(id)}`)).holder);
    } catch (error) {
      if (error.status !== 404) throw error;
      holders.set(id, null); // ended, or not this token's to see
    }
  }));
}

export async function group(params, name) {
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "500" });
  if (cursor) query.set("cursor", cursor);
  const [about, members] = await Promise.all([api(`/v1/groups/${encode(name)}`),
    api(`/v1/groups/${encode(name)}/members?${query}`)]);
  await sessionHolders(members.items.map((m) => m.session));
  const next = nextPage(`groups/${encode(name)}`, members);
  main.replaceChildren(h("h2", {}, "Group ", h("code", { text: name })),
    h("p", { class: "muted", text: `Created ${about.created_at}; ${about.members} live members.${
      about.metadata ? ` Metadata: ${JSON.stringify(about.metadata)}` : ""}` }),
    table(`Live members of ${name}`, ["member", "holder (its session's)", "capabilities", "joined", "time left", "ends by",
      "session"],
      members.items.map((m) => [m.member, holders.get(m.session) ?? "—",
        m.capabilities == null ? "—" : JSON.stringify(m.capabilities),
        m.joined_at, duration(m.expires_in_ms), endsBy(m), sessionLink(m.session)]),
      "No live member."), next);
  return (e) => e.group === name;
}
