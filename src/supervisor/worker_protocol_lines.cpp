// SPDX-License-Identifier: Apache-2.0
// LineFramer: only a line that may be a frame is held in memory; log output
// (the bulk of what a chatty or flooding worker writes) goes through in runs
// as large as the chunk it arrived in.
#include <cstring>

#include "nps/supervisor/worker_protocol.hpp"

namespace nps::supervisor {

namespace {

bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

}  // namespace

void LineFramer::feed(std::string_view bytes, Sink& sink)
{
    const char* p = bytes.data();
    const char* const end = p + bytes.size();
    // Log bytes of this chunk not yet passed on: [log_begin, p).
    const char* log_begin = p;
    auto flush_log = [&](const char* upto) {
        if (upto > log_begin)
            sink.log(std::string_view(log_begin, static_cast<std::size_t>(upto - log_begin)));
        log_begin = upto;
    };
    auto drop_buffer = [&] {
        pending_.clear();
        if (pending_.capacity() > 64 * 1024)
            std::string().swap(pending_);  // one huge line must not pin its buffer
    };

    while (p < end) {
        switch (mode_) {
        case Mode::line_start: {
            // pending_ may hold blanks that began this line in an earlier
            // chunk; then p is this chunk's start and nothing precedes it.
            const char* line = p;
            const char* q = p;
            while (q < end && is_blank(*q))
                ++q;
            if (q == end) {
                flush_log(line);
                pending_.append(line, end);
                log_begin = p = end;
            } else if (*q == '{') {
                flush_log(line);
                pending_.append(line, q);
                log_begin = p = q;
                mode_ = Mode::candidate;
            } else {
                if (!pending_.empty()) {
                    sink.log(pending_);
                    drop_buffer();
                }
                p = q;
                mode_ = *q == '\n' ? Mode::line_start : Mode::passthrough;
                if (*q == '\n')
                    ++p;
            }
            break;
        }
        case Mode::candidate: {
            const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
            const char* stop = nl ? nl : end;
            if (pending_.size() + static_cast<std::size_t>(stop - p) > max_line_) {
                sink.oversized();
                if (!pending_.empty())
                    sink.log(pending_);
                drop_buffer();
                log_begin = p;
                mode_ = Mode::passthrough;
                break;
            }
            pending_.append(p, stop);
            if (nl) {
                sink.candidate(pending_);
                drop_buffer();
                p = nl + 1;
                mode_ = Mode::line_start;
            } else {
                p = end;
            }
            log_begin = p;
            break;
        }
        case Mode::passthrough: {
            const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
            if (nl) {
                p = nl + 1;
                mode_ = Mode::line_start;
            } else {
                p = end;
            }
            break;
        }
        }
    }
    flush_log(end);
}

void LineFramer::finish(Sink& sink)
{
    if (!pending_.empty()) {
        if (mode_ == Mode::candidate)
            sink.candidate(pending_);
        else
            sink.log(pending_);
    }
    std::string().swap(pending_);
    mode_ = Mode::line_start;
}

}  // namespace nps::supervisor
