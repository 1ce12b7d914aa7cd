// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <string>

#include "nps/proto/json_reader.hpp"
#include "nps/proto/json_to_value.hpp"

namespace json = nps::proto::json;

TEST_CASE("parse_document: integers beyond 64 bits are read as doubles, invalid text names the document")
{
    simdjson::dom::parser parser;
    auto big = json::parse_document(parser, R"({"n":123456789012345678901234567890})", "doc");
    REQUIRE(big);
    double n = 0;
    CHECK(big->at_key("n").get(n) == simdjson::SUCCESS);
    CHECK(n == doctest::Approx(1.2345678901234568e29));

    auto bad = json::parse_document(parser, "{", "doc", "NOP-TEST-CODE");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == "NOP-TEST-CODE");
    CHECK(bad.error().message.starts_with("doc: invalid JSON: "));
}

TEST_CASE("field readers: one wording for a wrong type, the caller's code and path")
{
    simdjson::dom::parser parser;
    auto root = json::parse_document(parser, R"({"s":"x","n":5,"f":1.5,"b":true,"z":null})", "doc");
    REQUIRE(root);
    simdjson::dom::object object;
    REQUIRE(root->get(object) == simdjson::SUCCESS);

    CHECK(*json::read_string(*json::optional_member(object, "s"), "C", "a.s") == "x");
    auto wrong = json::read_string(*json::optional_member(object, "n"), "C", "a.n");
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().code == "C");
    CHECK(wrong.error().message == "a.n: expected a string, got a number");
    CHECK(json::read_uint(*json::optional_member(object, "f"), "C", "a.f", 0, 10).error().message ==
          "a.f: must be an integer from 0 to 10, got a number with a fraction or exponent");
    CHECK(json::read_uint(*json::optional_member(object, "n"), "C", "a.n", 0, 4).error().message ==
          "a.n: must be an integer from 0 to 4, got 5");
    CHECK_FALSE(json::optional_member(object, "z"));
    CHECK(json::required_member(object, "z", "C", "a.z").error().message == "a.z: required");
    CHECK(json::check_known_members(object, {"s", "n", "f", "b", "z"}, "C", "a"));
    CHECK(json::check_known_members(object, {"s", "n", "f", "B", "z"}, "C", "a").error().message ==
          "a.b: unknown key; did you mean \"B\"?");
}

TEST_CASE("to_value: the kinds nlohmann's parser would give, bounded depth, the last of a repeated key")
{
    auto value = json::parse_to_value(R"({"u":5,"i":-5,"f":0.5,"s":"t","b":false,"z":null,"a":[1,[2]],"k":1,"k":2})",
                                      8);
    REQUIRE(value);
    CHECK((*value)["u"].is_number_unsigned());
    CHECK((*value)["i"].get<long>() == -5);
    CHECK((*value)["f"].is_number_float());
    CHECK((*value)["s"] == "t");
    CHECK((*value)["b"] == false);
    CHECK((*value)["z"].is_null());
    CHECK((*value)["a"] == nlohmann::json::parse("[1,[2]]"));
    CHECK((*value)["k"] == 2);

    const std::string three = R"({"a":{"b":[]}})";
    CHECK(json::parse_to_value(three, 3));
    CHECK_FALSE(json::parse_to_value(three, 2));
    CHECK_FALSE(json::parse_to_value(std::string(100000, '['), 32));
    CHECK_FALSE(json::parse_to_value("{\"a\":", 32));
    CHECK(json::parse_to_value("7", 0) == nlohmann::json(7));
}
