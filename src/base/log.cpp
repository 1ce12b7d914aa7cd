// SPDX-License-Identifier: Apache-2.0
#include "nps/base/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "nps/base/clock.hpp"
#include "nps/base/json_string.hpp"
#include "nps/base/time_format.hpp"

namespace nps::log {

namespace {

std::atomic<Format> g_format{Format::text};

const char* level_name(Level level)
{
    switch (level) {
    case Level::error: return "error";
    case Level::warning: return "warning";
    case Level::notice: return "notice";
    case Level::info: return "info";
    case Level::debug: return "debug";
    }
    return "info";
}

}  // namespace

void set_format(Format format)
{
    g_format = format;
}

void write(Level level, std::string_view message, const Context& context)
{
    static const bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
    std::string line;
    line.reserve(message.size() + 20);
    if (journal) {
        line += '<';
        line += static_cast<char>('0' + static_cast<int>(level));
        line += '>';
    }
    if (g_format.load(std::memory_order_relaxed) == Format::json) {
        line += "{\"time\":\"" + format_rfc3339_ms(SystemClock::instance().now_ms()) + "\",\"level\":\"";
        line += level_name(level);
        line += "\",\"message\":";
        append_json_string(line, message);
        for (const auto& [name, value] : {std::pair{"task_id", context.task_id}, std::pair{"node_id", context.node_id},
                                          std::pair{"worker", context.worker}, std::pair{"agent", context.agent}}) {
            if (value.empty())
                continue;
            line += ",\"";
            line += name;
            line += "\":";
            append_json_string(line, value);
        }
        line += "}\n";
    } else {
        line += "nps-runner: ";
        line += level_name(level);
        line += ": ";
        line += message;
        line += '\n';
    }
    // One write() per line so lines from several threads do not interleave.
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace nps::log
