// SPDX-License-Identifier: Apache-2.0
#include "report_fixture.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "nps/base/digest.hpp"

extern char** environ;

namespace report_test {

namespace {

std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void spit(const std::string& path, const std::string& text)
{
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error("cannot rename " + tmp);
}

std::int64_t wall_ms()
{
    return nps::SystemClock::instance().now_ms();
}

}  // namespace

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pred();
}

// --- TaskStoreServer ---------------------------------------------------------------

TaskStoreServer::TaskStoreServer()
{
    set_answer(nullptr);
    up();
}

TaskStoreServer::~TaskStoreServer()
{
    down();
}

void TaskStoreServer::set_answer(Answer answer)
{
    std::lock_guard lock(mutex_);
    answer_ = answer ? std::move(answer) : [](const Received&, std::size_t) {
        nps::net::HttpResponse response;
        response.body = R"({"outcome":"recorded"})";
        return response;
    };
}

void TaskStoreServer::up()
{
    nps::net::HttpServerOptions options;
    options.tcp_listen = "127.0.0.1:" + std::to_string(port_);
    auto server = nps::net::HttpServer::start(options, [this](const auto& request) { return handle(request); });
    if (!server)
        throw std::runtime_error(server.error().describe());
    server_ = std::move(server).value();
    port_ = server_->tcp_port();
}

void TaskStoreServer::down()
{
    server_.reset();
}

std::string TaskStoreServer::url() const
{
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1/tasks";
}

std::vector<Received> TaskStoreServer::received() const
{
    std::lock_guard lock(mutex_);
    return received_;
}

nps::net::HttpResponse TaskStoreServer::handle(const nps::net::HttpRequest& request)
{
    Received r{.method = request.method, .path = request.path, .headers = request.headers, .body = request.body,
               .at_ms = wall_ms()};
    Answer answer;
    std::size_t index = 0;
    {
        std::lock_guard lock(mutex_);
        index = received_.size();
        received_.push_back(r);
        answer = answer_;
    }
    return answer(r, index);
}

// --- CallbackServer ----------------------------------------------------------------

CallbackServer::CallbackServer(const std::string& dir, const nps::test::TestPki& pki, const std::string& secret)
    : base_(dir + "/callback-" + std::to_string(wall_ms()))
{
    write_routes();
    std::vector<std::string> argv = {"python3", NPS_TEST_CALLBACK_SERVER, "--routes", base_ + ".routes",
                                     "--log", base_ + ".log", "--port-file", base_ + ".port",
                                     "--cert", pki.cert_file, "--key", pki.key_file};
    if (!secret.empty())
        argv.insert(argv.end(), {"--secret", secret});
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, (base_ + ".out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    std::vector<char*> args;
    for (auto& a : argv)
        args.push_back(a.data());
    args.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw std::runtime_error("cannot start callback_server.py");
    const bool started = wait_until([this] { return !slurp(base_ + ".port").empty(); }, std::chrono::seconds(20));
    if (!started)
        throw std::runtime_error("callback_server.py did not start:\n" + slurp(base_ + ".out"));
    port_ = static_cast<std::uint16_t>(std::stoi(slurp(base_ + ".port")));
}

CallbackServer::~CallbackServer()
{
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

std::string CallbackServer::url(const std::string& path, const std::string& host) const
{
    return "https://" + host + ":" + std::to_string(port_) + path;
}

void CallbackServer::route(const std::string& path, int status, const std::map<std::string, std::string>& headers)
{
    routes_[path] = {{"status", status}, {"headers", headers}};
    write_routes();
}

void CallbackServer::write_routes() const
{
    spit(base_ + ".routes", routes_.dump());
}

std::vector<Json> CallbackServer::requests() const
{
    std::vector<Json> out;
    std::istringstream lines(slurp(base_ + ".log"));
    std::string line;
    while (std::getline(lines, line))
        if (!line.empty())
            out.push_back(Json::parse(line));
    return out;
}

// --- Runner ----------------------------------------------------------------------

Runner::Runner()
{
    auto opened = nps::store::Store::open({.path = database()}, nps::SystemClock::instance());
    REQUIRE_MESSAGE(opened, (opened ? std::string() : opened.error().describe()));
    store = std::move(opened).value();
}

void Runner::deposit(const std::string& task_id, const std::string& frame_text, const std::string& dag_hash,
                     const std::string& dedup_key)
{
    std::string key = dedup_key;
    if (key.empty()) {
        std::string input = task_id;
        input.push_back('\0');
        input += dag_hash;
        key = nps::sha256_hex(input);
    }
    dedup_keys[task_id] = key;
    auto r = store->deposit({.nid = kInbox,
                             .task_id = task_id,
                             .payload = frame_text,
                             .content_type = "application/json",
                             .frame_hash = nps::sha256_hex(frame_text),
                             .dag_hash = dag_hash,
                             .dedup_key = key,
                             .ttl_seconds = 3600});
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().describe()));
}

std::string Runner::dedup_key(const std::string& task_id) const
{
    return dedup_keys.at(task_id);
}

