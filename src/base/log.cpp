// SPDX-License-Identifier: Apache-2.0
#include "nps/base/log.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace nps::log {

void write(Level level, std::string_view message)
{
    static const bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
    std::string line;
    line.reserve(message.size() + 20);
    if (journal) {
        line += '<';
        line += static_cast<char>('0' + static_cast<int>(level));
        line += '>';
    }
    line += "nps-runner: ";
    line += message;
    line += '\n';
    // One write() per line so lines from several threads do not interleave.
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace nps::log
