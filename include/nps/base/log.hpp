// SPDX-License-Identifier: Apache-2.0
// Logging for loop owners (library code returns errors instead). Lines go to
// stderr, each with its level:
//   nps-runner: warning: task t-1: lease renewal failed, retrying: …
// Under systemd (JOURNAL_STREAM set) each also carries a "<N>" syslog
// priority prefix so journald records the level. Format::json writes one
// JSON object per line instead, with the context's fields where they apply:
//   {"time":"2026-11-29T15:06:27.081Z","level":"info","message":"…",
//    "task_id":"t-1","node_id":"fetch","worker":"w-17-3","agent":"urn:nps:agent:…"}
// (for log shippers; journald still gets the priority prefix).
#pragma once

#include <string_view>

namespace nps::log {

enum class Level { error = 3, warning = 4, notice = 5, info = 6, debug = 7 };

enum class Format { text, json };
// Set once at start-up, before other threads log.
void set_format(Format format);

// What a line is about; empty members are left out of the JSON line (the
// text line says it in its message).
struct Context {
    std::string_view task_id;
    std::string_view node_id;
    std::string_view worker;
    std::string_view agent;
};

void write(Level level, std::string_view message, const Context& context = {});
inline void error(std::string_view m, const Context& c = {}) { write(Level::error, m, c); }
inline void warning(std::string_view m, const Context& c = {}) { write(Level::warning, m, c); }
inline void notice(std::string_view m, const Context& c = {}) { write(Level::notice, m, c); }
inline void info(std::string_view m, const Context& c = {}) { write(Level::info, m, c); }

}  // namespace nps::log
