// SPDX-License-Identifier: Apache-2.0
// What the official SDKs' NopClient does against the real daemon (issue 17,
// items 4 and 5): an NCP frame body (MsgPack, as both SDK codecs encode a
// TaskFrame by default), POST /task, GET /task/{id} in lower-case states,
// POST /task/{id}/cancel; the frame refusals with their exact codes; framed
// answers when Accept asks for them; the token as a Basic-auth password.
#include <doctest/doctest.h>

#include "nps/base/digest.hpp"
#include "nps/proto/msgpack_json.hpp"
#include "nps/proto/ncp_frame.hpp"
#include "runner_process.hpp"

using nps::test::check_error;
using nps::test::http;
using nps::test::http_without_token;
using nps::test::Reply;
using nps::test::task_frame;
using Json = nlohmann::json;
namespace ncp = nps::proto::ncp;

namespace {

const std::string kInbox = "urn:nps:agent:sdk.test:worker";
const std::string kOtherInbox = "urn:nps:agent:sdk.test:other";
const std::string kRunner = "urn:nps:node:sdk.test:runner";

// What NpsFrameCodec.encode(frame) sends: header 40 05 LL LL, MsgPack map.
std::string sdk_frame(const std::string& json, ncp::Tier tier = ncp::Tier::msgpack)
{
    auto frame = ncp::encode_frame(ncp::kTaskFrame, tier, json);
    REQUIRE_MESSAGE(frame, frame.error().describe());
    return *frame;
}

// The SDK's request headers.
const std::vector<std::pair<std::string, std::string>> kSdkPost = {{"Content-Type", "application/x-nps-frame"},
                                                                   {"Accept", "application/json"}};
const std::vector<std::pair<std::string, std::string>> kSdkGet = {{"Accept", "application/json"}};

// The SDKs' TaskFrame.to_dict(): snake_case, explicit nulls for unset options.
std::string sdk_task(const std::string& task_id)
{
    Json frame = Json::parse(task_frame(task_id, 2));
    frame["timeout_ms"] = 30000;
    frame["max_retries"] = 2;
    frame["priority"] = "normal";
    frame["preflight"] = false;
    frame["delegate_depth"] = 0;
    frame["callback_url"] = nullptr;
    frame["context"] = nullptr;
    return frame.dump();
}

struct SdkDaemon : nps::test::StartedRunner {
    SdkDaemon() : StartedRunner("[api]\ntask_inbox = \"" + kInbox + "\"\n") {}
    std::string base() const { return runner.url(); }
};

// The frame in an answer, its payload as JSON.
Json frame_payload(const Reply& reply, std::uint8_t type)
{
    auto decoded = ncp::decode_frame_to_json(reply.raw);
    REQUIRE_MESSAGE(decoded, decoded.error().describe());
    CHECK(decoded->header.frame_type == type);
    return Json::parse(decoded->json);
}

}  // namespace

