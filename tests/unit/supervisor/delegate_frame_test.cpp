// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "nps/supervisor/worker_protocol.hpp"

using namespace nps::supervisor;
using Json = nlohmann::json;

namespace {

const char* kFrame = R"({
  "frame": "0x41",
  "parent_task_id": "task-1",
  "subtask_id": "7d0c8f3e-1111-4c4c-9d9d-000000000001",
  "node_id": "fetch",
  "target_agent_nid": "urn:nps:agent:example.com:fetcher",
  "action": "nwp://example.com/fetch",
  "params": {"url": "https://example.com/", "n": 1.50},
  "delegated_scope": {"nodes": ["fetch"], "actions": ["nwp://example.com/fetch"], "max_token_budget": 100},
  "deadline_at": "2030-01-01T00:00:00Z",
  "idempotency_key": "idem-1"
})";

}  // namespace

TEST_CASE("encode_delegate_frame: one line, the fields read, the frame kept")
{
    auto d = encode_delegate_frame(Json::parse(kFrame));
    REQUIRE_MESSAGE(d, (d ? "" : d.error().describe()));
    CHECK(d->line.back() == '\n');
    CHECK(std::count(d->line.begin(), d->line.end(), '\n') == 1);
    CHECK(Json::parse(d->line) == Json::parse(kFrame));
    CHECK(d->assignment.task_id == "task-1");
    CHECK(d->assignment.subtask_id == "7d0c8f3e-1111-4c4c-9d9d-000000000001");
    CHECK(d->assignment.node_id == "fetch");
    CHECK(d->assignment.agent_nid == "urn:nps:agent:example.com:fetcher");
    CHECK(d->assignment.action == "nwp://example.com/fetch");
    CHECK(d->assignment.deadline_at == "2030-01-01T00:00:00Z");
    CHECK(d->assignment.idempotency_key == "idem-1");
}

TEST_CASE("encode_delegate_frame: refusals name the field")
{
    Json frame = Json::parse(kFrame);
    for (const char* field : {"parent_task_id", "subtask_id", "node_id", "target_agent_nid", "action", "deadline_at"}) {
        CAPTURE(field);
        Json missing = frame;
        missing.erase(field);
        auto r = encode_delegate_frame(missing);
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find(field) != std::string::npos);
        Json wrong = frame;
        wrong[field] = 5;
        CHECK_FALSE(encode_delegate_frame(wrong));
        Json empty = frame;
        empty[field] = "";
        CHECK_FALSE(encode_delegate_frame(empty));
    }
    Json nul = frame;
    nul["node_id"] = std::string("a\0b", 3);
    CHECK_FALSE(encode_delegate_frame(nul));
    CHECK_FALSE(encode_delegate_frame(Json::array({1})));
    Json not_utf8 = frame;
    not_utf8["params"]["url"] = "\xff";
    CHECK_FALSE(encode_delegate_frame(not_utf8));
    Json huge = frame;
    huge["params"]["blob"] = std::string(nps::limits::kMaxDelegateFrameBytes, 'x');
    CHECK_FALSE(encode_delegate_frame(huge));
    Json key = frame;
    key.erase("idempotency_key");
    auto no_key = encode_delegate_frame(key);
    REQUIRE(no_key);
    CHECK(no_key->assignment.idempotency_key.empty());
}

TEST_CASE("encode_delegate_frame: a number beyond 64 bits travels as a double")
{
    Json frame = Json::parse(kFrame);
    std::string text = frame.dump();
    text.insert(text.size() - 1, R"(,"big":123456789012345678901234567890)");
    auto d = encode_delegate_frame(Json::parse(text));
    REQUIRE(d);
    CHECK(d->line.find("1.2345678901234568e+29") != std::string::npos);
}

TEST_CASE("the cancel frame")
{
    auto d = encode_delegate_frame(Json::parse(kFrame));
    REQUIRE(d);
    const std::string line = encode_cancel_frame(*d);
    CHECK(line.back() == '\n');
    Json cancel = Json::parse(line);
    CHECK(cancel["frame"] == "0x41");
    CHECK(cancel["action"] == "cancel");
    CHECK(cancel["parent_task_id"] == "task-1");
    CHECK(cancel["subtask_id"] == d->assignment.subtask_id);
    CHECK(cancel["node_id"] == "fetch");
    CHECK(cancel["params"] == Json{{"task_id", "task-1"}, {"subtask_id", d->assignment.subtask_id}});
    CHECK(cancel["delegated_scope"] == Json::parse(kFrame)["delegated_scope"]);
    CHECK(cancel["deadline_at"] == "2030-01-01T00:00:00Z");
    CHECK(cancel["idempotency_key"] == "idem-1");
}

TEST_CASE("the worker's environment")
{
    auto d = encode_delegate_frame(Json::parse(kFrame));
    REQUIRE(d);
    auto env = worker_environment(d->assignment, 2, 5000, {"PATH=/bin", "NPS_TASK_ID=forged", "NPS_TASK_IDX=kept"});
    auto has = [&](const std::string& entry) { return std::find(env.begin(), env.end(), entry) != env.end(); };
    CHECK(has("PATH=/bin"));
    CHECK(has("NPS_TASK_IDX=kept"));
    CHECK_FALSE(has("NPS_TASK_ID=forged"));
    CHECK(has("NPS_PROTOCOL=ndjson-v1"));
    CHECK(has("NPS_TASK_ID=task-1"));
    CHECK(has("NPS_NODE_ID=fetch"));
    CHECK(has("NPS_SUBTASK_ID=7d0c8f3e-1111-4c4c-9d9d-000000000001"));
    CHECK(has("NPS_AGENT_NID=urn:nps:agent:example.com:fetcher"));
    CHECK(has("NPS_ACTION=nwp://example.com/fetch"));
    CHECK(has("NPS_ATTEMPT=2"));
    CHECK(has("NPS_IDEMPOTENCY_KEY=idem-1"));
    CHECK(has("NPS_DEADLINE_AT=2030-01-01T00:00:00Z"));
    CHECK(has("NPS_CGN_BUDGET=5000"));
    auto without = worker_environment(d->assignment, 1, std::nullopt, {});
    CHECK(std::none_of(without.begin(), without.end(), [](const std::string& e) { return e.rfind("NPS_CGN_BUDGET=", 0) == 0; }));
}
