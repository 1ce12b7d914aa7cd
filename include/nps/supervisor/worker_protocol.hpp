// SPDX-License-Identifier: Apache-2.0
// The worker protocol ndjson-v1 (DESIGN §3.3; docs/worker-protocol.md), as
// pure functions and per-worker state with no I/O:
//   - the DelegateFrame line written to the worker's stdin, and the cancel
//     frame that may follow it;
//   - the worker's environment (NPS_*);
//   - LineFramer: splits stdout into log bytes and lines that may be frames;
//   - StreamDecoder: turns such a line into an AlignStream event, checking
//     seq, identity fields and sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::supervisor {

inline constexpr std::string_view kProtocolName = "ndjson-v1";

// Codes of protocol violations (docs/errors.md; the first is ours).
inline constexpr std::string_view kFrameInvalid = proto::code::kNopStreamFrameInvalid;
inline constexpr std::string_view kFrameTooLarge = proto::code::kNcpFramePayloadTooLarge;
inline constexpr std::string_view kSeqGap = proto::code::kNopStreamSeqGap;
inline constexpr std::string_view kNidMismatch = proto::code::kNopStreamNidMismatch;

// Whom a worker works for, read from its DelegateFrame.
struct Assignment {
    std::string task_id;          // parent_task_id
    std::string subtask_id;
    std::string node_id;
    std::string agent_nid;        // target_agent_nid; an AlignStream's sender_nid
    std::string action;
    std::string deadline_at;
    std::string idempotency_key;  // "" when the frame has none
};

struct DelegateLine {
    Assignment assignment;
    std::string line;                  // the frame without insignificant whitespace, '\n'-terminated
    std::string delegated_scope_json;  // copied into the cancel frame; "" when absent
};

// Checks the DelegateFrame the caller built (NPS-5 §3.2) and makes its stdin
// line. Required: an object with string parent_task_id, subtask_id, node_id,
// target_agent_nid, action and deadline_at (idempotency_key optional, a
// string), none empty or holding a NUL (they become environment variables),
// whose line is at most limits::kMaxDelegateFrameBytes. Other fields pass
// through unchecked. Errors are internal errors naming the field: the frame
// is ours, built in-process (the value, not JSON text, crosses the layers).
Result<DelegateLine> encode_delegate_frame(const nlohmann::json& frame);

// The cancel DelegateFrame (§5.2), '\n'-terminated: action "cancel", params
// {task_id, subtask_id}, and the identity fields of the original.
std::string encode_cancel_frame(const DelegateLine& delegate);

// The worker's environment: `base` ("K=V") with the NPS_* variables of
// DESIGN §3.3 set (replacing any of the same name): NPS_PROTOCOL, NPS_TASK_ID,
// NPS_NODE_ID, NPS_SUBTASK_ID, NPS_AGENT_NID, NPS_ACTION, NPS_ATTEMPT,
// NPS_IDEMPOTENCY_KEY, NPS_DEADLINE_AT, NPS_CGN_BUDGET (when set).
std::vector<std::string> worker_environment(const Assignment& assignment, std::uint32_t attempt,
                                            std::optional<std::int64_t> cgn_budget,
                                            std::vector<std::string> base);

// Whether an environment entry ("K=V") names one of those variables.
bool is_worker_variable(std::string_view entry);

// Splits a byte stream into lines. A line whose first byte that is not a
// space, tab or CR is '{' is a candidate frame: it is buffered (up to
// max_line_bytes) and handed over whole, without its '\n'. Every other byte
// is log output and is passed on as it arrives, never buffered beyond the
// leading blanks of a line. A candidate longer than max_line_bytes is
// reported once through oversized() and then passed on as log bytes, itself
// and the rest of its line. Every input byte comes out exactly once: in a
// log() call, or in a candidate() (plus its '\n', except a last line that
// finish() delivers without one).
class LineFramer {
public:
    class Sink {
    public:
        virtual ~Sink() = default;
        virtual void log(std::string_view bytes) = 0;
        virtual void candidate(std::string_view line) = 0;
        virtual void oversized() = 0;
    };

    explicit LineFramer(std::size_t max_line_bytes = limits::kMaxWorkerLineBytes) : max_line_(max_line_bytes) {}

    void feed(std::string_view bytes, Sink& sink);
    // End of stream: a pending candidate is delivered as a line, pending
    // blanks as log.
    void finish(Sink& sink);
    // Bytes held for the current line.
    std::size_t buffered() const { return pending_.size(); }

private:
    enum class Mode { line_start, candidate, passthrough };
    std::size_t max_line_;
    Mode mode_ = Mode::line_start;
    std::string pending_;
};

struct WorkerError {
    std::string code;     // NOP-…; as the worker sent it
    std::string message;  // truncated to limits::kMaxWorkerErrorMessageBytes
    bool retryable = false;
};

struct StreamEvent {
    enum class Kind {
        log,          // not a frame: the line is log output
        progress,     // is_final false
        final_data,   // is_final true, with data (or neither data nor error)
        final_error,  // is_final true, with error
    };
    Kind kind = Kind::log;
    std::uint64_t seq = 0;
    std::string data_json;  // canonical (RFC 8785) `data`; "null" when absent
    WorkerError error;      // final_error
};

// One worker's AlignStream (NPS-5 §3.4) as ndjson-v1 carries it. A candidate
// line is a frame when it parses as a JSON object with at least one of the
// members seq, is_final or frame; anything else is log. A frame must have
// seq (0, 1, 2, … with no gap) and is_final; frame ("0x43" or 67),
// task_id, subtask_id, sender_nid and stream_id are optional but must match
// the assignment (stream_id: the first frame's value). After the final frame,
// or a violation, every line is log. Errors are protocol violations carrying
// their code:
//   NOP-STREAM-FRAME-INVALID     malformed frame (types, duplicate members,
//                                identity other than sender_nid, data and
//                                error together, a bad error object)
//   NOP-STREAM-NID-MISMATCH      sender_nid is not the assigned agent
//   NOP-STREAM-SEQ-GAP           seq is not the next one
//   NCP-FRAME-PAYLOAD-TOO-LARGE  a final data over kMaxNodeResultBytes, or
//                                more than kMaxWorkerFrameBytesTotal of frames
class StreamDecoder {
public:
    explicit StreamDecoder(Assignment assignment) : assignment_(std::move(assignment)) {}

    Result<StreamEvent> accept(std::string_view line);
    // The violation for a candidate line LineFramer found oversized (the
    // caller ignores it once finished()).
    Error oversized_error() const;

    bool finished() const { return finished_; }
    bool violated() const { return violated_; }
    std::uint64_t frames() const { return next_seq_; }

private:
    Result<StreamEvent> decode(std::string_view line);

    Assignment assignment_;
    std::optional<std::string> stream_id_;
    std::uint64_t next_seq_ = 0;
    std::uint64_t frame_bytes_ = 0;
    bool finished_ = false;
    bool violated_ = false;
};

}  // namespace nps::supervisor
