// SPDX-License-Identifier: Apache-2.0
// Test support for the report suite: an in-process task store (our own
// HttpServer on loopback, which can go down and come back on the same port),
// a callback receiver (callback_server.py, HTTPS with the test CA, verifying
// signatures itself), a runner.db with deposited tasks, and waiting.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "https_fixture.hpp"
#include "nps/base/clock.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/net/http_server.hpp"
#include "nps/proto/states.hpp"
#include "nps/report/deliverer.hpp"
#include "nps/store/store.hpp"
#include "temp_dir.hpp"

namespace report_test {

using Json = nlohmann::json;
using nps::proto::NodeState;

// Polls pred every 10 ms until it holds or `limit` passes; returns pred().
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit = std::chrono::seconds(30));

struct Received {
    std::string method;
    std::string path;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
    std::int64_t at_ms = 0;  // wall clock on arrival
};

// A task store on 127.0.0.1: records every request, answers with answer()
// (default 200 {"outcome":"recorded"}).
class TaskStoreServer {
public:
    using Answer = std::function<nps::net::HttpResponse(const Received&, std::size_t index)>;
    TaskStoreServer();  // up, on a free port
    ~TaskStoreServer();

    void down();  // stops listening: connections are refused
    void up();    // listens again on the same port
    void set_answer(Answer answer);

    std::string url() const;  // "http://127.0.0.1:PORT/v1/tasks"
    std::vector<Received> received() const;

private:
    nps::net::HttpResponse handle(const nps::net::HttpRequest& request);

    mutable std::mutex mutex_;
    std::vector<Received> received_;
    Answer answer_;
    std::uint16_t port_ = 0;
    std::unique_ptr<nps::net::HttpServer> server_;
};

// callback_server.py as a child process; killed on destruction.
class CallbackServer {
public:
    CallbackServer(const std::string& dir, const nps::test::TestPki& pki, const std::string& secret);
    ~CallbackServer();
    CallbackServer(const CallbackServer&) = delete;
    CallbackServer& operator=(const CallbackServer&) = delete;

    std::string url(const std::string& path, const std::string& host = "127.0.0.1") const;
    // Routes take effect on the next request.
    void route(const std::string& path, int status, const std::map<std::string, std::string>& headers = {});
    std::vector<Json> requests() const;

private:
    void write_routes() const;

    std::string base_;
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
    Json routes_ = Json::object();
};

// A runner.db in a temp dir, a Store on it, and task helpers.
struct Runner {
    nps::test::TempDir dir{"nps-report"};
    std::unique_ptr<nps::store::Store> store;

    Runner();
    std::string database() const { return dir.file("runner.db"); }
    // Deposits `frame` (a TaskFrame JSON text) under the inbox NID with the
    // given dag_hash and dedup_key (as another runner's deposit computed them).
    void deposit(const std::string& task_id, const std::string& frame, const std::string& dag_hash = "dag",
                 const std::string& dedup_key = "");
    std::string dedup_key(const std::string& task_id) const;  // of a deposit made with the defaults
    // Claims the task (runner A) so results can be fenced and the task completed.
    void claim(const std::string& task_id);
    void record(const std::string& task_id, const std::string& node_id, nps::proto::NodeState state,
                std::optional<std::string> result = std::nullopt, std::optional<std::string> error_code = std::nullopt);
    void complete(const std::string& task_id, const std::string& state,
                  std::optional<std::string> error_code = std::nullopt);
    bool has_event(const std::string& task_id, const std::string& name);
    nps::store::ReportCounts counts();
    // The largest delivery try count of a pending row (0 when none failed yet).
    std::int64_t max_tries();

    std::map<std::string, std::string> dedup_keys;
    std::set<std::string> claimed;  // results of these are fenced on runner A's lease
};

inline constexpr const char* kInbox = "urn:nps:agent:example.test:worker";
inline constexpr const char* kRunnerA = "urn:nps:node:example.test:runner-a";

// An EventLoop running on a thread of its own: the test's stand-in for the
// daemon's loop thread, with a way to run code on it.
class LoopThread {
public:
    LoopThread();
    ~LoopThread();  // stops the loop and joins
    LoopThread(const LoopThread&) = delete;
    LoopThread& operator=(const LoopThread&) = delete;

    // Runs fn on the loop's thread and waits until it returned.
    void call(const std::function<void()>& fn);
    nps::event::EventLoop& loop() { return *loop_; }
    pid_t tid() const { return tid_; }  // the loop thread's id

private:
    std::unique_ptr<nps::event::EventLoop> loop_;
    std::thread thread_;
    pid_t tid_ = 0;
};

// A Deliverer on a LoopThread of its own, started and destroyed on it.
class LoopDeliverer {
public:
    explicit LoopDeliverer(nps::report::DelivererOptions options);  // REQUIREs a successful start
    ~LoopDeliverer();

    void notify() { deliverer_->notify(); }
    std::int64_t backlog() const { return deliverer_->backlog(); }
    std::int64_t dead() const { return deliverer_->dead(); }
    void stop();
    std::size_t in_flight();
    LoopThread& thread() { return thread_; }

private:
    LoopThread thread_;
    std::unique_ptr<nps::report::Deliverer> deliverer_;
};

std::unique_ptr<LoopDeliverer> start_deliverer(nps::report::DelivererOptions options);

// Options for a deliverer on `runner` with quick retries.
nps::report::DelivererOptions quick_options(const Runner& runner);

// A TaskFrame JSON text with `nodes` nodes n0…, optionally a callback.
std::string frame(const std::string& task_id, int nodes = 3, const std::string& callback_url = "",
                  const std::string& callback_secret = "");

}  // namespace report_test