TEST_CASE("an SDK NopClient submits a MsgPack frame to POST /task, polls GET /task/{id}, cancels")
{
    SdkDaemon d;
    auto submitted = http("POST", d.base() + "/task", sdk_frame(sdk_task("sdk-1")), kSdkPost);
    REQUIRE_MESSAGE(submitted.status == 201, submitted.raw);
    CHECK(submitted.headers["content-type"].rfind("application/json", 0) == 0);
    CHECK(submitted.body["task_id"] == "sdk-1");
    CHECK(submitted.body["nid"] == kInbox);

    // The frame's payload is what the inbox holds, as JSON, for any consumer.
    auto peek = http("GET", d.base() + "/v1/inbox/" + kInbox);
    REQUIRE(peek.body["count"] == 1);
    CHECK(peek.body["messages"][0]["content_type"] == "application/json");
    auto payload = nps::base64_decode(peek.body["messages"][0]["payload_b64"].get<std::string>());
    REQUIRE(payload);
    CHECK(Json::parse(*payload) == Json::parse(sdk_task("sdk-1")));
    // The same task as JSON is the same deposit (the frame hash ignores the encoding).
    auto again = http("POST", d.base() + "/task", sdk_task("sdk-1"), {{"Content-Type", "application/json"}});
    CHECK(again.status == 200);
    CHECK(again.body["duplicate"] == true);

    auto status = http("GET", d.base() + "/task/sdk-1", std::nullopt, kSdkGet);
    REQUIRE(status.status == 200);
    CHECK(status.body == Json{{"task_id", "sdk-1"},
                              {"state", "pending"},
                              {"aggregated_result", nullptr},
                              {"error_code", nullptr},
                              {"error_message", nullptr},
                              {"node_results", Json::object()}});

    // The cancel carries no body and no Content-Type.
    auto cancelled = http("POST", d.base() + "/task/sdk-1/cancel", std::nullopt, kSdkGet);
    REQUIRE_MESSAGE(cancelled.status == 200, cancelled.raw);
    CHECK(cancelled.body["state"] == "cancelled");
    status = http("GET", d.base() + "/task/sdk-1", std::nullopt, kSdkGet);
    CHECK(status.body["state"] == "cancelled");
    CHECK(status.body["error_code"] == "NOP-TASK-CANCELLED");
    check_error(http("POST", d.base() + "/task/sdk-1/cancel"), 409, "NOP-TASK-ALREADY-COMPLETED");
    check_error(http("GET", d.base() + "/task/nope"), 404, "NOP-TASK-NOT-FOUND");
    check_error(http("GET", d.base() + "/task"), 405, "NWP-HTTP-METHOD-NOT-ALLOWED");
    check_error(http("DELETE", d.base() + "/task/sdk-1"), 405, "NWP-HTTP-METHOD-NOT-ALLOWED");
    check_error(http("GET", d.base() + "/task/sdk-1/result"), 404, "NWP-HTTP-NOT-FOUND");
}

TEST_CASE("GET /task/{id} of a finished task: lower-case state, aggregated_result, node_results")
{
    SdkDaemon d;
    REQUIRE(http("POST", d.base() + "/task", sdk_frame(sdk_task("sdk-done")), kSdkPost).status == 201);
    auto claim = http("POST", d.base() + "/v1/inbox/" + kInbox + "/claims",
                      Json{{"runner_nid", kRunner}, {"lease_seconds", 60}}.dump());
    REQUIRE(claim.status == 200);
    const std::string dedup = claim.body["dedup_key"];
    for (const char* node : {"n0", "n1"})
        REQUIRE(http("PATCH", d.base() + "/v1/tasks/sdk-done/nodes/" + node,
                     Json{{"dedup_key", dedup},
                          {"state", "COMPLETED"},
                          {"runner_nid", kRunner},
                          {"result", {{"node", node}}}}
                         .dump())
                    .status == 200);
    REQUIRE(http("POST", d.base() + "/v1/leases/sdk-done/complete",
                 Json{{"runner_nid", kRunner}, {"state", "COMPLETED"}, {"aggregate", {{"answer", 4}}}}.dump())
                .status == 200);
    auto status = http("GET", d.base() + "/task/sdk-done", std::nullopt, kSdkGet);
    CHECK(status.body["state"] == "completed");
    CHECK(status.body["aggregated_result"] == Json{{"answer", 4}});
    CHECK(status.body["node_results"] == Json{{"n0", {{"node", "n0"}}}, {"n1", {{"node", "n1"}}}});
    // The /v1 route keeps its own shape.
    CHECK(http("GET", d.base() + "/v1/tasks/sdk-done").body["state"] == "COMPLETED");
}