void Runner::claim(const std::string& task_id)
{
    auto r = store->claim({.nid = kInbox, .runner_nid = kRunnerA, .lease_seconds = 600, .task_id = task_id});
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().describe()));
    claimed.insert(task_id);
}

void Runner::record(const std::string& task_id, const std::string& node_id, nps::proto::NodeState state,
                    std::optional<std::string> result, std::optional<std::string> error_code)
{
    nps::store::NodeResult n{.task_id = task_id,
                             .node_id = node_id,
                             .dedup_key = dedup_key(task_id),
                             .state = state,
                             .attempts = 1,
                             .error_code = std::move(error_code),
                             .result_json = std::move(result),
                             .runner_nid = std::string(kRunnerA),
                             .fence = claimed.count(task_id) ? nps::store::LeaseFence::runner_lease
                                                             : nps::store::LeaseFence::none};
    auto r = store->record_node_result(n);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().describe()));
}

void Runner::complete(const std::string& task_id, const std::string& state, std::optional<std::string> error_code)
{
    auto r = store->complete(task_id, kRunnerA, {.state = nps::proto::parse_task_state(state).value(), .error_code = std::move(error_code)});
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().describe()));
}

bool Runner::has_event(const std::string& task_id, const std::string& name)
{
    auto events = store->events(task_id);
    REQUIRE(events);
    for (const auto& e : *events)
        if (e.name == name)
            return true;
    return false;
}

nps::store::ReportCounts Runner::counts()
{
    auto c = store->report_counts();
    REQUIRE_MESSAGE(c, (c ? std::string() : c.error().describe()));
    return *c;
}

std::int64_t Runner::max_tries()
{
    SQLite::Database raw(database(), SQLite::OPEN_READONLY);
    SQLite::Statement st(raw, "SELECT coalesce(max(tries), 0) FROM report_outbox WHERE status = 'pending'");
    st.executeStep();
    return st.getColumn(0).getInt64();
}

LoopThread::LoopThread()
{
    auto loop = nps::event::EventLoop::create();
    REQUIRE_MESSAGE(loop, (loop ? std::string() : loop.error().describe()));
    loop_ = std::move(*loop);
    std::promise<pid_t> started;
    auto tid = started.get_future();
    thread_ = std::thread([this, &started] {
        started.set_value(::gettid());
        auto ran = loop_->run();
        if (!ran)
            std::fprintf(stderr, "test loop: %s\n", ran.error().describe().c_str());
    });
    tid_ = tid.get();
}

LoopThread::~LoopThread()
{
    loop_->post([this] { loop_->stop(); });
    thread_.join();
}

void LoopThread::call(const std::function<void()>& fn)
{
    std::promise<void> done;
    loop_->post([&] {
        fn();
        done.set_value();
    });
    done.get_future().get();
}

LoopDeliverer::LoopDeliverer(nps::report::DelivererOptions options)
{
    nps::Result<std::unique_ptr<nps::report::Deliverer>> started = nps::internal_error("not started");
    thread_.call([&] {
        started = nps::report::Deliverer::start(std::move(options), nps::SystemClock::instance(), thread_.loop());
    });
    REQUIRE_MESSAGE(started, (started ? std::string() : started.error().describe()));
    deliverer_ = std::move(*started);
}

LoopDeliverer::~LoopDeliverer()
{
    thread_.call([this] { deliverer_.reset(); });
}

void LoopDeliverer::stop()
{
    thread_.call([this] { deliverer_->stop(); });
}

std::size_t LoopDeliverer::in_flight()
{
    std::size_t n = 0;
    thread_.call([&] { n = deliverer_->in_flight(); });
    return n;
}

std::unique_ptr<LoopDeliverer> start_deliverer(nps::report::DelivererOptions options)
{
    return std::make_unique<LoopDeliverer>(std::move(options));
}

nps::report::DelivererOptions quick_options(const Runner& runner)
{
    nps::report::DelivererOptions options;
    options.store = {.path = runner.database(), .synchronous = nps::store::Synchronous::normal};
    options.owner_prefix = "report-test";
    options.timeout = std::chrono::seconds(10);
    options.retry_initial = std::chrono::milliseconds(20);
    options.retry_max = std::chrono::milliseconds(200);
    options.poll = std::chrono::milliseconds(100);
    return options;
}

std::string frame(const std::string& task_id, int nodes, const std::string& callback_url,
                  const std::string& callback_secret)
{
    Json node_list = Json::array();
    Json edges = Json::array();
    for (int i = 0; i < nodes; ++i) {
        Json node = {{"id", "n" + std::to_string(i)},
                     {"action", "nwp://example.test/step/invoke"},
                     {"agent", "urn:nps:agent:example.test:worker"}};
        if (i > 0) {
            node["input_from"] = {"n" + std::to_string(i - 1)};
            edges.push_back({{"from", "n" + std::to_string(i - 1)}, {"to", "n" + std::to_string(i)}});
        }
        node_list.push_back(node);
    }
    Json f = {{"task_id", task_id}, {"dag", {{"nodes", node_list}, {"edges", edges}}}};
    if (!callback_url.empty())
        f["callback_url"] = callback_url;
    if (!callback_secret.empty())
        f["callback_secret"] = callback_secret;
    return f.dump();
}

}  // namespace report_test
