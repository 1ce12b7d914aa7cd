// SPDX-License-Identifier: Apache-2.0
// /ui/images: the image store and the local announces, read-only.

import { getJSON } from "./api.js";
import { el, replace } from "./dom.js";
import { bytes, time } from "./format.js";

export async function render(main) {
  replace(main, el("h1", {}, "Images and announces"), el("p", { class: "muted" }, "Loading…"));
  let images, announces;
  try {
    [images, announces] = await Promise.all([getJSON("/v1/images"), getJSON("/v1/ndp/announces")]);
  } catch (e) {
    replace(main, el("p", { class: "error-text", id: "error" }, e.message));
    return;
  }
  const short = (text, n) => (text && text.length > n ? text.slice(0, n - 1) + "…" : text || "—");
  replace(main, el("h1", {}, "Images and announces"),
    el("section", { class: "card", id: "images" }, el("h2", {}, "Images"), images.images.length
      ? el("table", { class: "list" },
        el("tr", {}, ["Name", "Digest", "Platform", "Layers", "Size", "Imported", "Last used", "In use"].map((h) => el("th", {}, h))),
        images.images.map((i) => el("tr", { "data-image": i.name || i.digest },
          el("td", { class: "mono" }, i.name || "<none>"), el("td", { class: "mono", title: i.digest }, short(i.digest, 19)),
          el("td", {}, i.platform), el("td", { class: "num" }, String(i.layers)), el("td", { class: "num" }, bytes(i.size)),
          el("td", {}, time(i.imported_at)), el("td", {}, time(i.last_used_at)), el("td", { class: "num" }, String(i.pins)))))
      : el("p", { class: "muted" }, "The image store is empty.")),
    el("section", { class: "card", id: "announces" }, el("h2", {}, "Announces"), announces.announces.length
      ? el("table", { class: "list" },
        el("tr", {}, ["Agent", "Activation", "SpawnSpec", "TTL", "Announced"].map((h) => el("th", {}, h))),
        announces.announces.map((a) => el("tr", { "data-nid": a.nid },
          el("td", { class: "mono" }, a.nid), el("td", {}, a.activation_mode),
          el("td", { class: "mono", title: a.spawn_spec_ref }, short(a.spawn_spec_ref, 48)),
          el("td", { class: "num" }, a.ttl === null ? "—" : `${a.ttl} s`), el("td", {}, time(a.announced_at)))))
      : el("p", { class: "muted" }, "No agent is announced here.")));
}
