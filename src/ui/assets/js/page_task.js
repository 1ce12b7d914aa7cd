// SPDX-License-Identifier: Apache-2.0
// /ui/tasks/{id}: the DAG, the timeline, node details, the node logs
// (followed while a node runs), live updates from the task's event feed,
// and Cancel.

import { followEvents, followLog, getJSON, send } from "./api.js";
import { dagEdges, drawDag } from "./dag.js";
import { el, jsonBlock, replace } from "./dom.js";
import { ms, stateClass, time } from "./format.js";
import { drawTimeline } from "./timeline.js";

const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED"]);

export function render(main, taskId) {
  const view = {
    task: null, workers: [], selected: null, logNode: null, logStream: "stderr",
    stopEvents: null, stopLog: null, refreshTimer: null, lastSeq: 0,
  };
  const header = el("section", { class: "task-head" });
  const graph = el("section", { class: "card" }, el("h2", {}, "Graph"), el("div", { id: "graph", class: "scroll" }));
  const timeline = el("section", { class: "card" }, el("h2", {}, "Timeline"), el("div", { id: "timeline", class: "scroll" }));
  const details = el("section", { class: "card", id: "details" });
  const logs = el("section", { class: "card", id: "logs" });
  replace(main, header, graph, timeline, details, logs);

  // What each node is now: its record, else running (a worker of it runs), else pending.
  const nodeStates = () => {
    const states = {};
    const running = new Set(view.workers.filter((w) => w.task_id === taskId).map((w) => w.node_id));
    for (const n of (view.task.dag && view.task.dag.nodes) || []) {
      const record = view.task.nodes[n.id];
      states[n.id] = record ? record.state : running.has(n.id) ? "RUNNING" : "PENDING";
    }
    return states;
  };

  const drawHeader = () => {
    const t = view.task;
    const cancel = el("button", { id: "cancel", class: "danger", type: "button" }, "Cancel task");
    let armed = false;
    cancel.addEventListener("click", async () => {
      if (!armed) {
        armed = true;
        cancel.textContent = "Confirm: cancel this task";
        setTimeout(() => { armed = false; cancel.textContent = "Cancel task"; }, 5000);
        return;
      }
      cancel.disabled = true;
      try {
        await send("POST", `/v1/tasks/${encodeURIComponent(taskId)}/cancel`);
        refresh();
      } catch (e) {
        replace(cancel, `Cancel failed: ${e.message}`);
      }
    });
    replace(header,
      el("h1", {}, "Task ", el("span", { class: "mono", id: "task-id" }, t.task_id),
        " ", el("span", { class: `badge ${stateClass(t.state)}`, id: "task-state" }, t.state)),
      el("dl", { class: "facts" },
        el("dt", {}, "Inbox"), el("dd", { class: "mono" }, t.nid),
        el("dt", {}, "Created"), el("dd", {}, time(t.created_at)),
        el("dt", {}, "Finished"), el("dd", {}, time(t.finished_at)),
        el("dt", {}, "Claims"), el("dd", {}, String(t.claims)),
        el("dt", {}, "Lease"), el("dd", { class: "mono" }, t.lease ? `${t.lease.runner_nid} until ${time(t.lease.lease_expiry)}` : "—"),
        t.error_code ? [el("dt", {}, "Error"), el("dd", { class: "error-text" }, `${t.error_code}: ${t.error_message || ""}`)] : null),
      TERMINAL.has(t.state) ? null : cancel);
  };

  // The node's last forward worker (a compensation's params are its own).
  const workerEvent = (node) => {
    let found = null;
    for (const e of view.task.events)
      if (e.event === `${node}:worker` && e.detail && !e.detail.compensation) found = e.detail;
    return found;
  };

  const drawDetails = (states) => {
    const id = view.selected;
    if (!id) { replace(details, el("h2", {}, "Node"), el("p", { class: "muted" }, "Select a node in the graph.")); return; }
    const record = view.task.nodes[id] || {};
    const node = ((view.task.dag && view.task.dag.nodes) || []).find((n) => n.id === id) || {};
    const w = workerEvent(id) || {};
    const row = (k, v) => [el("dt", {}, k), el("dd", {}, v)];
    replace(details, el("h2", {}, "Node ", el("span", { class: "mono", id: "detail-node" }, id)),
      el("dl", { class: "facts" },
        row("State", el("span", { class: `badge ${stateClass(states[id])}`, id: "detail-state" }, states[id])),
        row("Agent", el("span", { class: "mono" }, node.agent || "—")),
        row("Action", el("span", { class: "mono" }, node.action || "—")),
        row("Attempts", String(record.attempts ?? "—")),
        row("Error", record.error_code ? el("span", { class: "error-text", id: "detail-error" },
          `${record.error_code}: ${record.error_message || ""}`) : "—"),
        row("Killed", record.killed_reason || w.killed_reason || "—"),
        row("Image", el("span", { class: "mono" }, w.image || "—")),
        row("Limits", jsonBlock(w.limits)),
        row("Params (after mapping)", w.params_truncated ? "(over 16 KiB: not recorded)" : jsonBlock(w.params)),
        row("Result", el("div", { id: "detail-result" }, jsonBlock(record.result)))));
  };

  const logText = el("pre", { id: "log", class: "log" });
  const logNote = el("p", { class: "muted", id: "log-note" });
  const startLog = () => {
    if (view.stopLog) view.stopLog();
    logText.textContent = "";
    const node = view.logNode;
    if (!node) return;
    const state = nodeStates()[node];
    if (TERMINAL.has(view.task.state) || (state && state !== "RUNNING" && state !== "PENDING")) {
      logNote.textContent = "The last worker's log:";
      getJSON(`/v1/tasks/${encodeURIComponent(taskId)}/nodes/${encodeURIComponent(node)}/log?stream=${view.logStream}`)
        .then((l) => { logText.textContent = l.text; })
        .catch((e) => { logNote.textContent = e.status === 404 ? "No worker of this node ran here." : e.message; });
      return;
    }
    logNote.textContent = "Following: the log grows as the worker writes.";
    view.stopLog = followLog(taskId, node, view.logStream, (chunk) => {
      logText.append(document.createTextNode(chunk));
      logText.scrollTop = logText.scrollHeight;
    }, (error) => {
      logNote.textContent = error ? (error.message || String(error)) : "The node's worker ended.";
    });
  };

  const drawLogs = () => {
    const nodes = ((view.task.dag && view.task.dag.nodes) || []).map((n) => n.id);
    const pick = el("select", { id: "log-node" }, nodes.map((n) => el("option", { value: n, selected: n === view.logNode }, n)));
    pick.addEventListener("change", () => { view.logNode = pick.value; startLog(); });
    const stream = el("select", { id: "log-stream" },
      ["stderr", "stdout"].map((s) => el("option", { value: s, selected: s === view.logStream }, s)));
    stream.addEventListener("change", () => { view.logStream = stream.value; startLog(); });
    replace(logs, el("h2", {}, "Logs"), el("div", { class: "controls" }, "Node ", pick, " stream ", stream), logNote, logText);
  };

  const chooseLogNode = (states) => {
    const order = ((view.task.dag && view.task.dag.nodes) || []).map((n) => n.id);
    return order.find((n) => states[n] === "RUNNING") ||
      order.find((n) => states[n] === "FAILED") || order.find((n) => states[n] === "PENDING") || order[0] || null;
  };

  const draw = () => {
    const states = nodeStates();
    drawHeader();
    const { svg: dagSvg, compensated } = drawDag(view.task.dag, states, view.task.events,
      (id) => { view.selected = id; draw(); }, view.selected);
    replace(graph.querySelector("#graph"), dagSvg,
      compensated.length ? el("p", { id: "compensation-order" }, "Compensation order: ",
        compensated.map((n, i) => [i ? " → " : "", el("span", { class: "mono" }, `${i + 1}. ${n}`)])) : null,
      el("ul", { class: "legend" }, ["PENDING", "RUNNING", "COMPLETED", "FAILED", "SKIPPED", "CANCELLED", "COMPENSATED"]
        .map((s) => el("li", { class: stateClass(s) }, s))));
    const edges = dagEdges(view.task.dag);
    replace(timeline.querySelector("#timeline"), drawTimeline(view.task.events, edges, !TERMINAL.has(view.task.state),
      view.workers.filter((w) => w.task_id === taskId && w.started_at)).svg,
      el("ul", { class: "legend segments" }, [["seg-queued", "queued"], ["seg-spawn", "spawn (rootfs, sandbox)"],
        ["seg-run", "run"], ["seg-record", "recorded"]].map(([cls, label]) => el("li", { class: cls }, label))));
    drawDetails(states);
    // Follow the running node's log unless the operator picked one.
    const pick = view.logPicked ? view.logNode : chooseLogNode(states);
    if (pick !== view.logNode || !logs.firstChild) {
      view.logNode = pick;
      drawLogs();
      startLog();
    }
  };

  const refresh = async () => {
    try {
      const [task, workers] = await Promise.all([
        getJSON(`/v1/tasks/${encodeURIComponent(taskId)}`),
        getJSON("/v1/workers").catch(() => ({ workers: [] })),
      ]);
      const wasRunning = view.task && !TERMINAL.has(view.task.state);
      view.task = task;
      view.workers = workers.workers || [];
      if (!view.selected) view.selected = ((task.dag && task.dag.nodes) || [])[0]?.id || null;
      for (const e of task.events) view.lastSeq = Math.max(view.lastSeq, e.seq);
      draw();
      if (wasRunning && TERMINAL.has(task.state) && view.logNode) startLog();
      if (!view.stopEvents && !TERMINAL.has(task.state)) {
        view.stopEvents = followEvents(taskId, view.lastSeq, () => later(), () => { view.stopEvents = null; later(); });
      }
      document.body.dataset.taskState = task.state;
    } catch (e) {
      replace(main, el("p", { class: "error-text", id: "error" }, e.message));
    }
  };
  // Events come in bursts: one refresh per burst.
  const later = () => {
    if (view.refreshTimer) return;
    view.refreshTimer = setTimeout(() => { view.refreshTimer = null; refresh(); }, 150);
  };
  // A worker starting writes no event: a running task is also looked at each second.
  const tick = setInterval(() => { if (view.task && !TERMINAL.has(view.task.state)) later(); }, 1000);
  logs.addEventListener("change", () => { view.logPicked = true; });
  refresh();
  return () => {
    clearInterval(tick);
    if (view.stopEvents) view.stopEvents();
    if (view.stopLog) view.stopLog();
  };
}
