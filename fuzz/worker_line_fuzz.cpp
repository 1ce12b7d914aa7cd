// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the ndjson-v1 parsers of untrusted worker output (and of
// the DelegateFrame the runner builds). The input is a worker's stdout; its
// first byte picks the chunk size it arrives in and the line limit. Beyond
// "no crash, no sanitizer report" it aborts when a property breaks:
//   1. LineFramer passes on every byte exactly once (log or line + '\n');
//   2. no candidate line is longer than the limit, none holds a '\n';
//   3. accepted frames come with seq 0, 1, 2, …; after a final one, only log;
//   4. frame data is canonical (JCS of it is itself) and a final result is
//      within kMaxNodeResultBytes;
//   5. every violation carries one of the four protocol codes, each in the
//      error table;
//   6. an accepted DelegateFrame gives exactly one line, and a cancel frame
//      that is JSON.
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nps/proto/error_codes.hpp"
#include "nps/proto/jcs.hpp"
#include "nps/supervisor/worker_protocol.hpp"

namespace {

using namespace nps::supervisor;

[[noreturn]] void property_broken(const char* what)
{
    std::fprintf(stderr, "property broken: %s\n", what);
    std::abort();
}

class Checker final : public LineFramer::Sink {
public:
    Checker(std::size_t max_line, StreamDecoder& decoder) : max_line_(max_line), decoder_(decoder) {}

    void log(std::string_view bytes) override { rebuilt += bytes; }
    void candidate(std::string_view line) override
    {
        rebuilt += line;
        if (!finishing)
            rebuilt += '\n';
        if (line.size() > max_line_ || line.find('\n') != std::string_view::npos)
            property_broken("a candidate line breaks the line limit or holds a newline");
        check_event(decoder_.accept(line));
    }
    void oversized() override {}

    std::string rebuilt;
    bool finishing = false;

private:
    void check_event(const nps::Result<StreamEvent>& event)
    {
        if (!event) {
            const std::string& code = event.error().code;
            if (code != kFrameInvalid && code != kFrameTooLarge && code != kSeqGap && code != kNidMismatch)
                property_broken("a violation with an unexpected code");
            if (!nps::proto::lookup_error_code(code))
                property_broken("a violation code missing from the error table");
            violated_ = true;
            return;
        }
        if (event->kind == StreamEvent::Kind::log)
            return;
        if (violated_ || finished_)
            property_broken("a frame accepted after a violation or a final frame");
        if (event->seq != next_seq_)
            property_broken("a frame accepted out of sequence");
        ++next_seq_;
        auto canonical = nps::proto::jcs_canonicalize(event->data_json);
        if (!canonical || *canonical != event->data_json)
            property_broken("frame data is not canonical");
        if (event->kind == StreamEvent::Kind::final_data && event->data_json.size() > nps::limits::kMaxNodeResultBytes)
            property_broken("a final result over the limit");
        if (event->kind == StreamEvent::Kind::final_error && event->error.code.empty())
            property_broken("a final error without a code");
        finished_ = event->kind != StreamEvent::Kind::progress;
    }

    std::size_t max_line_;
    StreamDecoder& decoder_;
    std::uint64_t next_seq_ = 0;
    bool violated_ = false;
    bool finished_ = false;
};

// The DelegateFrame is built in-process; the fuzzer reaches it through any
// JSON value the input spells.
void check_delegate(std::string_view text)
{
    const auto frame = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (frame.is_discarded())
        return;
    auto delegate = encode_delegate_frame(frame);
    if (!delegate)
        return;
    const std::string& line = delegate->line;
    if (line.empty() || line.back() != '\n' || line.find('\n') != line.size() - 1)
        property_broken("a DelegateFrame line is not one line");
    simdjson::dom::parser parser;
    simdjson::dom::element parsed;
    if (parser.parse(encode_cancel_frame(*delegate)).get(parsed) != simdjson::SUCCESS || !parsed.is_object())
        property_broken("a cancel frame is not a JSON object");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const std::size_t chunk = 1 + data[0] % 64;
    const std::size_t max_line = (data[0] & 0x80) ? 64 : nps::limits::kMaxWorkerLineBytes;
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

    StreamDecoder decoder(Assignment{.task_id = "task-1", .subtask_id = "sub-1", .node_id = "n1",
                                     .agent_nid = "urn:nps:agent:fuzz:w", .action = "nwp://fuzz/act",
                                     .deadline_at = "2030-01-01T00:00:00Z"});
    LineFramer framer(max_line);
    Checker checker(max_line, decoder);
    for (std::size_t i = 0; i < stream.size(); i += chunk)
        framer.feed(stream.substr(i, chunk), checker);
    checker.finishing = true;
    framer.finish(checker);
    if (checker.rebuilt != stream)
        property_broken("LineFramer lost, duplicated or reordered bytes");

    check_delegate(stream);
    return 0;
}
