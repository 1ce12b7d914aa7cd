// SPDX-License-Identifier: Apache-2.0
// Runs every `lease` vector of nop/runtime_security_vectors.json (spec
// digest §8.3) against the real store on a real SQLite file, with a
// FakeClock set to each event's `at` (seconds).
//
// The vectors' dedup_key values are opaque labels: the first label seen
// with a task is bound to that task's real dedup_key (the store computes
// nothing from it); a different label used later for the same task maps to a
// key that does not match, as a mismatching dedup_key would.
//
// Exit status: 0 all pass, 1 a failure, 77 (skip) when the vectors are absent.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/store/store.hpp"
#include "pg_scratch.hpp"
#include "temp_dir.hpp"

namespace {

using nps::test::TempDir;

using nlohmann::json;
using namespace nps::store;
namespace proto = nps::proto;

constexpr int kSkip = 77;
constexpr const char* kInbox = "urn:nps:agent:vectors:inbox";

std::string dedup_key(const std::string& task_id, const std::string& dag_hash)
{
    std::string input = task_id;
    input.push_back('\0');
    input += dag_hash;
    return nps::sha256_hex(input);
}

template <class T>
std::string conflict_or_error(const nps::Result<T>& r)
{
    if (r.error().code == "NOP-CLAIM-CONFLICT")
        return "conflict";
    return "error:" + (r.error().code.empty() ? std::string("internal") : r.error().code) + " (" +
           r.error().message + ")";
}

class VectorRun {
public:
    VectorRun() : clock_(0)
    {
        // The PostgreSQL pass (vectors-store-lease-pg): a fresh schema of
        // the test server, on the vectors' clock.
        nps::store::OpenOptions options{.path = dir_.path() + "/runner.db"};
        if (const std::string url = nps::test::pg_test_url(); !url.empty()) {
            pg_schema_ = std::make_unique<nps::test::PgScratchSchema>(url);
            options = {.url = pg_schema_->url(), .clock_source = nps::store::ClockSource::caller};
        }
        auto opened = Store::open(options, clock_);
        if (!opened)
            throw std::runtime_error(opened.error().describe());
        store_ = std::move(opened).value();
    }

    std::string apply(const json& event)
    {
        clock_.set_ms(event.at("at").get<std::int64_t>() * 1000);
        const std::string op = event.at("op").get<std::string>();
        if (op == "claim")
            return claim(event);
        if (op == "renew")
            return renew(event);
        if (op == "mark_terminal")
            return mark_terminal(event);
        if (op == "is_terminal")
            return is_terminal(event);
        return "unsupported-op:" + op;
    }

private:
    // The task behind a claim is deposited on first sight.
    std::string ensure_task(const std::string& task_id, const std::string& label)
    {
        if (!deposited_.count(task_id)) {
            DepositRequest d;
            d.nid = kInbox;
            d.task_id = task_id;
            d.payload = json{{"frame", "0x40"}, {"task_id", task_id}, {"dag", {{"nodes", json::array()}}}}.dump();
            d.content_type = "application/json";
            d.frame_hash = nps::sha256_hex(d.payload);
            d.dag_hash = nps::sha256_hex(R"({"nodes":[]})");
            d.dedup_key = dedup_key(task_id, d.dag_hash);
            d.ttl_seconds = 3600;
            auto r = store_->deposit(d);
            if (!r)
                throw std::runtime_error("deposit failed: " + r.error().describe());
            deposited_[task_id] = d.dedup_key;
            if (!labels_.count(label))
                labels_[label] = {task_id, d.dedup_key};
        }
        return real_key(label);
    }

    std::string real_key(const std::string& label) const
    {
        auto it = labels_.find(label);
        return it != labels_.end() ? it->second.second : nps::sha256_hex("unbound label:" + label);
    }

