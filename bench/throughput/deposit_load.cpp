// SPDX-License-Identifier: Apache-2.0
// deposit-load: the load generator of bench/throughput (bench_throughput.py
// runs it; it is not a benchmark on its own).
//
//   deposit-load http URL TOKEN INBOX AGENT PREFIX TASKS CLIENTS
//       TASKS deposits of a one-node TaskFrame (task ids PREFIX-0 …, node
//       agent AGENT) POSTed to URL/v1/inbox/INBOX by CLIENTS threads, each on
//       its own kept-alive connection (libcurl), as fast as answers come.
//       INBOX may list several NIDs, comma-separated: client c deposits into
//       the (c mod n)-th.
//   deposit-load store DB TASKS
//       the peer without HTTP or group commit: the same deposits through
//       Store::deposit in one thread on the runner.db DB (synchronous=FULL,
//       a transaction and an fsync each).
//
// Prints one JSON object: {"seconds", "per_second", "statuses": {code: n},
// "latency_ms": {"p50", "p90", "p99", "max"}}; "first_error" holds the body
// of the first answer that was not 201.
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/store/store.hpp"

namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what)
{
    std::cerr << "deposit-load: " << what << "\n";
    std::exit(1);
}

std::string frame(const std::string& task_id, const std::string& agent)
{
    return Json{{"task_id", task_id},
                {"dag",
                 {{"nodes", Json::array({{{"id", "fetch"}, {"action", "nwp://bench.local/fetch"}, {"agent", agent}}})},
                  {"edges", Json::array()}}}}
        .dump();
}

double ms_between(SteadyClock::time_point a, SteadyClock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Tally {
    std::mutex mutex;
    std::map<long, int> statuses;
    std::vector<double> latencies_ms;
    std::string first_error;

    void add(long status, double ms, const std::string& body)
    {
        std::lock_guard lock(mutex);
        ++statuses[status];
        latencies_ms.push_back(ms);
        if (status != 201 && first_error.empty())
            first_error = body.substr(0, 400);
    }
};

Json report(Tally& tally, double seconds, std::size_t tasks)
{
    auto& l = tally.latencies_ms;
    std::sort(l.begin(), l.end());
    auto pct = [&](double p) { return l.empty() ? 0.0 : l[std::min(l.size() - 1, std::size_t(p / 100 * l.size()))]; };
    Json statuses = Json::object();
    for (const auto& [code, n] : tally.statuses)
        statuses[std::to_string(code)] = n;
    Json out{{"seconds", seconds},
             {"per_second", double(tasks) / seconds},
             {"statuses", statuses},
             {"latency_ms", {{"p50", pct(50)}, {"p90", pct(90)}, {"p99", pct(99)}, {"max", l.empty() ? 0 : l.back()}}}};
    if (!tally.first_error.empty())
        out["first_error"] = tally.first_error;
    return out;
}

std::size_t keep_body(char* data, std::size_t size, std::size_t n, void* out)
{
    static_cast<std::string*>(out)->append(data, size * n);
    return size * n;
}

int run_http(const std::string& url, const std::string& token, const std::string& inbox, const std::string& agent,
             const std::string& prefix, std::size_t tasks, std::size_t clients)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    std::vector<std::string> bodies;
    bodies.reserve(tasks);
    for (std::size_t i = 0; i < tasks; ++i)
        bodies.push_back(frame(prefix + "-" + std::to_string(i), agent));
    std::vector<std::string> targets;
    for (std::size_t at = 0; at <= inbox.size();) {
        const std::size_t comma = std::min(inbox.find(',', at), inbox.size());
        targets.push_back(url + "/v1/inbox/" + inbox.substr(at, comma - at));
        at = comma + 1;
    }
    const std::string auth = "Authorization: Bearer " + token;

    Tally tally;
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    const auto start = SteadyClock::now();
    std::vector<std::thread> threads;
    for (std::size_t c = 0; c < clients; ++c)
        threads.emplace_back([&, target = targets[c % targets.size()]] {
            CURL* curl = curl_easy_init();
            curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
            headers = curl_slist_append(headers, auth.c_str());
            headers = curl_slist_append(headers, "Expect:");
            std::string answer;
            curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
            curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
            curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_body);
            curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
            curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
            curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
            for (std::size_t i; (i = next.fetch_add(1)) < tasks;) {
                answer.clear();
                curl_easy_setopt(curl, CURLOPT_POSTFIELDS, bodies[i].c_str());
                curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, long(bodies[i].size()));
                const auto t0 = SteadyClock::now();
                const CURLcode rc = curl_easy_perform(curl);
                long status = 0;
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
                if (rc != CURLE_OK) {
                    status = -1;
                    answer = curl_easy_strerror(rc);
                    failed = true;
                }
                tally.add(status, ms_between(t0, SteadyClock::now()), answer);
            }
            curl_slist_free_all(headers);
            curl_easy_cleanup(curl);
        });
    for (auto& t : threads)
        t.join();
    const double seconds = ms_between(start, SteadyClock::now()) / 1000;
    std::cout << report(tally, seconds, tasks).dump() << "\n";
    return failed ? 1 : 0;
}

int run_store(const std::string& path, std::size_t tasks)
{
    nps::SystemClock clock;
    auto opened = nps::store::Store::open({.path = path}, clock);
    if (!opened)
        die(opened.error().describe());
    auto& store = **opened;
    Tally tally;
    const auto start = SteadyClock::now();
    for (std::size_t i = 0; i < tasks; ++i) {
        nps::store::DepositRequest r;
        r.nid = "urn:nps:agent:bench.local:store-peer";
        r.task_id = "store-" + std::to_string(i);
        r.payload = frame(r.task_id, "urn:nps:agent:bench.local:fetch");
        r.content_type = "application/json";
        r.frame_hash = nps::sha256_hex(r.payload);
        r.dag_hash = r.frame_hash;
        r.dedup_key = r.frame_hash;
        r.ttl_seconds = 3600;
        r.max_depth = 10'000'000;
        const auto t0 = SteadyClock::now();
        auto result = store.deposit(r);
        tally.add(result ? 201 : 500, ms_between(t0, SteadyClock::now()), result ? "" : result.error().describe());
    }
    std::cout << report(tally, ms_between(start, SteadyClock::now()) / 1000, tasks).dump() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 8 && args[0] == "http")
        return run_http(args[1], args[2], args[3], args[4], args[5], std::stoul(args[6]), std::stoul(args[7]));
    if (args.size() == 3 && args[0] == "store")
        return run_store(args[1], std::stoul(args[2]));
    die("usage: deposit-load http URL TOKEN INBOX AGENT PREFIX TASKS CLIENTS | deposit-load store DB TASKS");
}
