// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/supervisor/worker_protocol.hpp"

using namespace nps::supervisor;
using Kind = StreamEvent::Kind;

namespace {

Assignment assignment()
{
    return {.task_id = "task-1", .subtask_id = "sub-1", .node_id = "n1", .agent_nid = "urn:nps:agent:ex:w",
            .action = "nwp://ex/act", .deadline_at = "2030-01-01T00:00:00Z"};
}

std::string code_of(const nps::Result<StreamEvent>& r)
{
    return r ? std::string() : r.error().code;
}

}  // namespace

TEST_CASE("the complete reply of DESIGN §3.3")
{
    StreamDecoder d(assignment());
    auto e = d.accept(R"({"seq":0,"is_final":true,"data":{"answer":4}})");
    REQUIRE(e);
    CHECK(e->kind == Kind::final_data);
    CHECK(e->data_json == R"({"answer":4})");
    CHECK(d.finished());
    CHECK(d.frames() == 1);
}

TEST_CASE("progress, then a final frame with every optional field")
{
    StreamDecoder d(assignment());
    auto p = d.accept(R"({"seq":0,"is_final":false,"data":{"pct":50}})");
    REQUIRE(p);
    CHECK(p->kind == Kind::progress);
    CHECK(p->seq == 0);
    CHECK(p->data_json == R"({"pct":50})");
    auto bare = d.accept(R"({"seq":1,"is_final":false})");
    REQUIRE(bare);
    CHECK(bare->data_json == "null");
    auto f = d.accept(R"({"frame":"0x43","stream_id":"s-1","task_id":"task-1","subtask_id":"sub-1",)"
                      R"("sender_nid":"urn:nps:agent:ex:w","seq":2,"is_final":true,"window_size":10,)"
                      R"("data":{"b":[1,2.50,1e2],"a":"x"}})");
    REQUIRE_MESSAGE(f, (f ? "" : f.error().describe()));
    CHECK(f->kind == Kind::final_data);
    CHECK(f->data_json == R"({"a":"x","b":[1,2.5,100]})");  // canonical
    CHECK(d.frames() == 3);
    // After the final frame, everything is log.
    auto after = d.accept(R"({"seq":3,"is_final":true})");
    REQUIRE(after);
    CHECK(after->kind == Kind::log);
}

TEST_CASE("a final error frame; the SDK's error_code spelling; truncation")
{
    StreamDecoder d(assignment());
    auto e = d.accept(R"({"seq":0,"is_final":true,"error":{"code":"NOP-TASK-CANCELLED","message":"stopped","retryable":true}})");
    REQUIRE(e);
    CHECK(e->kind == Kind::final_error);
    CHECK(e->error.code == "NOP-TASK-CANCELLED");
    CHECK(e->error.message == "stopped");
    CHECK(e->error.retryable);

    StreamDecoder py(assignment());
    auto p = py.accept(R"({"seq":0,"is_final":true,"error":{"error_code":"NWP-NODE-UNAVAILABLE","message":"m"}})");
    REQUIRE(p);
    CHECK(p->error.code == "NWP-NODE-UNAVAILABLE");
    CHECK_FALSE(p->error.retryable);

    StreamDecoder longer(assignment());
    const std::string message(nps::limits::kMaxWorkerErrorMessageBytes + 10, 'm');
    auto l = longer.accept(R"({"seq":0,"is_final":true,"error":{"code":"X-Y","message":")" + message + "\"}}");
    REQUIRE(l);
    CHECK(l->error.message.size() == nps::limits::kMaxWorkerErrorMessageBytes);
}

TEST_CASE("lines that are not frames are log")
{
    StreamDecoder d(assignment());
    for (const char* line : {"{not json", R"({"level":"info","msg":"structured log"})", "{}", "{\"a\":1"}) {
        CAPTURE(line);
        auto e = d.accept(line);
        REQUIRE(e);
        CHECK(e->kind == Kind::log);
    }
    CHECK(d.frames() == 0);
}

TEST_CASE("seq must start at 0 and have no gap")
{
    StreamDecoder first(assignment());
    CHECK(code_of(first.accept(R"({"seq":1,"is_final":false})")) == "NOP-STREAM-SEQ-GAP");

    StreamDecoder d(assignment());
    REQUIRE(d.accept(R"({"seq":0,"is_final":false})"));
    auto gap = d.accept(R"({"seq":2,"is_final":true})");
    CHECK(code_of(gap) == "NOP-STREAM-SEQ-GAP");
    CHECK(gap.error().message.find("expected 1, got 2") != std::string::npos);

    StreamDecoder repeat(assignment());
    REQUIRE(repeat.accept(R"({"seq":0,"is_final":false})"));
    CHECK(code_of(repeat.accept(R"({"seq":0,"is_final":false})")) == "NOP-STREAM-SEQ-GAP");
}

