// SPDX-License-Identifier: Apache-2.0
// /ui/tasks: newest first, filtered by state, inbox and age, searched by
// task id; the filters live in the URL's query. Refreshed as events arrive.

import { followEvents, getJSON } from "./api.js";
import { el, replace } from "./dom.js";
import { ago, stateClass, time } from "./format.js";

const STATES = ["", "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"];
const AGES = [["", "any age"], ["3600", "last hour"], ["86400", "last day"], ["604800", "last week"]];

export function render(main) {
  const params = new URLSearchParams(location.search);
  const filters = { state: params.get("state") || "", nid: params.get("nid") || "",
    since_seconds: params.get("since_seconds") || "", q: params.get("q") || "" };
  const table = el("div", { id: "task-table" });
  const select = (name, options) => {
    const s = el("select", { name, id: `filter-${name}` },
      options.map(([value, label]) => el("option", { value, selected: value === filters[name] }, label)));
    s.addEventListener("change", () => { filters[name] = s.value; load(); });
    return s;
  };
  const search = el("input", { type: "search", id: "filter-q", placeholder: "task id contains…", value: filters.q });
  search.addEventListener("input", () => { filters.q = search.value.trim(); load(); });
  const inbox = el("select", { name: "nid", id: "filter-nid" }, el("option", { value: "" }, "every inbox"));
  inbox.addEventListener("change", () => { filters.nid = inbox.value; load(); });
  getJSON("/v1/overview").then((o) => {
    for (const i of o.inboxes) inbox.append(el("option", { value: i.nid, selected: i.nid === filters.nid }, i.nid));
  }).catch(() => {});

  replace(main, el("h1", {}, "Tasks"),
    el("div", { class: "controls", id: "filters" },
      select("state", STATES.map((s) => [s, s || "every state"])), inbox, select("since_seconds", AGES), search),
    table);

  let serial = 0;
  async function load() {
    const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    history.replaceState(null, "", `/ui/tasks${query.toString() ? "?" + query : ""}`);
    const mine = ++serial;
    let list;
    try {
      query.set("limit", "200");
      list = await getJSON(`/v1/tasks?${query}`);
    } catch (e) {
      replace(table, el("p", { class: "error-text", id: "error" }, e.message));
      return;
    }
    if (mine !== serial) return;
    replace(table, list.tasks.length ? el("table", { class: "list" },
      el("tr", {}, ["Task", "Inbox", "State", "Created", "Finished", "Error"].map((h) => el("th", {}, h))),
      list.tasks.map((t) => el("tr", { "data-task": t.task_id, "data-state": t.state },
        el("td", { class: "mono" }, el("a", { href: `/ui/tasks/${encodeURIComponent(t.task_id)}` }, t.task_id)),
        el("td", { class: "mono" }, t.nid),
        el("td", {}, el("span", { class: `badge ${stateClass(t.state)}` }, t.state)),
        el("td", { title: time(t.created_at) }, ago(t.created_at)),
        el("td", {}, t.finished_at ? time(t.finished_at) : "—"),
        el("td", { class: "error-text" }, t.error_code || ""))))
      : el("p", { class: "muted", id: "no-tasks" }, "No task matches."));
  }
  load();
  let timer = null;
  const stop = followEvents(null, 0, () => {
    if (!timer) timer = setTimeout(() => { timer = null; load(); }, 500);
  });
  return () => { stop(); clearTimeout(timer); };
}
