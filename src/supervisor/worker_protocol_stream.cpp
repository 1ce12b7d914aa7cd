// SPDX-License-Identifier: Apache-2.0
// StreamDecoder: one stdout line → an AlignStream event or a protocol
// violation. The checks run in a fixed order (the first failure wins):
// structure and types, identity, seq, content, sizes.
#include <simdjson.h>

#include <algorithm>
#include <set>

#include "nps/proto/json_reader.hpp"
#include "nps/supervisor/worker_protocol.hpp"

namespace nps::supervisor {

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// One parser for every worker: the loop is single-threaded and a parser
// keeps buffers sized for the largest line it has seen.
simdjson::dom::parser& shared_parser()
{
    thread_local simdjson::dom::parser parser;
    return parser;
}

Error invalid(const std::string& what)
{
    return protocol_error(std::string(kFrameInvalid), "invalid AlignStream frame: " + what);
}

std::optional<element> member(const object& frame, std::string_view key)
{
    element value;
    if (frame.at_key(key).get(value) != simdjson::SUCCESS)
        return std::nullopt;
    return value;
}

// An optional string member that must equal `expected`.
Result<void> check_identity(const object& frame, std::string_view key, std::string_view expected,
                            std::string_view code)
{
    auto value = member(frame, key);
    if (!value || value->is_null())
        return {};
    std::string_view s;
    if (value->get(s) != simdjson::SUCCESS)
        return invalid(std::string(key) + ": expected a string");
    if (s != expected) {
        std::string message = std::string(key) + " '" + std::string(s.substr(0, 256)) + "' is not the assigned '" +
                              std::string(expected) + "'";
        if (code == kNidMismatch)
            return protocol_error(std::string(kNidMismatch), "AlignStream " + message);
        return invalid(message);
    }
    return {};
}

Result<void> check_frame_type(const object& frame)
{
    auto value = member(frame, "frame");
    if (!value || value->is_null())
        return {};
    std::string_view s;
    std::uint64_t n = 0;
    if (value->get(s) == simdjson::SUCCESS && s == "0x43")
        return {};
    if (value->is_uint64() && value->get(n) == simdjson::SUCCESS && n == 0x43)
        return {};
    return invalid("frame must be \"0x43\" or 67 (AlignStream)");
}

Result<std::uint64_t> read_seq(const object& frame)
{
    auto value = member(frame, "seq");
    if (!value || value->is_null())
        return invalid("seq: required");
    // An integer literal: 1.0 or 1e0 is not a sequence number.
    if (!value->is_int64() && !value->is_uint64())
        return invalid("seq: expected a non-negative integer");
    std::int64_t signed_value = 0;
    if (value->get(signed_value) == simdjson::SUCCESS && signed_value < 0)
        return invalid("seq: expected a non-negative integer");
    std::uint64_t seq = 0;
    if (value->get(seq) != simdjson::SUCCESS)
        return invalid("seq: expected a non-negative integer");
    return seq;
}

Result<bool> read_is_final(const object& frame)
{
    auto value = member(frame, "is_final");
    if (!value || value->is_null())
        return invalid("is_final: required");
    bool b = false;
    if (value->get(b) != simdjson::SUCCESS)
        return invalid("is_final: expected a boolean");
    return b;
}

// Duplicate members make a frame ambiguous (which seq counts?).
Result<void> check_unique_keys(const object& obj, std::string_view where)
{
    std::vector<std::string_view> keys;
    for (auto field : obj)
        keys.push_back(field.key);
    std::sort(keys.begin(), keys.end());
    auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end())
        return invalid(std::string(where) + "duplicate member '" + std::string(dup->substr(0, 64)) + "'");
    return {};
}

bool is_error_code(std::string_view code)
{
    if (code.empty() || code.size() > limits::kMaxWorkerErrorCodeChars || code.front() < 'A' || code.front() > 'Z')
        return false;
    return std::all_of(code.begin(), code.end(),
                       [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; });
}

// Cuts at most `limit` bytes without splitting a UTF-8 sequence.
std::string truncate_utf8(std::string_view s, std::size_t limit)
{
    if (s.size() <= limit)
        return std::string(s);
    std::size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
        --cut;
    return std::string(s.substr(0, cut));
}

