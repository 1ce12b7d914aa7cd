// SPDX-License-Identifier: Apache-2.0
// Logging for loop owners (library code returns errors instead). Lines go to
// stderr; under systemd (JOURNAL_STREAM set) each carries a "<N>" syslog
// priority prefix so journald records the level. Format::json writes one
// JSON object per line instead of text:
//   {"time":"2026-11-29T15:06:27.081Z","level":"info","message":"…"}
// (for log shippers; journald still gets the priority prefix).
#pragma once

#include <string_view>

namespace nps::log {

enum class Level { error = 3, warning = 4, notice = 5, info = 6, debug = 7 };

enum class Format { text, json };
// Set once at start-up, before other threads log.
void set_format(Format format);

void write(Level level, std::string_view message);
inline void error(std::string_view m) { write(Level::error, m); }
inline void warning(std::string_view m) { write(Level::warning, m); }
inline void notice(std::string_view m) { write(Level::notice, m); }
inline void info(std::string_view m) { write(Level::info, m); }

}  // namespace nps::log
