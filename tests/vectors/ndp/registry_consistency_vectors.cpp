// SPDX-License-Identifier: Apache-2.0
// ndp/registry_consistency_vectors.json: each vector starts an empty
// RegistryModel with the vector's profile and a FakeClock, admits the
// announces in order (the clock at received_at, or at input.now), then at
// input.now compares decisions, errors, live_nids, highest_sequences and,
// when asked, resolve (of the first announce's NID), cluster and bridge
// queries. Every live NID must also resolve.
#include "nps/base/clock.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/ndp_registry.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::proto::ndp;
using namespace nps::test::vectors;

namespace {

using Reasons = std::vector<std::string>;

std::optional<std::int64_t> time_of(const Json& value)
{
    if (!value.is_string())
        return std::nullopt;
    return nps::parse_rfc3339_ms(value.get<std::string>());
}

Reasons check(const Json& input, const Json& expected)
{
    Reasons reasons =
        unknown_keys(input, {"now", "profile", "announces", "cluster_query", "bridge_queries"});
    if (!reasons.empty())
        return reasons;
    const auto now = time_of(input.value("now", Json()));
    const auto profile = registry_profile_from_name(input.value("profile", ""));
    if (!now || !profile)
        return {"input.now must be an RFC 3339 time and input.profile a registry profile"};

    nps::FakeClock clock(*now);
    RegistryModel registry({.profile = *profile, .clock = &clock});
    Json decisions = Json::array();
    Json errors = Json::array();
    std::string first_nid;
    for (const Json& step : input.value("announces", Json::array())) {
        for (const auto& r : unknown_keys(step, {"signature_valid", "received_at", "frame"}))
            reasons.push_back(r);
        const Json frame = step.value("frame", Json::object());
        if (first_nid.empty())
            first_nid = frame.value("nid", "");
        clock.set_ms(step.contains("received_at") ? time_of(step["received_at"]).value_or(*now) : *now);
        const nps::Result<void> signature =
            step.value("signature_valid", false)
                ? nps::Result<void>{}
                : nps::Result<void>{nps::protocol_error("NDP-ANNOUNCE-SIGNATURE-INVALID", "vector: signature invalid")};
        const Admission a = registry.admit(frame.dump(), signature);
        decisions.push_back(std::string(decision_name(a.decision)));
        errors.push_back(a.error ? Json(a.error->code) : Json(nullptr));
    }
    clock.set_ms(*now);

    Json actual{{"decisions", decisions}, {"errors", errors}};
    actual["live_nids"] = registry.live_nids();
    Json sequences = Json::object();
    for (const auto& [nid, seq] : registry.highest_sequences())
        sequences[nid] = seq;
    actual["highest_sequences"] = sequences;
    for (const auto& nid : registry.live_nids())
        if (const auto r = registry.resolve(nid); !r)
            reasons.push_back("live NID " + nid + " does not resolve: " + r.error().code);

    if (expected.contains("resolve_error")) {
        const auto r = registry.resolve(first_nid);
        actual["resolve_error"] = r ? Json(nullptr) : Json(r.error().code);
    }
    if (input.contains("cluster_query")) {
        const auto r = registry.resolve_cluster(input.value("cluster_query", ""));
        if (r) {
            actual["selected_nid"] = r->nid;
            actual["selected_epoch"] = r->cluster_epoch;
            actual["cluster_error"] = nullptr;
        } else {
            actual["cluster_error"] = r.error().code;
        }
    }
    if (input.contains("bridge_queries")) {
        Json results = Json::array();
        for (const Json& q : input["bridge_queries"]) {
            const std::string direction = q.value("direction", "");
            if (direction != "inbound" && direction != "outbound") {
                reasons.push_back("bridge query direction " + q.dump());
                continue;
            }
            results.push_back(registry.bridges(direction == "inbound" ? BridgeDirection::inbound
                                                                      : BridgeDirection::outbound,
                                               q.value("protocol", "")));
        }
        actual["bridge_results"] = results;
    }
    for (const auto& r : compare_expected(expected, actual))
        reasons.push_back(r);
    return reasons;
}

}  // namespace

int main()
{
    return run_vector_file("ndp/registry_consistency_vectors.json",
                           [](Report&, const std::string& id, const Json& vector) -> std::optional<Reasons> {
        if (!id.starts_with("ndp.registry."))
            return Reasons{"unknown vector id (this file holds ndp.registry.* vectors)"};
        return check(vector["input"], vector["expected"]);
    });
}
