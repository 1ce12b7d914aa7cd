// SPDX-License-Identifier: Apache-2.0
// The six aggregation modes over sink results.
#include <doctest/doctest.h>

#include "nps/nop/aggregate.hpp"

using namespace nps::nop;
using nps::proto::AggregateMode;

namespace {

SinkResult sink(const std::string& id, const char* json, std::uint64_t seq = 0)
{
    return SinkResult{.node_id = id, .result = Json::parse(json), .completed_seq = seq};
}

Json agg(AggregateMode mode, const std::vector<SinkResult>& sinks, std::optional<std::uint32_t> k = std::nullopt)
{
    auto value = aggregate_results(mode, k, sinks);
    REQUIRE(value.has_value());
    return *value;
}

}  // namespace

TEST_CASE("aggregate: no sinks, no aggregate")
{
    for (auto mode : {AggregateMode::merge, AggregateMode::first, AggregateMode::all, AggregateMode::fastest_k,
                      AggregateMode::weighted_first_k, AggregateMode::merge_all})
        CHECK_FALSE(aggregate_results(mode, std::nullopt, {}).has_value());
}

TEST_CASE("aggregate: merge")
{
    CHECK(agg(AggregateMode::merge, {sink("a", R"({"answer":4})")}) == Json::parse(R"({"answer":4})"));
    // Shallow, later node wins, arrays replaced.
    CHECK(agg(AggregateMode::merge, {sink("a", R"({"x":1,"items":[1],"o":{"p":1}})"),
                                     sink("b", R"({"y":2,"items":[2],"o":{"q":2}})")}) ==
          Json::parse(R"({"x":1,"y":2,"items":[2],"o":{"q":2}})"));
    // A non-object replaces what came before; a lone scalar stays itself.
    CHECK(agg(AggregateMode::merge, {sink("a", R"({"x":1})"), sink("b", "5")}) == 5);
    CHECK(agg(AggregateMode::merge, {sink("a", "5"), sink("b", R"({"x":1})")}) == Json::parse(R"({"x":1})"));
    CHECK(agg(AggregateMode::merge, {sink("a", "\"s\"")}) == "s");
}

TEST_CASE("aggregate: merge_all, the vector's example")
{
    CHECK(agg(AggregateMode::merge_all, {sink("alpha", R"({"items":[1],"shared":"alpha"})"),
                                         sink("beta", R"({"items":[2],"shared":"beta"})")}) ==
          Json::parse(R"({"items":[1,2],"shared":"beta"})"));
    // An array meeting a non-array: later wins; whole-array results concatenate.
    CHECK(agg(AggregateMode::merge_all, {sink("a", R"({"items":[1]})"), sink("b", R"({"items":"x"})"),
                                         sink("c", R"({"items":[3]})")}) == Json::parse(R"({"items":[3]})"));
    CHECK(agg(AggregateMode::merge_all, {sink("a", "[1]"), sink("b", "[2,3]")}) == Json::parse("[1,2,3]"));
}

TEST_CASE("aggregate: first and all use topological order")
{
    const std::vector<SinkResult> sinks = {sink("b", R"({"n":"b"})", 2), sink("a", R"({"n":"a"})", 1)};
    CHECK(agg(AggregateMode::first, sinks) == Json::parse(R"({"n":"b"})"));
    CHECK(agg(AggregateMode::all, sinks) == Json::parse(R"([{"n":"b"},{"n":"a"}])"));
    CHECK(agg(AggregateMode::all, sinks, 1) == Json::parse(R"([{"n":"b"},{"n":"a"}])"));  // K ignored
}

TEST_CASE("aggregate: fastest_k by completion order, ties by node id")
{
    const std::vector<SinkResult> sinks = {sink("c", R"({"n":"c"})", 1), sink("a", R"({"n":"a"})", 3),
                                           sink("b", R"({"n":"b"})", 2)};
    CHECK(agg(AggregateMode::fastest_k, sinks, 2) == Json::parse(R"([{"n":"c"},{"n":"b"}])"));
    CHECK(agg(AggregateMode::fastest_k, sinks) == Json::parse(R"([{"n":"c"},{"n":"b"},{"n":"a"}])"));
    CHECK(agg(AggregateMode::fastest_k, sinks, 10).size() == 3);
    // Resumed nodes (seq 0) come first, ordered by id.
    const std::vector<SinkResult> resumed = {sink("z", "1", 0), sink("y", "2", 0), sink("x", "3", 1)};
    CHECK(agg(AggregateMode::fastest_k, resumed, 2) == Json::parse("[2,1]"));
}

TEST_CASE("aggregate: weighted_first_k by score, then node id")
{
    const std::vector<SinkResult> sinks = {
        sink("a", R"({"score":0.5})"), sink("b", R"({"score":0.9})"), sink("c", R"({"score":0.5})"),
        sink("d", R"({"other":1})"),   sink("e", R"({"score":"high"})"), sink("f", "3"),
    };
    CHECK(agg(AggregateMode::weighted_first_k, sinks, 3) ==
          Json::parse(R"([{"score":0.9},{"score":0.5},{"score":0.5}])"));
    // Unscored results rank last, by id.
    const Json all = agg(AggregateMode::weighted_first_k, sinks);
    REQUIRE(all.size() == 6);
    CHECK(all[3] == Json::parse(R"({"other":1})"));
    CHECK(all[4] == Json::parse(R"({"score":"high"})"));
    CHECK(all[5] == 3);
    // The tie between a and c goes to a.
    CHECK(agg(AggregateMode::weighted_first_k, {sink("c", R"({"score":1,"id":"c"})"),
                                                sink("a", R"({"score":1,"id":"a"})")}, 1) ==
          Json::parse(R"([{"score":1,"id":"a"}])"));
}