Result<WorkerError> read_error(element value)
{
    object obj;
    if (value.get(obj) != simdjson::SUCCESS)
        return invalid("error: expected an object");
    NPS_TRY_VOID(check_unique_keys(obj, "error: "));
    WorkerError out;
    // The Python SDK spells the code error_code (digest §9.18); `code` wins.
    auto code = member(obj, "code");
    if (!code || code->is_null())
        code = member(obj, "error_code");
    std::string_view s;
    if (!code || code->get(s) != simdjson::SUCCESS)
        return invalid("error.code: required, a string");
    if (!is_error_code(s))
        return invalid("error.code: '" + std::string(s.substr(0, 64)) + "' is not an error code (A-Z, 0-9, '-', '_', at most " +
                       std::to_string(limits::kMaxWorkerErrorCodeChars) + ")");
    out.code = std::string(s);
    if (auto message = member(obj, "message"); message && !message->is_null()) {
        if (message->get(s) != simdjson::SUCCESS)
            return invalid("error.message: expected a string");
        out.message = truncate_utf8(s, limits::kMaxWorkerErrorMessageBytes);
    }
    if (auto retryable = member(obj, "retryable"); retryable && !retryable->is_null()) {
        if (retryable->get(out.retryable) != simdjson::SUCCESS)
            return invalid("error.retryable: expected a boolean");
    }
    return out;
}

// The canonical text of `data`; "null" when absent.
Result<std::string> read_data(const object& frame)
{
    auto value = member(frame, "data");
    if (!value || value->is_null())
        return std::string("null");
    if (!value->is_object())
        return invalid("data: expected an object");
    auto canonical = proto::json::canonical_json(*value);
    if (!canonical)
        return invalid("data: " + canonical.error().message);
    return std::move(*canonical);
}

}  // namespace

Error StreamDecoder::oversized_error() const
{
    return protocol_error(std::string(kFrameTooLarge), "a stdout line that starts like a frame is longer than " +
                                                          std::to_string(limits::kMaxWorkerLineBytes) + " bytes");
}

Result<StreamEvent> StreamDecoder::accept(std::string_view line)
{
    if (finished_ || violated_)
        return StreamEvent{};
    auto event = decode(line);
    if (!event)
        violated_ = true;  // the stream is broken: nothing after it is a frame
    return event;
}

Result<StreamEvent> StreamDecoder::decode(std::string_view line)
{
    const auto root = proto::json::parse_document(shared_parser(), line, "stdout line");
    object frame;
    if (!root || root->get(frame) != simdjson::SUCCESS)
        return StreamEvent{};
    if (!member(frame, "seq") && !member(frame, "is_final") && !member(frame, "frame"))
        return StreamEvent{};  // a JSON log line (structured logging), not a frame

    frame_bytes_ += line.size();
    if (frame_bytes_ > limits::kMaxWorkerFrameBytesTotal)
        return protocol_error(std::string(kFrameTooLarge), "the worker sent more than " +
                                                              std::to_string(limits::kMaxWorkerFrameBytesTotal) +
                                                              " bytes of frames");
    NPS_TRY_VOID(check_unique_keys(frame, ""));
    NPS_TRY_VOID(check_frame_type(frame));
    const std::uint64_t seq = NPS_TRY(read_seq(frame));
    const bool is_final = NPS_TRY(read_is_final(frame));

    NPS_TRY_VOID(check_identity(frame, "task_id", assignment_.task_id, kFrameInvalid));
    NPS_TRY_VOID(check_identity(frame, "subtask_id", assignment_.subtask_id, kFrameInvalid));
    if (auto id = member(frame, "stream_id"); id && !id->is_null()) {
        std::string_view s;
        if (id->get(s) != simdjson::SUCCESS)
            return invalid("stream_id: expected a string");
        if (!stream_id_)
            stream_id_ = std::string(s);  // the runner assigns none: the worker's first choice holds
        else if (*stream_id_ != s)
            return invalid("stream_id changed from '" + *stream_id_ + "' to '" + std::string(s.substr(0, 256)) + "'");
    }
    NPS_TRY_VOID(check_identity(frame, "sender_nid", assignment_.agent_nid, kNidMismatch));

    if (seq != next_seq_) {
        std::string what = seq > next_seq_ ? "gap" : "repeated or out of order";
        return protocol_error(std::string(kSeqGap), "AlignStream seq " + what + ": expected " +
                                                        std::to_string(next_seq_) + ", got " + std::to_string(seq));
    }

    StreamEvent event;
    event.seq = seq;
    auto error = member(frame, "error");
    const bool has_error = error && !error->is_null();
    event.data_json = NPS_TRY(read_data(frame));
    if (has_error && !is_final)
        return invalid("error on a progress frame (is_final false)");
    if (has_error && event.data_json != "null")
        return invalid("a final frame carries data or error, not both");
    if (is_final && !has_error && event.data_json.size() > limits::kMaxNodeResultBytes)
        return protocol_error(std::string(kFrameTooLarge), "the final frame's data is " +
                                                              std::to_string(event.data_json.size()) +
                                                              " bytes (canonical JSON); at most " +
                                                              std::to_string(limits::kMaxNodeResultBytes));
    if (has_error) {
        event.error = NPS_TRY(read_error(*error));
        event.data_json = "null";
    }
    event.kind = !is_final ? StreamEvent::Kind::progress
                           : has_error ? StreamEvent::Kind::final_error : StreamEvent::Kind::final_data;
    ++next_seq_;
    finished_ = is_final;
    return event;
}

}  // namespace nps::supervisor