TEST_CASE("malformed frames are NOP-STREAM-FRAME-INVALID")
{
    const char* bad[] = {
        R"({"seq":0})",                                        // no is_final
        R"({"is_final":true})",                                // no seq
        R"({"seq":-1,"is_final":true})",
        R"({"seq":1.0,"is_final":true})",
        R"({"seq":"0","is_final":true})",
        R"({"seq":0,"is_final":"yes"})",
        R"({"frame":"0x40","seq":0,"is_final":true})",
        R"({"frame":64,"seq":0,"is_final":true})",
        R"({"seq":0,"seq":1,"is_final":true})",               // duplicate member
        R"({"seq":0,"is_final":true,"data":[1]})",             // data not an object
        R"({"seq":0,"is_final":true,"data":{"a":1,"a":2}})",   // duplicate inside data
        R"({"seq":0,"is_final":true,"data":{},"error":{"code":"X"}})",
        R"({"seq":0,"is_final":false,"error":{"code":"X"}})",
        R"({"seq":0,"is_final":true,"error":{"message":"no code"}})",
        R"({"seq":0,"is_final":true,"error":{"code":"lower-case"}})",
        R"({"seq":0,"is_final":true,"error":"text"})",
        R"({"seq":0,"is_final":true,"task_id":"task-2"})",
        R"({"seq":0,"is_final":true,"subtask_id":"other"})",
        R"({"seq":0,"is_final":true,"task_id":7})",
    };
    for (const char* line : bad) {
        CAPTURE(line);
        StreamDecoder d(assignment());
        CHECK(code_of(d.accept(line)) == "NOP-STREAM-FRAME-INVALID");
    }
    StreamDecoder ok(assignment());
    CHECK(ok.accept(R"({"frame":67,"seq":0,"is_final":false})"));
}

TEST_CASE("sender_nid must be the assigned agent")
{
    StreamDecoder d(assignment());
    CHECK(code_of(d.accept(R"({"seq":0,"is_final":true,"sender_nid":"urn:nps:agent:ex:other"})")) ==
          "NOP-STREAM-NID-MISMATCH");
}

TEST_CASE("stream_id: the first one holds")
{
    StreamDecoder d(assignment());
    REQUIRE(d.accept(R"({"seq":0,"is_final":false,"stream_id":"a"})"));
    REQUIRE(d.accept(R"({"seq":1,"is_final":false})"));
    CHECK(code_of(d.accept(R"({"seq":2,"is_final":false,"stream_id":"b"})")) == "NOP-STREAM-FRAME-INVALID");
}

TEST_CASE("sizes: final data over the node result limit")
{
    StreamDecoder d(assignment());
    const std::string blob(nps::limits::kMaxNodeResultBytes, 'x');
    CHECK(code_of(d.accept(R"({"seq":0,"is_final":true,"data":{"b":")" + blob + "\"}}")) ==
          "NCP-FRAME-PAYLOAD-TOO-LARGE");
    StreamDecoder progress(assignment());
    CHECK(progress.accept(R"({"seq":0,"is_final":false,"data":{"b":")" + blob + "\"}}"));  // progress is not a result
    CHECK(progress.oversized_error().code == "NCP-FRAME-PAYLOAD-TOO-LARGE");
}

TEST_CASE("integers beyond 64 bits are read, as doubles")
{
    StreamDecoder d(assignment());
    auto e = d.accept(R"({"seq":0,"is_final":true,"data":{"n":123456789012345678901234567890}})");
    REQUIRE(e);
    CHECK(e->data_json == R"({"n":1.2345678901234568e+29})");
}

TEST_CASE("every code the supervisor emits is in the error table")
{
    const struct {
        const char* code;
        const char* status;
        int http;
    } expected[] = {
        {"NOP-RUNTIME-IDLE-TIMEOUT", "NPS-SERVER-TIMEOUT", 504},
        {"NOP-RUNTIME-MAX-RUNTIME", "NPS-SERVER-TIMEOUT", 504},
        {"NOP-STREAM-SEQ-GAP", "NPS-STREAM-SEQ-GAP", 422},
        {"NOP-STREAM-NID-MISMATCH", "NPS-AUTH-UNAUTHENTICATED", 401},
        {"NOP-STREAM-FRAME-INVALID", "NPS-CLIENT-BAD-FRAME", 400},
        {"NCP-FRAME-PAYLOAD-TOO-LARGE", "NPS-LIMIT-PAYLOAD", 413},
        {"NOP-DELEGATE-REJECTED", "NPS-CLIENT-UNPROCESSABLE", 422},
        {"NOP-RESOURCE-INSUFFICIENT", "NPS-SERVER-UNAVAILABLE", 503},
        {"NOP-TASK-CANCELLED", "NPS-CLIENT-CONFLICT", 409},
        {"NPS-SERVER-UNAVAILABLE", "NPS-SERVER-UNAVAILABLE", 503},
    };
    for (const auto& e : expected) {
        CAPTURE(e.code);
        const auto info = nps::proto::lookup_error_code(e.code);
        REQUIRE(info);
        CHECK(info->nps_status == e.status);
        CHECK(info->http_status == e.http);
    }
}

TEST_CASE("after a violation every line is log")
{
    StreamDecoder d(assignment());
    CHECK_FALSE(d.accept(R"({"seq":1,"is_final":false})"));
    CHECK(d.violated());
    auto later = d.accept(R"({"seq":0,"is_final":true})");
    REQUIRE(later);
    CHECK(later->kind == Kind::log);
    CHECK(d.frames() == 0);
}
