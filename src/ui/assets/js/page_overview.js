// SPDX-License-Identifier: Apache-2.0
// /ui/: inboxes and their depth, tasks by state, workers, the sandbox and
// limits in force, the report outbox, the store's health.

import { getJSON } from "./api.js";
import { el, replace } from "./dom.js";
import { bytes, stateClass } from "./format.js";

const card = (title, id, ...body) => el("section", { class: "card", id }, el("h2", {}, title), body);
const kv = (pairs) => el("dl", { class: "facts" }, pairs.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
const limit = (v, unit) => (v === null || v === undefined ? "none" : unit ? unit(v) : String(v));

export function render(main) {
  const draw = async () => {
    let overview, health, caps;
    try {
      [overview, health, caps] = await Promise.all([
        getJSON("/v1/overview"),
        fetch("/healthz", { credentials: "same-origin" }).then((r) => r.json()),
        getJSON("/v1/capabilities"),
      ]);
    } catch (e) {
      replace(main, el("p", { class: "error-text", id: "error" }, e.message));
      return;
    }
    const ex = health.executor || {};
    const w = caps.limits.workers;
    const ns = caps.namespaces || {};
    replace(main,
      el("h1", {}, "Overview"),
      el("div", { class: "grid" },
        card("Inboxes", "inboxes", overview.inboxes.length
          ? el("table", {}, el("tr", {}, el("th", {}, "NID"), el("th", { class: "num" }, "Depth")),
            overview.inboxes.map((i) => el("tr", {}, el("td", { class: "mono" },
              el("a", { href: `/ui/tasks?nid=${encodeURIComponent(i.nid)}` }, i.nid)),
            el("td", { class: "num", "data-depth": i.depth }, String(i.depth)))))
          : el("p", { class: "muted" }, "This runner claims from no inbox.")),
        card("Tasks", "tasks-by-state", el("ul", { class: "counts" },
          ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"].map((state) => [state, overview.tasks[state] ?? 0]).map(([state, n]) => el("li", { class: stateClass(state), "data-state": state },
            el("a", { href: `/ui/tasks?state=${state}` }, el("span", { class: "count" }, String(n)), " ", state))))),
        card("Workers", "workers-summary", kv([
          ["Running", el("a", { href: "/ui/workers" }, `${overview.workers_running} of at most ${ex.max_workers ?? "?"}`)],
          ["Tasks running", `${ex.tasks_running ?? "?"} of at most ${ex.max_tasks ?? "?"}`],
          ["Spawn pool", ex.spawn_pool ? `${ex.spawn_pool.ready} ready of ${ex.spawn_pool.size}` : "—"],
        ])),
        card("Sandbox", "sandbox", kv([
          ["cgroups", `${caps.cgroup.mode}${caps.cgroup.problem ? ` (${caps.cgroup.problem})` : ""}`],
          ...Object.entries(caps.cgroup.limits || {}).map(([c, by]) => [`  ${c}`, by ? `enforced (${by})` : "not enforceable"]),
          ["User namespace", ns.user ? `${ns.user.enabled ? "on" : "off"} (${ns.user.reason})` : "—"],
          ["Network", ns.network && ns.network.per_task ? "a namespace of its own per task (loopback only)" : "—"],
        ])),
        card("Limits per worker", "limits", el("table", {},
          el("tr", {}, el("th", {}, ""), el("th", {}, "default"), el("th", {}, "ceiling")),
          [["memory", "memory_bytes", bytes], ["CPU (millicores)", "cpu_millicores"], ["pids", "pids"],
            ["disk", "disk_bytes", bytes], ["max runtime (s)", "max_runtime_seconds"]]
            .map(([label, key, unit]) => el("tr", {}, el("td", {}, label),
              el("td", {}, limit(w.defaults[key], unit)), el("td", {}, limit(w.ceilings[key], unit)))))),
        card("Reports", "reports", kv([
          ["Outbox backlog", el("span", { "data-backlog": overview.reports.backlog }, String(overview.reports.backlog))],
          ["Dead reports", el("span", { class: overview.reports.dead ? "error-text" : "" }, String(overview.reports.dead))],
        ])),
        card("Store", "store", kv([
          ["Status", el("span", { class: `badge ${health.status === "ok" ? "state-completed" : "state-failed"}` }, health.status)],
          ["Schema", String(health.schema_version)],
          ...(health.problem ? [["Problem", el("span", { class: "error-text" }, health.problem)]] : []),
          ["Version", health.version], ["Runner", el("span", { class: "mono" }, health.runner_nid)],
        ]))));
  };
  draw();
  const timer = setInterval(draw, 5000);
  return () => clearInterval(timer);
}