TEST_CASE("the SDK routes under /v1/inbox/{nid}: a base URL per inbox")
{
    SdkDaemon d;
    const std::string base = d.base() + "/v1/inbox/" + kOtherInbox;
    auto submitted = http("POST", base + "/task", sdk_frame(sdk_task("sdk-other")), kSdkPost);
    REQUIRE_MESSAGE(submitted.status == 201, submitted.raw);
    CHECK(submitted.body["nid"] == kOtherInbox);
    CHECK(http("GET", base + "/task/sdk-other").body["state"] == "pending");
    // Not under another inbox's base, nor the default one's.
    check_error(http("GET", d.base() + "/task/sdk-other"), 404, "NOP-TASK-NOT-FOUND");
    CHECK(http("POST", base + "/task/sdk-other/cancel").status == 200);
}

TEST_CASE("POST /task without an inbox to deposit into names the settings")
{
    nps::test::StartedRunner d;
    auto reply = http("POST", d.runner.url() + "/task", sdk_frame(sdk_task("sdk-x")), kSdkPost);
    check_error(reply, 404, "NWP-INBOX-NOT-FOUND");
    CHECK(reply.body["message"].get<std::string>().find("api.task_inbox") != std::string::npos);
}

TEST_CASE("NCP frame bodies: Tier-1 JSON and the extended header are accepted; bad frames get their exact codes")
{
    SdkDaemon d;
    const std::string url = d.base() + "/v1/inbox/" + kInbox;
    auto json_tier = http("POST", url, sdk_frame(sdk_task("f-json"), ncp::Tier::json), kSdkPost);
    CHECK_MESSAGE(json_tier.status == 201, json_tier.raw);
    // The same frame behind the 8-byte header (EXT = 1).
    const std::string payload = *nps::proto::json_to_msgpack(sdk_task("f-ext"));
    ncp::FrameHeader ext{.frame_type = ncp::kTaskFrame,
                         .flags = {.ext = true, .tier = ncp::Tier::msgpack},
                         .payload_len = static_cast<std::uint32_t>(payload.size())};
    auto extended = http("POST", url, *ncp::encode_frame_header(ext) + payload, kSdkPost);
    CHECK_MESSAGE(extended.status == 201, extended.raw);
    // application/nwp-frame is the same; bare JSON under a frame type still works.
    CHECK(http("POST", url, sdk_frame(sdk_task("f-nwp")), {{"Content-Type", "application/nwp-frame"}}).status == 201);
    CHECK(http("POST", url, sdk_task("f-bare"), {{"Content-Type", "application/x-nps-frame"}}).status == 201);

    const std::string good = sdk_frame(sdk_task("f-bad"));
    auto with_byte = [&](std::size_t at, char value) {
        std::string body = good;
        body[at] = value;
        return body;
    };
    struct Case {
        std::string body;
        long status;
        const char* code;
        const char* nps_status;
    };
    const Case cases[] = {
        {with_byte(1, 0x07), 400, "NCP-FRAME-FLAGS-INVALID", "NPS-CLIENT-BAD-FRAME"},  // tier 0b11 (ncp.header.007)
        {with_byte(1, 0x15), 400, "NCP-FRAME-FLAGS-INVALID", "NPS-CLIENT-BAD-FRAME"},  // a reserved bit
        {with_byte(1, 0x06), 415, "NCP-ENCODING-UNSUPPORTED", "NPS-SERVER-ENCODING-UNSUPPORTED"},  // Tier-3
        {with_byte(1, 0x0D), 400, "NCP-ENC-NOT-NEGOTIATED", "NPS-CLIENT-BAD-FRAME"},
        {with_byte(0, 0x4E), 400, "NCP-FRAME-UNKNOWN-TYPE", "NPS-CLIENT-BAD-FRAME"},
        {with_byte(0, 0x41), 400, "NWP-HTTP-FRAME-BODY-MALFORMED", "NPS-CLIENT-BAD-FRAME"},  // a DelegateFrame
        {good.substr(0, good.size() - 1), 400, "NWP-HTTP-FRAME-BODY-MALFORMED", "NPS-CLIENT-BAD-FRAME"},
        {good.substr(0, 3), 400, "NWP-HTTP-FRAME-BODY-MALFORMED", "NPS-CLIENT-BAD-FRAME"},
        {good + "x", 400, "NWP-HTTP-FRAME-BODY-MALFORMED", "NPS-CLIENT-BAD-FRAME"},
        {good.substr(0, 4) + std::string(good.size() - 4, '\xc1'), 400, "NWP-HTTP-FRAME-BODY-MALFORMED",
         "NPS-CLIENT-BAD-FRAME"},  // 0xc1 is never MsgPack
        // EXT with a length over inbox.max_message_bytes, refused on the header.
        {std::string("\x40\x85\x00\x10\x00\x00\x00\x00", 8) + "x", 413, "NCP-FRAME-PAYLOAD-TOO-LARGE",
         "NPS-LIMIT-PAYLOAD"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.code);
        CAPTURE(nps::to_hex(c.body.substr(0, 8)));
        auto reply = http("POST", url, c.body, kSdkPost);
        check_error(reply, c.status, c.code);
        CHECK(reply.body["status"] == c.nps_status);
    }
    // The encoding-policy vectors that apply to an HTTP receiver (JSON and
    // MsgPack enabled, no BinaryVector): 001 and 003 are 415 before any payload.
    for (std::uint8_t type : {ncp::kQueryFrame, ncp::kActionFrame}) {
        std::string body = good;
        body[0] = static_cast<char>(type);
        body[1] = 0x06;
        check_error(http("POST", url, body, kSdkPost), 415, "NCP-ENCODING-UNSUPPORTED");
    }
    // Nothing of the refused frames was stored.
    CHECK(http("GET", url + "/depth").body["depth"] == 4);
}