    std::string claim(const json& e)
    {
        const std::string task_id = e.at("task_id").get<std::string>();
        const std::string key = ensure_task(task_id, e.value("dedup_key", std::string()));
        ClaimRequest req{.nid = kInbox,
                         .runner_nid = e.at("runner_nid").get<std::string>(),
                         .lease_seconds = e.at("lease_seconds").get<std::uint32_t>(),
                         .task_id = task_id,
                         .dedup_key = e.contains("dedup_key") ? std::optional<std::string>(key) : std::nullopt};
        auto r = store_->claim(req);
        if (!r)
            return conflict_or_error(r);
        if (!r->has_value())
            return "nothing-claimable";
        return to_string((*r)->outcome);
    }

    std::string renew(const json& e)
    {
        auto r = store_->renew(e.at("task_id").get<std::string>(), e.at("runner_nid").get<std::string>(),
                               e.at("lease_seconds").get<std::uint32_t>());
        return r ? "granted" : conflict_or_error(r);
    }

    std::string mark_terminal(const json& e)
    {
        const std::string label = e.at("dedup_key").get<std::string>();
        auto it = labels_.find(label);
        if (it == labels_.end())
            return "error:unbound dedup_key label '" + label + "'";
        NodeResult result;
        result.task_id = it->second.first;
        result.node_id = e.at("node_id").get<std::string>();
        result.dedup_key = it->second.second;
        result.state = proto::NodeState::completed;
        result.attempts = 1;
        auto r = store_->record_node_result(result);
        if (!r)
            return "error:" + r.error().describe();
        return to_string(*r);
    }

    std::string is_terminal(const json& e)
    {
        auto r = store_->is_node_terminal(real_key(e.at("dedup_key").get<std::string>()),
                                          e.at("node_id").get<std::string>());
        if (!r)
            return "error:" + r.error().describe();
        return *r ? "terminal" : "pending";
    }

    TempDir dir_;
    std::unique_ptr<nps::test::PgScratchSchema> pg_schema_;
    nps::FakeClock clock_;
    std::unique_ptr<Store> store_;
    std::map<std::string, std::string> deposited_;                       // task_id → dedup_key
    std::map<std::string, std::pair<std::string, std::string>> labels_;  // label → (task_id, dedup_key)
};

std::string joined(const std::vector<std::string>& v)
{
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + v[i];
    return out + "]";
}

}  // namespace

int main()
{
    const char* dir = std::getenv("NPS_VECTORS_DIR");
    if (dir == nullptr || *dir == '\0') {
        std::cout << "SKIP: NPS_VECTORS_DIR is not set\n";
        return kSkip;
    }
    const std::filesystem::path file = std::filesystem::path(dir) / "nop" / "runtime_security_vectors.json";
    if (!std::filesystem::exists(file)) {
        std::cout << "SKIP: " << file.string() << " does not exist\n";
        return kSkip;
    }

    json doc;
    try {
        std::ifstream in(file);
        doc = json::parse(in);
    } catch (const std::exception& e) {
        std::cout << "FAIL: cannot parse " << file.string() << ": " << e.what() << "\n";
        return 1;
    }
    std::cout << "vectors: " << file.string() << " (" << doc.value("name", "?") << " " << doc.value("version", "?")
              << ")\n";

    int run = 0, failed = 0;
    for (const auto& vector : doc.at("vectors")) {
        if (vector.value("category", "") != "lease")
            continue;
        ++run;
        const std::string id = vector.value("id", "?");
        std::vector<std::string> got, expected;
        try {
            for (const auto& o : vector.at("expected").at("outcomes"))
                expected.push_back(o.get<std::string>());
            VectorRun runner;
            for (const auto& event : vector.at("input").at("events"))
                got.push_back(runner.apply(event));
        } catch (const std::exception& e) {
            got.push_back(std::string("exception: ") + e.what());
        }
        if (got == expected) {
            std::cout << "PASS " << id << " " << joined(got) << "\n";
        } else {
            ++failed;
            std::cout << "FAIL " << id << "\n  expected " << joined(expected) << "\n  got      " << joined(got)
                      << "\n";
        }
    }
    if (run == 0) {
        std::cout << "FAIL: " << file.string() << " has no vectors of category 'lease'\n";
        return 1;
    }
    std::cout << run - failed << " passed, " << failed << " failed\n";
    return failed == 0 ? 0 : 1;
}
