// What every page of the console shares: elements, requests to the server
// that served the page (with the operator's token), tables, a confirm step.

export const base = new URL("..", import.meta.url).href.replace(/\/$/, "");
export const main = document.getElementById("main");
const problemBox = document.getElementById("problem");
const actionBox = document.getElementById("action");

// The operator's token, and who listens to the event stream besides the
// pages' re-reads (the events page's tail).
export const state = { token: sessionStorage.getItem("leasehold-token") || "", tap: null };

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") el.textContent = value;
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) el.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    el.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  }
  return el;
}

export function showProblem(message) {
  problemBox.hidden = !message;
  problemBox.textContent = message || "";
}

// What an admin action came to; it stays until the operator leaves the page.
export function showAction(message) {
  actionBox.hidden = !message;
  actionBox.textContent = message || "";
}

export function headers(extra = {}) {
  return state.token ? { ...extra, Authorization: `Bearer ${state.token}` } : extra;
}

// A request; a problem answer becomes an Error carrying its status and title.
export async function api(path, method = "GET") {
  const response = await fetch(base + path, { method, headers: headers({ Accept: "application/json" }) });
  if (response.status === 204) return null;
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.detail || body.title || `${path} answered ${response.status}`);
    error.status = response.status;
    error.title = body.title || response.statusText;
    throw error;
  }
  return body;
}

export const encode = (text) => encodeURIComponent(text);
// How long ago an RFC 3339 time was ("—" for none).
export const since = (at) => (at ? duration(Date.now() - Date.parse(at)) : "—");
export const duration = (ms) => (ms === null || ms === undefined ? "—"
  : ms >= 60000 ? `${Math.round(ms / 60000)} min` : `${(ms / 1000).toFixed(1)} s`);
// The end of a lease's tenure (its cap, max_lifetime_ms): when, and how
// long is left; "—" for a lease without a cap.
export const endsBy = (lease) => (lease.ends_by
  ? `${lease.ends_by} (${duration(lease.lifetime_left_ms)} left)` : "—");

// The link to a list's next page: the page's address with its cursor ("" on
// the last page). `filters` are the page's own parameters, kept.
export function nextPage(path, list, filters = {}) {
  if (!list.next_cursor) return "";
  const query = new URLSearchParams(filters);
  query.set("cursor", list.next_cursor);
  return h("a", { href: `#/${path}?${query}`, text: "Next page" });
}

export function table(caption, columns, rows, empty) {
  if (rows.length === 0) return h("p", { class: "muted", text: empty });
  return h("table", {},
    h("caption", { class: "muted", text: caption }),
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", text: c })))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => h("td", {}, c))))));
}

// A filter form that puts its fields in the page's address.
export function filterForm(path, fields, values) {
  return h("form", { role: "search", class: "filters", onsubmit: (e) => {
    e.preventDefault();
    const query = new URLSearchParams();
    for (const [name] of fields) if (e.target[name].value) query.set(name, e.target[name].value);
    location.hash = `#/${path}${query.size ? `?${query}` : ""}`;
  } }, fields.map(([name, label]) => [
    h("label", { for: `filter-${name}`, text: label }),
    h("input", { id: `filter-${name}`, name, value: values.get(name) || "" })]),
  h("button", { type: "submit", text: "Filter" }));
}

// Whether the signed-in token may use admin actions (`caller.admin` of
// `GET /v1/status`): read once per sign-in, by the first page that offers
// one (the overview learns it from its own read).
export async function whoAmI() {
  if (state.admin !== undefined) return;
  try {
    state.admin = (await api("/v1/status")).caller.admin === true;
  } catch (error) {
    if (error.status !== 401 && error.status !== 403) throw error;
    state.admin = false;
  }
}

// An admin action's button, shown only to a token that may use it.
export function adminButton(label, onclick) {
  return state.admin ? h("p", {}, h("button", { type: "button", class: "danger", onclick, text: label }),
    h("span", { class: "muted", text: " (admin)" })) : "";
}

export const sessionLink = (id) => (id ? h("a", { href: `#/sessions/${encode(id)}`, text: id }) : "—");

// An admin action behind a confirmation in the page (a modal <dialog>), then
// the server's answer: a refusal (403 for a token without admin) is shown
// as the server words it.
export async function adminAction(question, verb, run) {
  const dialog = h("dialog", { "aria-labelledby": "confirm-title" },
    h("form", { method: "dialog" },
      h("h2", { id: "confirm-title", text: verb }),
      h("p", { text: question }),
      h("div", { class: "actions" },
        h("button", { value: "cancel", text: "Cancel", autofocus: "" }),
        h("button", { value: "confirm", class: "danger", text: verb }))));
  document.body.append(dialog);
  const answer = await new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue), { once: true });
    dialog.showModal();
  });
  dialog.remove();
  if (answer !== "confirm") return false;
  try {
    await run();
    showAction(`${verb}: done.`);
    return true;
  } catch (error) {
    showAction(`${verb}: the server refused (${error.status} ${error.title}): ${error.message}`);
    return false;
  }
}