TEST_CASE("Accept: application/x-nps-frame gets framed answers: a CapsFrame, or an ErrorFrame, in the request's tier")
{
    SdkDaemon d;
    const std::vector<std::pair<std::string, std::string>> framed = {{"Content-Type", "application/x-nps-frame"},
                                                                     {"Accept", "application/x-nps-frame"}};
    auto submitted = http("POST", d.base() + "/task", sdk_frame(sdk_task("a-1")), framed);
    REQUIRE(submitted.status == 201);
    CHECK(submitted.headers["content-type"] == "application/x-nps-frame");
    CHECK(static_cast<unsigned char>(submitted.raw[1]) == 0x05);  // MsgPack, FINAL
    CHECK(frame_payload(submitted, ncp::kCapsFrame)["task_id"] == "a-1");

    auto json_tier = http("POST", d.base() + "/task", sdk_frame(sdk_task("a-2"), ncp::Tier::json), framed);
    CHECK(static_cast<unsigned char>(json_tier.raw[1]) == 0x04);  // JSON, FINAL
    CHECK(frame_payload(json_tier, ncp::kCapsFrame)["task_id"] == "a-2");

    auto refused = http("GET", d.base() + "/task/nope", std::nullopt, {{"Accept", "application/x-nps-frame"}});
    CHECK(refused.status == 404);
    Json error = frame_payload(refused, ncp::kErrorFrame);
    CHECK(error["error"] == "NOP-TASK-NOT-FOUND");
    CHECK(error["status"] == "NPS-CLIENT-NOT-FOUND");
    // q=0 declines frames; JSON it is.
    auto declined = http("GET", d.base() + "/task/a-1", std::nullopt,
                         {{"Accept", "application/x-nps-frame;q=0, application/json"}});
    CHECK(declined.body["state"] == "pending");
}

TEST_CASE("the token as a Basic-auth password (a base URL http://user:TOKEN@host) opens the API; a wrong one does not")
{
    SdkDaemon d;
    const std::string good = "Basic " + nps::base64_encode("nps:" + d.runner.token());
    const std::string bad = "Basic " + nps::base64_encode("nps:" + std::string(d.runner.token().size(), 'x'));
    CHECK(http_without_token("GET", d.base() + "/task/none", std::nullopt, {{"Authorization", good}}).status == 404);
    CHECK(http_without_token("GET", d.base() + "/task/none", std::nullopt, {{"Authorization", bad}}).status == 401);
    CHECK(http_without_token("GET", d.base() + "/task/none", std::nullopt, {{"Authorization", "Basic !!"}}).status ==
          401);
    CHECK(http_without_token("GET", d.base() + "/task/none").status == 401);
}

