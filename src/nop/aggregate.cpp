// SPDX-License-Identifier: Apache-2.0
#include "nps/nop/aggregate.hpp"

#include <algorithm>

namespace nps::nop {

namespace {

using proto::AggregateMode;

Json merge_pair(Json earlier, const Json& later, bool concat_arrays)
{
    if (concat_arrays && earlier.is_array() && later.is_array()) {
        for (const Json& item : later)
            earlier.push_back(item);
        return earlier;
    }
    if (!earlier.is_object() || !later.is_object())
        return later;
    for (auto it = later.begin(); it != later.end(); ++it) {
        auto mine = earlier.find(it.key());
        if (concat_arrays && mine != earlier.end() && mine->is_array() && it.value().is_array()) {
            for (const Json& item : it.value())
                mine->push_back(item);
        } else {
            earlier[it.key()] = it.value();
        }
    }
    return earlier;
}

std::optional<double> score_of(const Json& result)
{
    if (!result.is_object())
        return std::nullopt;
    const auto score = result.find("score");
    if (score == result.end() || !score->is_number())
        return std::nullopt;
    return score->get<double>();
}

Json first_k(std::vector<const SinkResult*> order, std::optional<std::uint32_t> k)
{
    Json out = Json::array();
    const std::size_t limit = k ? std::min<std::size_t>(*k, order.size()) : order.size();
    for (std::size_t i = 0; i < limit; ++i)
        out.push_back(order[i]->result);
    return out;
}

}  // namespace

std::optional<Json> aggregate_results(AggregateMode mode, std::optional<std::uint32_t> k,
                                      const std::vector<SinkResult>& sinks)
{
    if (sinks.empty())
        return std::nullopt;
    std::vector<const SinkResult*> order;
    for (const SinkResult& sink : sinks)
        order.push_back(&sink);

    switch (mode) {
    case AggregateMode::merge:
    case AggregateMode::merge_all: {
        Json acc = sinks.front().result;
        for (std::size_t i = 1; i < sinks.size(); ++i)
            acc = merge_pair(std::move(acc), sinks[i].result, mode == AggregateMode::merge_all);
        return acc;
    }
    case AggregateMode::first:
        return sinks.front().result;
    case AggregateMode::all:
        return first_k(order, std::nullopt);
    case AggregateMode::fastest_k:
        std::stable_sort(order.begin(), order.end(), [](const SinkResult* a, const SinkResult* b) {
            if (a->completed_seq != b->completed_seq)
                return a->completed_seq < b->completed_seq;
            return a->node_id < b->node_id;
        });
        return first_k(order, k);
    case AggregateMode::weighted_first_k:
        std::stable_sort(order.begin(), order.end(), [](const SinkResult* a, const SinkResult* b) {
            const auto sa = score_of(a->result);
            const auto sb = score_of(b->result);
            if (sa.has_value() != sb.has_value())
                return sa.has_value();
            if (sa && *sa != *sb)
                return *sa > *sb;
            return a->node_id < b->node_id;
        });
        return first_k(order, k);
    }
    return std::nullopt;
}

}  // namespace nps::nop
