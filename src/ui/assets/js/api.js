// SPDX-License-Identifier: Apache-2.0
// The daemon's HTTP API, as the dashboard uses it: same origin, the session
// cookie sent by the browser, the anti-CSRF token on every write.

let csrf = null;

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? `${body.error}: ${body.message}` : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error;
  }
}

async function answer(response) {
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = { message: text }; }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

export async function getJSON(path) {
  return answer(await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" }));
}

export async function send(method, path, body) {
  const headers = { Accept: "application/json" };
  if (csrf) headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return answer(await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
}

// Who we are to the daemon; keeps the session's anti-CSRF token.
export async function session() {
  const s = await getJSON("/ui/session");
  csrf = s.csrf;
  return s;
}

// Server-Sent Events of one task (or of every task without taskId), from
// after `after`; onEvent(event) per event, onEnd(state) once the task ended.
// Returns a function that stops following.
export function followEvents(taskId, after, onEvent, onEnd) {
  const base = taskId ? `/v1/tasks/${encodeURIComponent(taskId)}/events` : "/v1/events";
  const source = new EventSource(`${base}?follow=1${after ? `&after=${after}` : ""}`);
  source.onmessage = (m) => { try { onEvent(JSON.parse(m.data)); } catch { /* not JSON: ignored */ } };
  source.addEventListener("end", (m) => {
    source.close();
    let state = null;
    try { state = JSON.parse(m.data).state; } catch { /* ignored */ }
    if (onEnd) onEnd(state);
  });
  return () => source.close();
}

// A node's log, followed as it grows: onText(chunk) as it arrives, onDone()
// when the node's workers ended. Returns a function that stops following.
export function followLog(taskId, nodeId, stream, onText, onDone) {
  const controller = new AbortController();
  const path = `/v1/tasks/${encodeURIComponent(taskId)}/nodes/${encodeURIComponent(nodeId)}/log` +
    `?stream=${stream}&follow=1`;
  (async () => {
    try {
      const response = await fetch(path, { signal: controller.signal, credentials: "same-origin" });
      if (!response.ok) { onText(""); if (onDone) onDone(await answer(response).catch((e) => e)); return; }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        onText(decoder.decode(value, { stream: true }));
      }
      if (onDone) onDone(null);
    } catch (e) {
      if (e.name !== "AbortError" && onDone) onDone(e);
    }
  })();
  return () => controller.abort();
}