TEST_CASE("GET /.nwm: the route catalogue as an NWP manifest, versioned; every route in it exists")
{
    SdkDaemon d;
    auto nwm = http_without_token("GET", d.base() + "/.nwm");  // open to loopback peers, as /health
    REQUIRE(nwm.status == 200);
    CHECK(nwm.headers["content-type"] == "application/nwp-manifest+json");
    CHECK(nwm.body["node_type"] == "runner");
    CHECK(nwm.body["wire_formats"] == Json::array({"json", "msgpack"}));
    CHECK(nwm.body["auth"]["required"] == true);
    const std::string version = nwm.headers["x-nwm-version"];
    CHECK(version.size() == 16);
    CHECK(nwm.headers["etag"] == "\"" + version + "\"");
    auto again = http("GET", d.base() + "/.nwm", std::nullopt, {{"If-None-Match", nwm.headers["etag"]}});
    CHECK(again.status == 304);
    CHECK(again.raw.empty());

    // Each catalogued route, its placeholders filled, is routed (not 404
    // NWP-HTTP-NOT-FOUND and not 405): the catalogue cannot drift from the router.
    REQUIRE(nwm.body["routes"].size() >= 25);
    for (const auto& route : nwm.body["routes"]) {
        std::string path = route["path"];
        for (auto [from, to] : {std::pair<std::string, std::string>{"{nid}", kInbox},
                                {"{task_id}", "no-such-task"},
                                {"{node_id}", "n0"},
                                {"{message_id}", "999"}})
            if (auto at = path.find(from); at != std::string::npos)
                path.replace(at, from.size(), to);
        CAPTURE(route.dump());
        const std::string method = route["method"];
        auto reply = http(method, d.base() + path, method == "GET" || method == "DELETE" ? std::nullopt
                                                                                          : std::optional<std::string>("{}"));
        CHECK(reply.status != 405);
        CHECK((!reply.body.is_object() || reply.body.value("error", "") != "NWP-HTTP-NOT-FOUND"));
        CHECK(nwm.body["endpoints"][route["name"].get<std::string>()] == route["path"]);
    }
}

TEST_CASE("GET /v1/capabilities: frames, encodings, SpawnSpec forms, limits in force, modes, conformance cases")
{
    SdkDaemon d;
    auto caps = http("GET", d.base() + "/v1/capabilities");
    REQUIRE(caps.status == 200);
    const Json& b = caps.body;
    CHECK(b["frames"]["accepts"][0]["type"] == "0x40");
    CHECK(b["encodings"]["request_bodies"] == Json::array({"json", "msgpack"}));
    CHECK(b["spawn_spec_refs"].size() == 3);
    CHECK(b["limits"]["dag_nodes"] == 32);
    CHECK(b["limits"]["lease_seconds"] == Json{{"min", 10}, {"max", 600}});
    CHECK(b["limits"]["inbox"]["max_depth"] == 10000);
    // The operator's limits in force (issue 14's defaults here).
    CHECK(b["limits"]["workers"]["defaults"]["memory_bytes"] == 512 * 1024 * 1024);
    CHECK(b["limits"]["workers"]["defaults"]["pids"] == 256);
    CHECK(b["cgroup"]["mode"].is_string());
    CHECK(b["namespaces"]["user"].is_object());
    CHECK(b["namespaces"]["network"]["per_task"] == true);
    REQUIRE(b["conformance"]["cases"].size() == 10);
    for (const auto& c : b["conformance"]["cases"]) {
        CHECK(c["id"].get<std::string>().rfind("TC-N3-", 0) == 0);
        CHECK(c["verdict"] == "pass");
    }
    check_error(http_without_token("GET", d.base() + "/v1/capabilities"), 401, "NWP-HTTP-UNAUTHENTICATED");
}
