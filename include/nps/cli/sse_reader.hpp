// SPDX-License-Identifier: Apache-2.0
// An incremental reader of a Server-Sent Events stream (the WHATWG HTML
// "event stream" format): feed it the bytes as they arrive, get each event
// once its blank line is in. Lines end in LF, CRLF or CR; ':' lines are
// comments; "data" lines join with LF; "id" and "event" are kept per event.
// A line longer than kMaxLineBytes is cut (the daemon never sends one).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace nps::cli {

struct SseEvent {
    std::string id;              // the last "id:" (empty: none in this event)
    std::string type = "message";  // "event:", default "message"
    std::string data;
};

class SseReader {
public:
    static constexpr std::size_t kMaxLineBytes = 1 << 20;

    // Returning false from the handler stops the reader: feed() then
    // returns false and ignores what follows.
    explicit SseReader(std::function<bool(const SseEvent&)> on_event) : on_event_(std::move(on_event)) {}

    bool feed(std::string_view bytes);

private:
    bool line(std::string_view text);

    std::function<bool(const SseEvent&)> on_event_;
    std::string pending_;       // the line being read
    bool after_cr_ = false;     // the last byte was CR: a following LF ends nothing
    bool stopped_ = false;
    SseEvent event_;
    bool has_data_ = false;
};

}  // namespace nps::cli
