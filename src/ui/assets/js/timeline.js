// SPDX-License-Identifier: Apache-2.0
// Every attempt of every node on one time axis, to scale: queued (ready,
// waiting for a worker slot and its rootfs), spawn (rootfs and sandbox
// prepared, process started), run, and recorded (its outcome written).
// Built from the task's event log: "<node>:worker" carries the worker's
// dispatched/started/ended times, "<node>:attempt:N", ":completed",
// ":retrying", ":compensating", ":compensated" the rest.

import { svg } from "./dom.js";
import { ms, stateClass } from "./format.js";

const at = (e) => Date.parse(e.at);

// [{node, attempt, compensation, ready, dispatched, started, ended, recorded, state}]
export function attempts(events, edges) {
  const preds = new Map();
  for (const e of edges) {
    if (!preds.has(e.to)) preds.set(e.to, []);
    preds.get(e.to).push(e.from);
  }
  const granted = events.find((e) => e.event === "lease:granted" || e.event === "lease:reclaimed");
  const start = granted ? at(granted) : events.length ? at(events[0]) : Date.now();
  const completedAt = new Map();
  const retryingAt = new Map(); // node → time of its last ":retrying"
  const compensatingAt = new Map();
  const rows = [];
  const open = (node, compensation) =>
    rows.find((r) => r.node === node && r.compensation === compensation && r.recorded === null);

  for (const e of events) {
    const name = e.event || "";
    const d = e.detail || {};
    let m;
    if ((m = /^(.*):worker$/.exec(name))) {
      const node = m[1];
      const compensation = Boolean(d.compensation);
      let ready = start;
      if (compensation) ready = compensatingAt.get(node) ?? start;
      else if ((d.attempt || 1) > 1 && retryingAt.has(node)) ready = retryingAt.get(node);
      else for (const p of preds.get(node) || []) ready = Math.max(ready, completedAt.get(p) ?? ready);
      const dispatched = d.dispatched_at_ms || d.started_at_ms || at(e);
      rows.push({
        node, attempt: d.attempt || 1, compensation, state: d.state || "?",
        ready: Math.min(ready, dispatched), dispatched,
        started: d.started_at_ms || dispatched, ended: d.ended_at_ms || at(e), recorded: null,
        error: d.error_code || null, killed: d.killed_reason || null,
      });
    } else if ((m = /^(.*):attempt:(\d+)$/.exec(name))) {
      const row = open(m[1], false);
      if (row) { row.recorded = at(e); row.outcome = d.outcome; }
      else rows.push({ node: m[1], attempt: Number(m[2]), compensation: false, state: d.outcome || "?",
        ready: at(e), dispatched: at(e), started: at(e), ended: at(e), recorded: at(e), noWorker: true });
    } else if ((m = /^(.*):completed$/.exec(name))) {
      completedAt.set(m[1], at(e));
    } else if ((m = /^(.*):retrying$/.exec(name))) {
      retryingAt.set(m[1], at(e));
    } else if ((m = /^(.*):compensating$/.exec(name))) {
      compensatingAt.set(m[1], at(e));
    } else if ((m = /^(.*):(compensated|compensation_failed)$/.exec(name))) {
      const row = open(m[1], true);
      if (row) row.recorded = at(e);
    }
  }
  return rows;
}

function niceStep(span) {
  const raw = span / 6;
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 0.001))));
  for (const f of [1, 2, 5, 10]) if (raw <= f * p) return f * p;
  return 10 * p;
}

// `live`: the task's workers running now (GET /v1/workers), drawn up to now.
export function drawTimeline(events, edges, running, live = []) {
  const rows = attempts(events, edges);
  for (const w of live) {
    const started = Date.parse(w.started_at);
    if (Number.isNaN(started)) continue;
    rows.push({ node: w.node_id, attempt: w.attempt, compensation: Boolean(w.compensation), state: "RUNNING",
      ready: started, dispatched: started, started, ended: Date.now(), recorded: null });
  }
  const W = 980;
  const LABEL = 210;
  const ROW = 28;
  const TOP = 26;
  const right = W - 16;
  const times = events.map(at).filter((t) => !Number.isNaN(t));
  for (const r of rows) times.push(r.ready, r.ended, r.recorded || r.ended);
  const t0 = Math.min(...times);
  const t1 = Math.max(running ? Date.now() : 0, ...times);
  const span = Math.max(1, t1 - t0);
  const x = (t) => LABEL + ((t - t0) / span) * (right - LABEL);
  const height = TOP + Math.max(1, rows.length) * ROW + 8;

  const root = svg("svg", { class: "timeline", viewBox: `0 0 ${W} ${height}`, width: W, height,
    role: "img", "aria-label": "Timeline of every attempt" });
  const step = niceStep(span);
  for (let t = 0; t <= span + 0.001; t += step) {
    root.append(svg("line", { x1: x(t0 + t), x2: x(t0 + t), y1: TOP - 6, y2: height - 4, class: "tick" }),
      svg("text", { x: x(t0 + t), y: 14, class: "tick-label" }, ms(t)));
  }
  if (!rows.length)
    root.append(svg("text", { x: LABEL, y: TOP + 18, class: "muted" }, "No attempt has ended yet."));
  rows.forEach((r, i) => {
    const y = TOP + i * ROW;
    const label = `${r.node} · ${r.compensation ? "undo" : "attempt"} ${r.attempt}`;
    const g = svg("g", { class: `attempt ${stateClass(r.state)}`, "data-node": r.node,
      "data-attempt": r.attempt, "data-kind": r.compensation ? "compensation" : "run", "data-state": r.state });
    g.append(svg("text", { x: 8, y: y + 17, class: "row-label" }, label.length > 30 ? label.slice(0, 29) + "…" : label));
    const seg = (from, to, cls, what) => {
      if (to < from) return;
      g.append(svg("rect", { x: x(from), y: y + 5, width: Math.max(1.5, x(to) - x(from)), height: ROW - 10,
        class: `seg ${cls}`, "data-segment": cls }, svg("title", {}, `${label}: ${what} ${ms(to - from)}`)));
    };
    if (!r.noWorker) {
      seg(r.ready, r.dispatched, "seg-queued", "queued");
      seg(r.dispatched, r.started, "seg-spawn", "spawn");
      seg(r.started, r.ended, "seg-run", `run (${r.state})`);
      if (r.recorded !== null) seg(r.ended, r.recorded, "seg-record", "recorded after");
    } else {
      seg(r.recorded, r.recorded, "seg-record", "ended without a worker:");
    }
    root.append(g);
  });
  return { svg: root, rows };
}
