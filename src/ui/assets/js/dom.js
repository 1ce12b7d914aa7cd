// SPDX-License-Identifier: Apache-2.0
// Elements built from data. Every string becomes a text node or an
// attribute value, never markup: what a worker wrote stays text.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// el("a", {href: "/ui/", class: "x"}, "text", otherNode, [more])
export function el(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function replace(parent, ...children) {
  parent.replaceChildren();
  build(parent, {}, children);
  return parent;
}

// A <pre> of a JSON value, or an em dash.
export function jsonBlock(value) {
  if (value === undefined || value === null) return el("span", { class: "muted" }, "—");
  return el("pre", { class: "json" }, JSON.stringify(value, null, 2));
}
