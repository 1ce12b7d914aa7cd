// SPDX-License-Identifier: Apache-2.0
// input_mapping / compensate_params_mapping and the JSONPath subset.
#include <doctest/doctest.h>

#include "nps/nop/input_mapping.hpp"
#include "nps/nop/json_path.hpp"

using namespace nps::nop;

namespace {

const Snapshot& mapping_results()
{
    static const Snapshot snapshot = {
        {"fetch", Json::parse(R"({"value": 2, "items": [1, 2], "none": null, "flag": false, "zero": 0,
                                  "a": {"b": {"c": {"d": {"e": {"f": {"g": "deep"}}}}}}})")},
        {"other", Json::parse(R"({"name": "x"})")},
        {"scalar", Json(7)},
    };
    return snapshot;
}

Json map_ok(const std::string& mapping)
{
    auto params = apply_mapping(mapping, mapping_root(mapping_results()), "input_mapping");
    REQUIRE_MESSAGE(params.has_value(), mapping << " → " << (params ? "" : params.error().message));
    return *params;
}

std::string map_error(const std::string& mapping)
{
    auto params = apply_mapping(mapping, mapping_root(mapping_results()), "input_mapping");
    REQUIRE_MESSAGE(!params.has_value(), mapping);
    CHECK(params.error().code == "NOP-INPUT-MAPPING-ERROR");
    return params.error().message;
}

}  // namespace

TEST_CASE("mapping: the vector's single path")
{
    CHECK(map_ok(R"({"value":"$.fetch.value"})") == Json::parse(R"({"value":2})"));
}

TEST_CASE("mapping: whole results, nested values, falsy values are not null")
{
    CHECK(map_ok(R"({"all":"$.fetch"})")["all"] == mapping_results().at("fetch"));
    CHECK(map_ok(R"({"s":"$.scalar"})")["s"] == 7);
    CHECK(map_ok(R"({"f":"$.fetch.flag","z":"$.fetch.zero"})") == Json::parse(R"({"f":false,"z":0})"));
    CHECK(map_ok(R"({"items":"$.fetch.items"})")["items"] == Json::parse("[1,2]"));
}

TEST_CASE("mapping: depth 8 resolves, depth 9 is refused")
{
    CHECK(map_ok(R"({"g":"$.fetch.a.b.c.d.e.f.g"})")["g"] == "deep");  // 8 segments
    CHECK(map_error(R"({"g":"$.fetch.a.b.c.d.e.f.g.h"})") ==
          R"(input_mapping.g: JSONPath "$.fetch.a.b.c.d.e.f.g.h": has more than 8 segments)");
    auto path = parse_json_path("$.a.b.c.d.e.f.g.h");
    REQUIRE(path);
    CHECK(path->segments.size() == 8);
    CHECK_FALSE(parse_json_path("$.a.b.c.d.e.f.g.h.i"));
}

TEST_CASE("mapping: the array form collects values in order, without flattening")
{
    CHECK(map_ok(R"({"both":["$.fetch.items","$.other.name","$.fetch.value"]})") ==
          Json::parse(R"({"both":[[1,2],"x",2]})"));
    CHECK(map_error(R"({"both":["$.fetch.value","$.other.missing"]})") ==
          R"(input_mapping.both[1]: "$.other.missing" resolved to nothing)");
    // Items that are not paths are copied.
    CHECK(map_ok(R"({"both":[]})") == Json::parse(R"({"both":[]})"));
    CHECK(map_ok(R"({"both":["$.fetch.value",3,"plain"]})") == Json::parse(R"({"both":[2,3,"plain"]})"));
}

TEST_CASE("mapping: values that are not paths are literals, strings not starting with $ included")
{
    CHECK(map_ok(R"({"n":5,"b":true,"z":null,"o":{"k":"$.fetch.value"},"v":"$.fetch.value"})") ==
          Json::parse(R"({"n":5,"b":true,"z":null,"o":{"k":"$.fetch.value"},"v":2})"));
    CHECK(map_ok("{}") == Json::object());
    // A root node's plain parameters (issue 18): no upstream, nothing to read.
    CHECK(map_ok(R"({"city":"Oslo","days":3,"note":"fetch.value","empty":""})") ==
          Json::parse(R"({"city":"Oslo","days":3,"note":"fetch.value","empty":""})"));
}

TEST_CASE("mapping: missing and null are errors naming the param and the path")
{
    CHECK(map_error(R"({"v":"$.fetch.none"})") == R"(input_mapping.v: "$.fetch.none" resolved to null)");
    CHECK(map_error(R"({"v":"$.fetch.missing"})") == R"(input_mapping.v: "$.fetch.missing" resolved to nothing)");
    CHECK(map_error(R"({"v":"$.ghost.value"})") == R"(input_mapping.v: "$.ghost.value" resolved to nothing)");
    CHECK(map_error(R"({"v":"$.scalar.x"})") == R"(input_mapping.v: "$.scalar.x" resolved to nothing)");
    CHECK(map_error(R"({"v":"$.fetch.items.0"})") == R"(input_mapping.v: "$.fetch.items.0" resolved to nothing)");
    CHECK(map_error(R"({"v":"$fetch.value"})") == R"(input_mapping.v: JSONPath "$fetch.value": must start with "$.")");
    CHECK(map_error(R"({"v":"$.a[0]"})") ==
          R"(input_mapping.v: JSONPath "$.a[0]": uses unsupported syntax (only $.a.b.c is supported))");
    CHECK(map_error(R"({"v":"$."})") == R"(input_mapping.v: JSONPath "$.": has an empty segment)");
    CHECK(map_error("[1]") == "input_mapping: not a JSON object");
}

TEST_CASE("compensate_params_mapping: $ is the node's own result")
{
    const Json result = Json::parse(R"({"charge_id":"c1","amount":{"value":10}})");
    auto params = apply_mapping(R"({"charge_id":"$.charge_id","amount":"$.amount.value"})", result,
                                "compensate_params_mapping");
    REQUIRE(params);
    CHECK(*params == Json::parse(R"({"charge_id":"c1","amount":10})"));
    auto missing = apply_mapping(R"({"id":"$.refund_id"})", result, "compensate_params_mapping");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message == R"(compensate_params_mapping.id: "$.refund_id" resolved to nothing)");
}

TEST_CASE("params without input_mapping")
{
    // No dependency: {}.
    CHECK(default_params({}, mapping_results()) == Json::object());
    // One dependency with an object result: that result.
    CHECK(default_params({"other"}, mapping_results()) == Json::parse(R"({"name":"x"})"));
    // One dependency with a non-object result: keyed by its id.
    CHECK(default_params({"scalar"}, mapping_results()) == Json::parse(R"({"scalar":7})"));
    // One skipped dependency (no result): {}.
    CHECK(default_params({"skipped"}, mapping_results()) == Json::object());
    // Several: keyed by id, skipped ones left out.
    CHECK(default_params({"other", "scalar", "skipped"}, mapping_results()) ==
          Json::parse(R"({"other":{"name":"x"},"scalar":7})"));
}
