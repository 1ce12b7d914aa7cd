// SPDX-License-Identifier: Apache-2.0
// Shared by the store unit tests: a fresh temp dir with a real runner.db,
// a FakeClock, and helpers to build deposits. With NPS_TEST_PG_URL set
// (meson test unit-store-pg), the store is a PostgreSQL store in a fresh
// schema of that server instead, with the FakeClock as its clock; cases that
// test SQLite itself are in the doctest suite "sqlite", which that run leaves
// out (-tse=sqlite).
#pragma once

#include <doctest/doctest.h>

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <memory>
#include <string>

#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/store/store.hpp"
#include "pg_scratch.hpp"
#include "state_strings.hpp"
#include "temp_dir.hpp"

namespace store_test {

namespace proto = nps::proto;
using nps::proto::NodeState;
using nps::test::TempDir;

inline constexpr const char* kNid = "urn:nps:agent:example.com:inbox-a";
inline constexpr const char* kOtherNid = "urn:nps:agent:example.com:inbox-b";
inline constexpr const char* kRunnerA = "urn:nps:node:example.com:runner-a";
inline constexpr const char* kRunnerB = "urn:nps:node:example.com:runner-b";

inline std::string dedup_for(const std::string& task_id, const std::string& dag_hash)
{
    std::string input = task_id;
    input.push_back('\0');
    input += dag_hash;
    return nps::sha256_hex(input);
}

inline std::string frame_for(const std::string& task_id)
{
    return R"({"frame":"0x40","task_id":")" + task_id + R"(","dag":{"nodes":[{"id":"n1"}]}})";
}

inline nps::store::DepositRequest deposit_request(const std::string& task_id, int priority = 0,
                                                  std::int64_t ttl_seconds = 3600,
                                                  const std::string& nid = kNid)
{
    nps::store::DepositRequest r;
    r.nid = nid;
    r.task_id = task_id;
    r.payload = frame_for(task_id);
    r.content_type = "application/json";
    r.frame_hash = nps::sha256_hex(r.payload);
    r.dag_hash = nps::sha256_hex(R"({"nodes":[{"id":"n1"}]})");
    r.dedup_key = dedup_for(task_id, r.dag_hash);
    r.priority = priority;
    r.ttl_seconds = ttl_seconds;
    return r;
}

// The options that open the fixture's store: a runner.db in dir, or a fresh
// PostgreSQL schema when NPS_TEST_PG_URL is set.
struct StoreLocation {
    TempDir dir;
    std::unique_ptr<nps::test::PgScratchSchema> pg_schema;

    StoreLocation()
    {
        if (const std::string url = nps::test::pg_test_url(); !url.empty())
            pg_schema = std::make_unique<nps::test::PgScratchSchema>(url);
    }
    bool on_postgres() const { return pg_schema != nullptr; }
    nps::store::OpenOptions options()
    {
        if (pg_schema)
            return {.url = pg_schema->url(), .clock_source = nps::store::ClockSource::caller};
        return {.path = dir.file("runner.db")};
    }
};

struct StoreFixture {
    StoreLocation location;
    TempDir& dir = location.dir;
    nps::FakeClock clock;
    std::unique_ptr<nps::store::Store> store;

    StoreFixture() { reopen(); }

    void reopen()
    {
        store.reset();
        auto opened = nps::store::Store::open(location.options(), clock);
        REQUIRE_MESSAGE(opened, (opened ? std::string() : opened.error().describe()));
        store = std::move(opened).value();
    }

    nps::store::Message deposit(const std::string& task_id, int priority = 0, std::int64_t ttl_seconds = 3600,
                                const std::string& nid = kNid)
    {
        auto r = store->deposit(deposit_request(task_id, priority, ttl_seconds, nid));
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().describe()));
        return r->message;
    }

    // Head claim that must succeed.
    nps::store::Lease claim_head(const std::string& runner, std::uint32_t lease_seconds = 30,
                                 const std::string& nid = kNid)
    {
        auto r = store->claim({.nid = nid, .runner_nid = runner, .lease_seconds = lease_seconds});
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().describe()));
        REQUIRE(r->has_value());
        return **r;
    }

    nps::Result<std::optional<nps::store::Lease>> claim_task(const std::string& task_id, const std::string& runner,
                                                              std::uint32_t lease_seconds = 30)
    {
        return store->claim(
            {.nid = kNid, .runner_nid = runner, .lease_seconds = lease_seconds, .task_id = task_id});
    }
};

template <class T>
std::string error_code_of(const nps::Result<T>& r)
{
    return r ? std::string("<ok>") : r.error().code;
}

inline nps::store::TaskOutcome completed()
{
    return {.state = nps::proto::TaskState::completed, .aggregate_json = R"({"n1":{"ok":true}})"};
}

}  // namespace store_test
