// SPDX-License-Identifier: Apache-2.0
// nop/runtime_security_vectors.json, dispatched on `category`.
//
// Checked here: callback (the pure policy and the destination guard that
// outbound requests use, with the vector's DNS answers), hmac, dedup_key,
// spawn_spec (the parser, and the resolver on the spec as an inline ref),
// lifecycle (the supervisor's evaluate_lifecycle).
// Covered by other suites, listed so nothing is skipped silently:
//   lease       → the store's vector suite (tests/vectors/store)
//   delegation  → delegation / NDP target resolution (later work)
// Any other category, a missing category, or an id that does not match its
// category fails.
#include <chrono>
#include <map>

#include "nps/base/clock.hpp"
#include "nps/base/limits.hpp"
#include "nps/net/destination_guard.hpp"
#include "nps/proto/callback_policy.hpp"
#include "nps/proto/callback_signature.hpp"
#include "nps/proto/dedup.hpp"
#include "nps/proto/url.hpp"
#include "nps/spawn/resolver.hpp"
#include "nps/spawn/spawn_spec.hpp"
#include "nps/supervisor/lifecycle.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::test::vectors;

namespace {

using Reasons = std::vector<std::string>;

Json error_or_null(const nps::Result<void>& result)
{
    return result ? Json(nullptr) : Json(result.error().code);
}

std::vector<std::string> string_list(const Json& value)
{
    std::vector<std::string> out;
    if (value.is_array())
        for (const Json& item : value)
            out.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    return out;
}

// The guard as a callback delivery would use it: the vector's resolved_ips
// are the DNS answers of the URL's host (and of the redirect's).
nps::Result<void> admit_through_guard(const std::string& url, const std::vector<std::string>& ips,
                                      std::string_view what)
{
    nps::net::StaticResolver dns;
    if (const auto parts = split_url(url))
        dns.add(std::string(parts->host), ips);
    const nps::net::DestinationGuard guard(DestinationRules{.error_code = "NOP-CALLBACK-INVALID"}, dns);
    auto admitted = guard.admit(url, what, 1000);
    if (!admitted)
        return std::move(admitted).error();
    return {};
}

Reasons check_callback(const Json& input, const Json& expected)
{
    Reasons reasons = unknown_keys(input, {"url", "resolved_ips", "redirect_url", "redirect_resolved_ips"});
    if (!reasons.empty())
        return reasons;
    const std::string url = input.value("url", "");
    const auto ips = string_list(input.value("resolved_ips", Json()));
    const std::string redirect = input.value("redirect_url", "");
    const auto redirect_ips = string_list(input.value("redirect_resolved_ips", Json()));

    auto policy = check_callback_destination(url, ips);
    if (policy && input.contains("redirect_url"))
        policy = check_callback_destination(redirect, redirect_ips, "callback redirect");
    auto guarded = admit_through_guard(url, ips, "callback_url");
    if (guarded && input.contains("redirect_url"))
        guarded = admit_through_guard(redirect, redirect_ips, "callback redirect");

    for (const auto& [name, result] : {std::pair{"policy", &policy}, std::pair{"guard", &guarded}})
        for (const std::string& why :
             compare_expected(expected, Json{{"allowed", result->has_value()}, {"error", error_or_null(*result)}}))
            reasons.push_back(std::string(name) + ": " + why);
    return reasons;
}

Reasons check_spawn_spec(const Json& input, const Json& expected)
{
    Reasons reasons = unknown_keys(input, {"spawn_spec"});
    if (!reasons.empty())
        return reasons;
    const std::string json = input.contains("spawn_spec") ? input["spawn_spec"].dump() : "";
    const auto parsed = nps::spawn::parse_spawn_spec(json, nps::limits::kDefaultSpawnSpecBytes);
    for (const std::string& why :
         compare_expected(expected, Json{{"error", parsed ? Json(nullptr) : Json(parsed.error().code)}}))
        reasons.push_back("parser: " + why);

    // The same document as an inline spawn_spec_ref, through the resolver.
    nps::FakeClock clock;
    nps::spawn::SpawnSpecResolver resolver({}, clock, nullptr);
    const auto resolved = resolver.resolve_ref(nps::spawn::encode_spawnspec_uri(json));
    for (const std::string& why :
         compare_expected(expected, Json{{"error", resolved ? Json(nullptr) : Json(resolved.error().code)}}))
        reasons.push_back("resolver: " + why);
    return reasons;
}

Reasons check_hmac(const Json& input, const Json& expected)
{
    Reasons reasons = unknown_keys(input, {"secret_base64url", "raw_body", "signature"});
    if (!reasons.empty())
        return reasons;
    std::optional<std::string> signature;
    if (input.contains("signature") && input["signature"].is_string())
        signature = input["signature"].get<std::string>();
    const auto result = verify_callback_signature(input.value("secret_base64url", ""), input.value("raw_body", ""),
                                                  signature ? std::optional<std::string_view>(*signature) : std::nullopt);
    return compare_expected(expected, Json{{"valid", result.has_value()}, {"error", error_or_null(result)}});
}

Reasons check_dedup(const Json& input, const Json& expected)
{
    Reasons reasons = unknown_keys(input, {"task_id", "dag_hash"});
    if (!reasons.empty())
        return reasons;
    return compare_expected(expected,
                            Json{{"value", dedup_key(input.value("task_id", ""), input.value("dag_hash", ""))}});
}

// Seconds as the vectors give them (integers, perhaps fractions) → ns.
std::optional<std::chrono::nanoseconds> seconds_of(const Json& value)
{
    if (!value.is_number() || value.get<double>() < 0)
        return std::nullopt;
    return std::chrono::nanoseconds(static_cast<std::int64_t>(value.get<double>() * 1e9 + 0.5));
}

Reasons check_lifecycle(const Json& input, const Json& expected)
{
    using namespace nps::supervisor;
    Reasons reasons = unknown_keys(input, {"elapsed_seconds", "idle_seconds", "idle_timeout_seconds",
                                           "max_runtime_seconds", "worker_terminal"});
    if (!reasons.empty())
        return reasons;
    LifecycleInput in;
    const auto elapsed = seconds_of(input.value("elapsed_seconds", Json()));
    const auto idle = seconds_of(input.value("idle_seconds", Json()));
    if (!elapsed || !idle)
        return Reasons{"elapsed_seconds and idle_seconds must be non-negative numbers"};
    in.elapsed = *elapsed;
    in.idle = *idle;
    for (const char* key : {"idle_timeout_seconds", "max_runtime_seconds"}) {
        const Json value = input.value(key, Json());
        if (value.is_null())
            continue;  // no such limit
        const auto limit = seconds_of(value);
        if (!limit)
            return Reasons{std::string(key) + " must be a non-negative number or null"};
        auto& slot = std::string_view(key) == "idle_timeout_seconds" ? in.limits.idle_timeout : in.limits.max_runtime;
        slot = std::chrono::duration_cast<std::chrono::milliseconds>(*limit);
    }
    const Json terminal = input.value("worker_terminal", Json());
    if (terminal.is_null())
        in.report = WorkerReport::running;
    else if (terminal == "done")
        in.report = WorkerReport::done;
    else if (terminal == "failed")
        in.report = WorkerReport::failed;
    else
        return Reasons{"unknown worker_terminal " + terminal.dump()};
    const LifecycleDecision decision = evaluate_lifecycle(in);
    Json state, error = nullptr;
    switch (decision.verdict) {
    case NodeVerdict::completed: state = "completed"; break;
    case NodeVerdict::failed:
        state = "failed";
        // A failure the worker reported brings its own code; none given here.
        error = decision.error_code.empty() ? Json("NOP-DELEGATE-REJECTED") : Json(std::string(decision.error_code));
        break;
    case NodeVerdict::running: state = "running"; break;
    }
    return compare_expected(expected, Json{{"state", state}, {"error", error}});
}

struct Category {
    const char* id_prefix;
    Reasons (*check)(const Json& input, const Json& expected);  // null: covered by another suite
    const char* owner;
};

const std::map<std::string, Category> kCategories = {
    {"callback", {"nop.callback.", check_callback, nullptr}},
    {"hmac", {"nop.hmac.", check_hmac, nullptr}},
    {"dedup_key", {"nop.dedup.", check_dedup, nullptr}},
    {"lease", {"nop.lease.", nullptr, "lease store: tests/vectors/store"}},
    {"delegation", {"nop.delegation.", nullptr, "delegation target resolution: later work"}},
    {"spawn_spec", {"nop.spawnspec.", check_spawn_spec, nullptr}},
    {"lifecycle", {"nop.lifecycle.", check_lifecycle, nullptr}},
};

}  // namespace

int main()
{
    return run_vector_file("nop/runtime_security_vectors.json",
                           [](Report& report, const std::string& id, const Json& vector) -> std::optional<Reasons> {
        if (!vector.contains("category") || !vector["category"].is_string())
            return Reasons{"vector has no category"};
        const std::string category = vector["category"].get<std::string>();
        const auto it = kCategories.find(category);
        if (it == kCategories.end())
            return Reasons{"unknown category '" + category + "': no suite checks it"};
        if (!id.starts_with(it->second.id_prefix))
            return Reasons{"unknown vector id for category '" + category + "' (expected " + it->second.id_prefix + "*)"};
        if (it->second.check == nullptr) {
            report.owned_elsewhere(id, it->second.owner);
            return std::nullopt;
        }
        return it->second.check(vector["input"], vector["expected"]);
    });
}
