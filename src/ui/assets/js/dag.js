// SPDX-License-Identifier: Apache-2.0
// The task's DAG as an SVG graph: nodes in layers by their longest path
// from a root, edges as curves, each node coloured by its state, skipped
// and compensated nodes drawn distinct, the saga's compensation order
// numbered on the nodes it undid.

import { svg } from "./dom.js";
import { stateClass } from "./format.js";

const NODE_W = 168;
const NODE_H = 54;
const GAP_X = 72;
const GAP_Y = 26;
const PAD = 16;

// Edges of the frame: its explicit `edges` and each node's `input_from`.
export function dagEdges(dag) {
  const seen = new Set();
  const edges = [];
  const add = (from, to) => {
    const key = `${from}\u0000${to}`;
    if (!seen.has(key)) { seen.add(key); edges.push({ from, to }); }
  };
  for (const e of (dag && dag.edges) || []) if (e && e.from && e.to) add(String(e.from), String(e.to));
  for (const n of (dag && dag.nodes) || [])
    for (const from of n.input_from || []) add(String(from), String(n.id));
  return edges;
}

// {id → {layer, row}}: a node's layer is the longest path to it from a root.
export function layout(nodeIds, edges) {
  const incoming = new Map(nodeIds.map((id) => [id, []]));
  for (const e of edges) if (incoming.has(e.to) && incoming.has(e.from)) incoming.get(e.to).push(e.from);
  const layer = new Map();
  const visiting = new Set();
  const depth = (id) => {
    if (layer.has(id)) return layer.get(id);
    if (visiting.has(id)) return 0; // a cycle cannot be deposited; stay finite anyway
    visiting.add(id);
    const d = incoming.get(id).reduce((m, p) => Math.max(m, depth(p) + 1), 0);
    visiting.delete(id);
    layer.set(id, d);
    return d;
  };
  const rows = [];
  const place = new Map();
  for (const id of nodeIds) {
    const l = depth(id);
    rows[l] = (rows[l] || 0) + 1;
    place.set(id, { layer: l, row: rows[l] - 1 });
  }
  return { place, layers: rows.length, height: Math.max(1, ...rows.map((r) => r || 0)) };
}

// The order in which the saga compensated nodes: from "<node>:compensating" events.
export function compensationOrder(events) {
  const order = [];
  for (const e of events || []) {
    const m = /^(.*):compensating$/.exec(e.event);
    if (m && !order.includes(m[1])) order.push(m[1]);
  }
  return order;
}

// states: {node id → state}. onSelect(id) when a node is clicked.
export function drawDag(dag, states, events, onSelect, selected) {
  const nodes = ((dag && dag.nodes) || []).map((n) => String(n.id));
  const edges = dagEdges(dag);
  const { place, layers, height } = layout(nodes, edges);
  const width = PAD * 2 + layers * NODE_W + (layers - 1) * GAP_X;
  const fullHeight = PAD * 2 + height * NODE_H + (height - 1) * GAP_Y;
  const pos = (id) => {
    const p = place.get(id);
    return { x: PAD + p.layer * (NODE_W + GAP_X), y: PAD + p.row * (NODE_H + GAP_Y) };
  };
  const compensated = compensationOrder(events);

  const root = svg("svg", {
    class: "dag", viewBox: `0 0 ${width} ${fullHeight}`, width, height: fullHeight,
    role: "img", "aria-label": "DAG of the task",
  });
  root.append(svg("defs", {},
    svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }))));

  for (const e of edges) {
    if (!place.has(e.from) || !place.has(e.to)) continue;
    const a = pos(e.from);
    const b = pos(e.to);
    const x1 = a.x + NODE_W;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const mid = (x1 + x2) / 2;
    root.append(svg("path", {
      class: "edge", "data-from": e.from, "data-to": e.to,
      d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 2},${y2}`, "marker-end": "url(#arrow)",
    }));
  }

  for (const id of nodes) {
    const { x, y } = pos(id);
    const state = states[id] || "PENDING";
    const step = compensated.indexOf(id);
    const g = svg("g", {
      class: `node ${stateClass(state)}${id === selected ? " selected" : ""}`,
      "data-node": id, "data-state": state, transform: `translate(${x},${y})`, tabindex: 0,
      onclick: () => onSelect && onSelect(id),
      onkeydown: (ev) => { if (ev.key === "Enter" && onSelect) onSelect(id); },
    },
    svg("title", {}, `${id}: ${state}`),
    svg("rect", { width: NODE_W, height: NODE_H, rx: 8, ry: 8 }),
    svg("text", { x: 12, y: 22, class: "node-id" }, id.length > 20 ? id.slice(0, 19) + "…" : id),
    svg("text", { x: 12, y: 41, class: "node-state" }, state));
    if (step >= 0) {
      g.append(svg("circle", { cx: NODE_W - 14, cy: 14, r: 10, class: "comp-step" }),
        svg("text", { x: NODE_W - 14, y: 18, class: "comp-step-n", "data-compensation-step": step + 1 }, `${step + 1}`));
    }
    root.append(g);
  }
  return { svg: root, compensated };
}
