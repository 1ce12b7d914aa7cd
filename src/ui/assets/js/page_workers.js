// SPDX-License-Identifier: Apache-2.0
// /ui/workers: the workers running now, with memory and CPU from their cgroups.

import { getJSON } from "./api.js";
import { el, replace } from "./dom.js";
import { bytes, stateClass } from "./format.js";

export function render(main) {
  const table = el("div", { id: "worker-table" });
  replace(main, el("h1", {}, "Workers"), table);
  const draw = async () => {
    let list;
    try { list = await getJSON("/v1/workers"); } catch (e) {
      replace(table, el("p", { class: "error-text", id: "error" }, e.message));
      return;
    }
    replace(table, list.workers.length ? el("table", { class: "list" },
      el("tr", {}, ["Task", "Node", "Attempt", "Agent", "Image", "Worker", "PID", "State", "Uptime", "Memory", "CPU"]
        .map((h) => el("th", {}, h))),
      list.workers.map((w) => el("tr", { "data-task": w.task_id, "data-node": w.node_id },
        el("td", { class: "mono" }, el("a", { href: `/ui/tasks/${encodeURIComponent(w.task_id)}` }, w.task_id)),
        el("td", { class: "mono" }, w.node_id),
        el("td", {}, `${w.attempt}${w.compensation ? " (undo)" : ""}`),
        el("td", { class: "mono" }, w.agent), el("td", { class: "mono" }, w.image || "—"),
        el("td", { class: "mono" }, w.worker), el("td", { class: "num" }, w.pid ?? "—"),
        el("td", {}, el("span", { class: `badge ${stateClass(w.state === "running" ? "RUNNING" : "PENDING")}` }, w.state)),
        el("td", { class: "num" }, w.uptime_seconds === null ? "—" : `${w.uptime_seconds.toFixed(1)} s`),
        el("td", { class: "num memory" }, `${bytes(w.memory_bytes)}${w.limits.memory_bytes ? ` / ${bytes(w.limits.memory_bytes)}` : ""}`),
        el("td", { class: "num cpu" }, w.cpu_seconds === null ? "—" : `${w.cpu_seconds.toFixed(2)} s`))))
      : el("p", { class: "muted", id: "no-workers" }, "No worker runs now."));
  };
  draw();
  const timer = setInterval(draw, 2000);
  return () => clearInterval(timer);
}
