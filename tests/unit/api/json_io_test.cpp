// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <set>

#include "nps/api/json_io.hpp"
#include "nps/proto/error_codes.hpp"

using nps::api::Json;

TEST_CASE("request bodies: nesting is counted outside strings only")
{
    CHECK(nps::api::parse_json_object("{}"));
    CHECK(nps::api::parse_json_object(R"({"a":[{"b":"[[[["}]})"));
    CHECK(nps::api::parse_json_object(R"({"a":"\"[[["})"));
    const std::string at_limit = std::string(31, '[') + std::string(31, ']');
    CHECK(nps::api::parse_json_object("{\"a\":" + at_limit + "}"));
    CHECK_FALSE(nps::api::parse_json_object("{\"a\":[" + at_limit + "]}"));
    CHECK_FALSE(nps::api::parse_json_object(std::string(10000, '[')));
}

TEST_CASE("request bodies: numbers keep the kinds the field readers expect")
{
    auto body = nps::api::parse_json_object(R"({"n":5,"neg":-1,"f":1.5,"big":123456789012345678901234567890})");
    REQUIRE(body);
    CHECK((*body)["n"].is_number_unsigned());
    CHECK((*body)["neg"].is_number_integer());
    CHECK_FALSE((*body)["neg"].is_number_unsigned());
    CHECK((*body)["f"].is_number_float());
    CHECK((*body)["big"].is_number_float());
    CHECK(*nps::api::required_uint32(*body, "n") == 5);
}

TEST_CASE("request bodies: objects only, depth-capped")
{
    CHECK(nps::api::parse_json_object(R"({"a":1})"));
    for (const char* bad : {"", "[]", "1", "{", "{\"a\":1}x", "nul"}) {
        auto r = nps::api::parse_json_object(bad);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == "NWP-HTTP-FRAME-BODY-MALFORMED");
    }
    std::string deep = "{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}";
    CHECK(nps::api::parse_json_object(deep).error().code == "NWP-HTTP-FRAME-BODY-MALFORMED");
}

TEST_CASE("field readers name the field")
{
    Json body = Json::parse(R"({"s":"x","n":5,"neg":-1,"big":99999999999,"f":1.5,"e":""})");
    CHECK(*nps::api::required_string(body, "s", 10) == "x");
    CHECK(nps::api::required_string(body, "s", 0).error().message == "Field 's' is longer than 0 characters");
    CHECK(nps::api::required_string(body, "missing", 10).error().message == "Field 'missing' is required");
    CHECK(nps::api::required_string(body, "n", 10).error().message == "Field 'n' must be a string");
    CHECK(nps::api::required_string(body, "e", 10).error().message == "Field 'e' must not be empty");
    CHECK(*nps::api::required_uint32(body, "n") == 5);
    CHECK(nps::api::required_uint32(body, "neg").error().message == "Field 'neg' must not be negative");
    CHECK(nps::api::required_uint32(body, "big").error().message == "Field 'big' must be at most 4294967295");
    CHECK(nps::api::required_uint32(body, "f").error().message == "Field 'f' must be an integer");
    CHECK_FALSE(nps::api::optional_uint32(body, "missing")->has_value());
}

TEST_CASE("error bodies take status and HTTP code from the one table")
{
    auto r = nps::api::error_response("NOP-CLAIM-CONFLICT", "held by runner-a");
    CHECK(r.status == 409);
    auto body = Json::parse(r.body);
    CHECK(body == Json{{"status", "NPS-CLIENT-CONFLICT"}, {"error", "NOP-CLAIM-CONFLICT"}, {"message", "held by runner-a"}});
    auto internal = nps::api::error_response(nps::internal_error("disk on fire"));
    CHECK(internal.status == 500);
    CHECK(Json::parse(internal.body)["error"] == "NPS-SERVER-INTERNAL");
}

TEST_CASE("the error-code table is consistent with the NPS status table")
{
    // status-codes.md v0.7 (spec digest §6.3); 405 is ours for a wrong method.
    const std::map<std::string, std::set<int>> http_for_status = {
        {"NPS-CLIENT-BAD-FRAME", {400, 405}}, {"NPS-CLIENT-BAD-PARAM", {400}},   {"NPS-CLIENT-NOT-FOUND", {404}},
        {"NPS-CLIENT-CONFLICT", {409}},       {"NPS-CLIENT-UNPROCESSABLE", {422}}, {"NPS-AUTH-UNAUTHENTICATED", {401}},
        {"NPS-AUTH-FORBIDDEN", {403}},        {"NPS-LIMIT-RATE", {429}},          {"NPS-LIMIT-PAYLOAD", {413}},
        {"NPS-SERVER-INTERNAL", {500}},       {"NPS-SERVER-UNAVAILABLE", {503}},  {"NPS-SERVER-TIMEOUT", {408, 504}},
        {"NPS-SERVER-ENCODING-UNSUPPORTED", {415}}, {"NPS-STREAM-SEQ-GAP", {422}},
    };
    std::set<std::string> seen;
    for (auto* e = nps::proto::error_code_table_begin(); e != nps::proto::error_code_table_end(); ++e) {
        INFO(e->code);
        CHECK(seen.insert(std::string(e->code)).second);  // no duplicates
        auto it = http_for_status.find(std::string(e->nps_status));
        REQUIRE(it != http_for_status.end());
        CHECK(it->second.count(e->http_status) == 1);
    }
    // The four codes CR-0007 §7 adds.
    CHECK(nps::proto::lookup_error_code("NOP-CLAIM-CONFLICT")->http_status == 409);
    CHECK(nps::proto::lookup_error_code("NOP-SPAWN-SPEC-INVALID")->http_status == 400);
    CHECK(nps::proto::lookup_error_code("NOP-RUNTIME-IDLE-TIMEOUT")->http_status == 504);
    CHECK(nps::proto::lookup_error_code("NOP-RUNTIME-MAX-RUNTIME")->http_status == 504);
    CHECK(nps::proto::lookup_error_code("NOP-COMPENSATION-FAILED")->http_status == 422);  // transport-profile §5 pin
}
