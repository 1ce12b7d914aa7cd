// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/sse_reader.hpp"

namespace nps::cli {

bool SseReader::feed(std::string_view bytes)
{
    for (char c : bytes) {
        if (stopped_)
            return false;
        if (c == '\n' && after_cr_) {
            after_cr_ = false;
            continue;
        }
        after_cr_ = c == '\r';
        if (c == '\n' || c == '\r') {
            const std::string text = std::move(pending_);
            pending_.clear();
            if (!line(text))
                stopped_ = true;
            continue;
        }
        if (pending_.size() < kMaxLineBytes)
            pending_.push_back(c);
    }
    return !stopped_;
}

bool SseReader::line(std::string_view text)
{
    if (text.empty()) {
        // Dispatch; an event without data lines is no event.
        bool go_on = true;
        if (has_data_)
            go_on = on_event_(event_);
        const std::string last_id = event_.id;
        event_ = SseEvent{};
        event_.id = last_id;  // the last event id carries over
        has_data_ = false;
        return go_on;
    }
    if (text.front() == ':')
        return true;  // a comment (keep-alive)
    const std::size_t colon = text.find(':');
    const std::string_view field = text.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ')
        value.remove_prefix(1);
    if (field == "data") {
        if (has_data_)
            event_.data.push_back('\n');
        event_.data.append(value);
        has_data_ = true;
    } else if (field == "event") {
        event_.type = std::string(value);
    } else if (field == "id") {
        if (value.find('\0') == std::string_view::npos)
            event_.id = std::string(value);
    }
    return true;  // "retry" and unknown fields: ignored
}

}  // namespace nps::cli
