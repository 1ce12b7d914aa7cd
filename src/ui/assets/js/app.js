// SPDX-License-Identifier: Apache-2.0
// The dashboard's entry: one page per URL (/ui/, /ui/tasks, /ui/tasks/{id},
// /ui/workers, /ui/images); each page module draws into <main> and returns
// a function that stops its timers and feeds.

import { session } from "./api.js";
import { el, replace } from "./dom.js";
import * as overview from "./page_overview.js";
import * as images from "./page_images.js";
import * as task from "./page_task.js";
import * as tasks from "./page_tasks.js";
import * as workers from "./page_workers.js";

function route(path) {
  if (path === "/ui/" || path === "/ui") return ["overview", (m) => overview.render(m)];
  if (path === "/ui/tasks") return ["tasks", (m) => tasks.render(m)];
  if (path.startsWith("/ui/tasks/")) {
    const id = decodeURIComponent(path.slice("/ui/tasks/".length));
    document.title = `${id} · nps-runner`;
    return ["tasks", (m) => task.render(m, id)];
  }
  if (path === "/ui/workers") return ["workers", (m) => workers.render(m)];
  if (path === "/ui/images") return ["images", (m) => images.render(m)];
  return [null, (m) => replace(m, el("p", {}, "No such page."))];
}

async function start() {
  const main = document.getElementById("main");
  try {
    const s = await session();
    replace(document.getElementById("runner"), `${s.runner_nid} · ${s.version}`);
  } catch (e) {
    replace(main, el("p", { class: "error-text", id: "error" },
      e.status === 401 ? "Not logged in: run `nps-runner ui` and open the URL it prints." : e.message));
    return;
  }
  const [page, draw] = route(location.pathname);
  for (const a of document.querySelectorAll("nav a"))
    if (a.dataset.page === page) a.classList.add("current");
  draw(main);
  document.body.dataset.ready = "1";
}

start();
