// SPDX-License-Identifier: Apache-2.0
// Numbers and times as people read them.

export function ms(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  if (value < 1) return `${value.toFixed(2)} ms`;
  if (value < 1000) return `${Math.round(value)} ms`;
  if (value < 60000) return `${(value / 1000).toFixed(value < 10000 ? 2 : 1)} s`;
  const minutes = Math.floor(value / 60000);
  if (minutes < 60) return `${minutes} min ${Math.round((value % 60000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function bytes(value) {
  if (value === null || value === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = Number(value);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

// "2026-12-02T19:02:42.123Z" → local "19:02:42.123" (today) or date and time.
export function time(text) {
  if (!text) return "—";
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) return String(text);
  const hms = d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
  return d.toDateString() === new Date().toDateString() ? hms : `${d.toISOString().slice(0, 10)} ${hms}`;
}

export function ago(text) {
  const t = Date.parse(text);
  if (Number.isNaN(t)) return "—";
  return `${ms(Math.max(0, Date.now() - t))} ago`;
}

export function stateClass(state) {
  return "state-" + String(state || "unknown").toLowerCase().replace(/[^a-z_]/g, "");
}
