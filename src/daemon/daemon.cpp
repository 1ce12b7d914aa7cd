// SPDX-License-Identifier: Apache-2.0
#include "nps/daemon/daemon.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "nps/api/api.hpp"
#include "nps/base/clock.hpp"
#include "nps/base/log.hpp"
#include "nps/base/prometheus_text.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/mode.hpp"
#include "nps/config/reload.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/event/job_pool.hpp"
#include "nps/executor/executor.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/summary_json.hpp"
#include "nps/net/http_server.hpp"
#include "nps/net/loop_server.hpp"
#include "nps/report/deliverer.hpp"
#include "nps/sandbox/spawn_server.hpp"
#include "nps/store/deposit_signal.hpp"
#include "nps/store/startup_check.hpp"
#include "nps/store/store_pool.hpp"
#include "access.hpp"
#include "retention_sweeper.hpp"
#include "upstream_inbox.hpp"

namespace nps::daemon {

namespace {

constexpr int kHousekeepingIntervalMs = 1000;
// Threads for API requests that may block on the network (POST
// /v1/spawnspecs/resolve); the rest of the API runs on the loop.
constexpr std::size_t kApiJobThreads = 2;

Result<void> ensure_state_dir(const std::string& dir)
{
    NPS_TRY_VOID(secure_state_dir(dir));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return system_error_errno("State directory '" + dir + "' is not writable");
    return {};
}

// With api.require_token and no token configured, the TCP listener's token
// is the one in <state_dir>/api.token, generated at the first start.
// `announce` logs where it came from (at start; a SIGHUP stays quiet).
Result<void> take_generated_token(config::Config& config, bool require_token, std::optional<gid_t> group,
                                  bool announce)
{
    if (config.token || !require_token)
        return {};
    const std::string path = config.generated_token_path();
    auto generated = NPS_TRY(ensure_generated_token(path, group));
    config.token = std::move(generated.token);
    if (announce)
        log::info(std::string(generated.created ? "api: generated the bearer token " : "api: bearer token from ") +
                  path + (group ? std::string(" (group ") + config::kRunnerGroup + ")"
                                : std::string(" (no group ") + config::kRunnerGroup + ": root only)"));
    return {};
}

// The deposit listener of a shared store, for /metrics (docs/scale-out.md
// "Connections").
std::string deposit_signal_metrics(const store::DepositSignal& signal)
{
    using prometheus::Type;
    std::string out;
    prometheus::metric(out, "nps_store_listener_connected", Type::gauge,
                       "1 while the LISTEN connection that wakes claims on other hosts' deposits is up, else 0.",
                       signal.healthy() ? 1 : 0);
    prometheus::metric(out, "nps_store_notifications_received_total", Type::counter,
                       "Deposit notifications (NOTIFY) received from the store.", signal.received());
    return out;
}

Result<void> check_listen_policy(const config::Config& config)
{
    if (config.listen.empty())
        return {};
    auto address = NPS_TRY(net::parse_listen_address(config.listen));
    if (!net::is_loopback_host(address.first) && !config.token)
        return internal_error("Refusing to listen on non-loopback address '" + config.listen +
                              "' without a bearer token: set api.token or api.token_file in the config "
                              "(the token generated into the state directory serves loopback only)");
    return {};
}

// Tells systemd (Type=notify) that we are ready, if it asked.
// The watchdog interval systemd asks for (WATCHDOG_USEC, for this process
// when WATCHDOG_PID names it), halved as sd_watchdog_enabled(3) advises;
// nullopt when there is none.
std::optional<std::chrono::milliseconds> watchdog_interval()
{
    const char* usec = std::getenv("WATCHDOG_USEC");
    if (!usec)
        return std::nullopt;
    if (const char* pid = std::getenv("WATCHDOG_PID"); pid && std::strtol(pid, nullptr, 10) != ::getpid())
        return std::nullopt;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(usec, &end, 10);
    if (*usec == '\0' || *end != '\0' || value == 0)
        return std::nullopt;
    return std::chrono::milliseconds(std::max<unsigned long long>(value / 2000, 1));
}

void notify_systemd(const char* state)
{
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (!path || (path[0] != '/' && path[0] != '@'))
        return;
    UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd)
        return;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::size_t len = std::strlen(path);
    if (len >= sizeof addr.sun_path)
        return;
    std::memcpy(addr.sun_path, path, len);
    if (addr.sun_path[0] == '@')
        addr.sun_path[0] = '\0';
    ::sendto(fd.get(), state, std::strlen(state), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
             static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
}

// Detects the cgroup layout and prepares the base for worker cgroups. A host
// without usable cgroups still serves the API; the facts say why, and a
// worker that asks for a limit is refused (unless the operator allowed
// unenforced limits).
api::HostFacts prepare_worker_cgroups(std::optional<cgroup::CgroupBase>& base)
{
    api::HostFacts facts;
    auto layout = cgroup::detect_cgroup_layout();
    auto prepared = layout ? cgroup::prepare_cgroup_base(*layout) : Result<cgroup::CgroupBase>(layout.error());
    if (layout)
        facts.cgroup_mode = std::string(cgroup::to_string(layout->mode));
    if (!prepared) {
        facts.cgroup_problem = prepared.error().describe();
        log::warning("cgroups: " + facts.cgroup_mode + ", unusable for workers: " + facts.cgroup_problem);
        for (const char* controller : {"memory", "cpu", "pids"})
            facts.limits_enforced_by.emplace_back(controller, "");
        return facts;
    }
    base = std::move(*prepared);
    for (const char* controller : {"memory", "cpu", "pids"})
        facts.limits_enforced_by.emplace_back(controller, std::string(base->enforced_by(controller)));
    log::info("cgroups: " + base->summary());
    std::vector<std::string> slow;  // v1 hierarchies workers are moved into, without favordynmods
    for (const auto& used : base->v1) {
        const auto* h = layout->v1_for(used.controllers.front());
        if (h && !h->favordynmods)
            slow.push_back(h->mount_point);
    }
    if (!slow.empty())
        log::notice("cgroups: each worker's move into " + std::to_string(slow.size()) +
                    " v1 hierarchies waits for an RCU grace period (several ms); remounting them with "
                    "'favordynmods' (Linux 6.0+, e.g. mount -o remount,favordynmods " + slow.front() +
                    ") removes that wait — docs/cgroups.md");
    return facts;
}

// SIGHUP: loads the configuration again and takes its reloadable keys. A
// file that does not load changes nothing.
void reload_config(config::Config& running, const ConfigLoader& load, executor::Executor& executor, std::optional<gid_t> group)
{
    if (!load) {
        log::notice("SIGHUP: this daemon was started without a configuration loader; nothing to reload");
        return;
    }
    auto fresh = load();
    if (!fresh) {
        log::error("SIGHUP: configuration not reloaded, the running one stays in effect: " + fresh.error().describe());
        return;
    }
    // api.require_token needs a restart: the running value decides whether
    // the generated token stands in for a token the file does not set.
    if (auto taken = take_generated_token(*fresh, running.require_token, group, false); !taken) {
        log::error("SIGHUP: configuration not reloaded, the running one stays in effect: " + taken.error().describe());
        return;
    }
    auto outcome = config::apply_reload(running, *fresh);
    auto join = [](const std::vector<std::string>& keys) {
        std::string text;
        for (const auto& key : keys)
            text += (text.empty() ? "" : ", ") + key;
        return text;
    };
    if (!outcome.need_restart.empty())
        log::warning("SIGHUP: changed but not reloadable, kept until a restart: " + join(outcome.need_restart));
    if (outcome.applied.empty()) {
        log::info("SIGHUP: configuration reloaded, no reloadable key changed");
        return;
    }
    log::set_format(running.log_json ? log::Format::json : log::Format::text);
    executor.policy_changed(running.executor, running.workers);
    log::info("SIGHUP: configuration reloaded, now in effect: " + join(outcome.applied));
}

}  // namespace

executor::ExecutorOptions executor_options(const config::Config& config)
{
    return {
        .state_dir = config.state_dir,
        .runner_nid = config.runner_nid,
        .inboxes = config.inboxes,
        .claims = config.executor,
        .workers = config.workers,
        .allow_unenforced_limits = config.allow_unenforced_limits,
        .seccomp_allow = config.seccomp_allow,
        .user_namespace = config.user_namespace,
        .userns_first_host_id = static_cast<std::uint32_t>(config.userns_first_host_id),
        .userns_id_count = static_cast<std::uint32_t>(config.userns_id_count),
        .registries = config.registries,
        .resolver = config.spawn,
    };
}

report::DelivererOptions deliverer_options(const config::Config& config)
{
    const config::ReportPolicy& r = config.report;
    return {
        .store = config.store_options(config.synchronous),
        .owner_prefix = config.runner_nid.empty() ? std::string("nps-runner") : config.runner_nid,
        .task_store_url = r.task_store_url,
        .task_store_token = r.task_store_token,
        .npsd_url = r.npsd_url,
        .npsd_token = r.npsd_token,
        .ca_file = r.ca_file,
        .timeout = std::chrono::seconds(r.timeout_seconds),
        .retry_initial = std::chrono::milliseconds(r.retry_initial_ms),
        .retry_max = std::chrono::milliseconds(r.retry_max_ms),
        .max_age = std::chrono::seconds(r.max_age_seconds),
        .callback_allow = r.callback_allow_destinations,
    };
}

Result<void> run(config::Config config, ConfigLoader reload)
{
    // A non-loopback listener needs a token the operator configured (and
    // hands to remote clients); the generated one serves loopback.
    NPS_TRY_VOID(check_listen_policy(config));
    NPS_TRY_VOID(ensure_state_dir(config.state_dir));
    NPS_TRY_VOID(store::check_store_at_start(config.database_path(), config.state_dir));
    const std::optional<gid_t> group = runner_group();
    NPS_TRY_VOID(take_generated_token(config, config.require_token, group, true));

    // Signals are blocked (and routed to the loop) before any thread starts,
    // so every thread inherits the mask.
    auto loop = NPS_TRY(event::EventLoop::create());
    std::function<void(int)> on_signal;
    NPS_TRY_VOID(loop->watch_signals({SIGTERM, SIGINT, SIGHUP}, [&on_signal](const signalfd_siginfo& info) {
        on_signal(static_cast<int>(info.ssi_signo));
    }));

    const Clock& clock = SystemClock::instance();
    const store::OpenOptions store_options = config.store_options(config.synchronous);
    // The executor's progress (claims, node states, events) on its own
    // connection: docs/executor.md "Durability".
    auto loop_store = NPS_TRY(store::Store::open(config.store_options(config.progress_synchronous), clock));
    store::StorePool pool(store_options, clock);
    std::optional<cgroup::CgroupBase> cgroup_base;
    api::Api api(config, pool, clock, *loop, prepare_worker_cgroups(cgroup_base));
    // Workers are cloned by a copy of the daemon made now, while it is small:
    // before its threads and heap exist (sandbox/spawn_server.hpp), and once
    // the daemon has moved into its own cgroup (on pure v2 no process may
    // stay behind in the group whose controllers it delegates).
    std::optional<sandbox::SpawnServer> spawn_server;
    if (config.workers.spawn_server) {
        if (auto started = sandbox::SpawnServer::start())
            spawn_server = std::move(*started);
        else
            log::warning("workers: " + started.error().describe() + "; workers are cloned from the daemon itself");
    }

    // The report outbox's deliverer (docs/reporting.md): node states to the
    // task store, task callbacks, completion messages (long-polls on our own
    // inbox of a reply_to NID are woken); told whenever the executor records.
    auto report_options = deliverer_options(config);
    report_options.notice_deposited = [&api](const std::string& nid) { api.wake_waiters(nid); };
    auto deliverer = NPS_TRY(report::Deliverer::start(std::move(report_options), clock, *loop));
    auto executor = NPS_TRY(executor::Executor::create({.options = executor_options(config),
                                              .clock = clock,
                                              .loop = *loop,
                                              .store = *loop_store,
                                              .stores = pool,
                                              .cgroups = cgroup_base ? &*cgroup_base : nullptr,
                                              .spawn_server = spawn_server ? &*spawn_server : nullptr,
                                              .recorded = [&deliverer, &api] {
                                                  deliverer->notify();
                                                  api.recorded();
                                              }}));
    // A shared (PostgreSQL) store: deposits through other hosts wake our
    // claims too (docs/scale-out.md); none for runner.db, nor with
    // [store] notify = false (a pooler in transaction mode: polling only).
    std::unique_ptr<store::DepositSignal> deposit_signal;
    if (config.store_notify)
        deposit_signal =
            NPS_TRY(store::DepositSignal::open(store_options, *loop, [&executor] { executor->wake(); }));
    // The HTTP server runs on the loop (docs/api.md "Threading"); blocking
    // routes go to api_jobs and answer back on the loop.
    auto api_jobs = NPS_TRY(event::JobPool::create(*loop, kApiJobThreads, "nps-api-jobs"));
    api.set_hooks({.deposited =
                       [&executor, &deposit_signal] {
                           executor->wake();
                           if (deposit_signal)
                               deposit_signal->deposited();
                       },
                   .cancelled = [&executor](const std::string& task_id) { executor->cancelled(task_id); },
                   .metrics =
                       [&executor, &deposit_signal] {
                           return executor->render_metrics() +
                                  (deposit_signal ? deposit_signal_metrics(*deposit_signal) : std::string());
                       },
                   .executor = [&executor] { return executor->status(); },
                   .not_ready = [&executor] { return executor->not_ready_reason(); },
                   .workers = [&executor] { return executor->workers(); },
                   .images = [&config]() -> Result<nlohmann::json> {
                       auto images = NPS_TRY(image::ImageStore::open({.state_dir = config.state_dir}));
                       nlohmann::json list = nlohmann::json::array();
                       for (const auto& i : NPS_TRY(images->list()))
                           list.push_back(image::summary_json(i));
                       return list;
                   },
                   .running_log = [&executor](const std::string& task_id,
                                              const std::string& node_id) {
                       return executor->running_log_dir(task_id, node_id);
                   },
                   .offload = [&api_jobs](std::function<void()> work, std::function<void()> done) {
                       api_jobs->submit(std::move(work), std::move(done));
                   }});

    net::HttpServerOptions http_options;
    if (!config.listen.empty())
        http_options.tcp_listen = config.listen;
    if (!config.socket.empty())
        http_options.unix_socket = config.socket;
    http_options.unix_socket_mode = config.socket_mode;
    http_options.unix_socket_group = group;
    if (!http_options.tcp_listen && !http_options.unix_socket)
        return internal_error("Nothing to listen on: both api.listen and api.socket are empty");
    auto server = NPS_TRY(net::LoopServer::attach(
        *loop, NPS_TRY(net::LoopHttpServer::start(http_options, [&api](const net::HttpRequest& r, net::Responder respond) {
            api.handle(r, std::move(respond));
        }))));

    log::info("store " + (config.store_url.empty() ? config.database_path() : store::redact_store_url(config.store_url)) + " (schema " + std::to_string(loop_store->schema_version()) + ")");
    if (http_options.tcp_listen) {
        auto address = NPS_TRY(net::parse_listen_address(config.listen));
        std::string host = address.first.find(':') != std::string::npos ? "[" + address.first + "]" : address.first;
        const std::string port = std::to_string(server->server().tcp_port());
        log::info("listening on http://" + host + ":" + port);
        // Login URLs name a loopback address when the listener takes any.
        const std::string login_host = address.first == "0.0.0.0" ? "127.0.0.1" : address.first == "::" ? "[::1]" : host;
        api.set_dashboard_origin("http://" + login_host + ":" + port);
    }
    if (http_options.unix_socket)
        log::info("listening on unix:" + *http_options.unix_socket);

    on_signal = [&](int signo) {
        if (signo == SIGHUP) {
            notify_systemd("RELOADING=1");
            reload_config(config, reload, *executor, group);
            notify_systemd("READY=1");
            return;
        }
        log::info(std::string("received ") + strsignal(signo) + ", shutting down");
        notify_systemd("STOPPING=1");
        api.begin_shutdown();
        executor->begin_shutdown([&loop] { loop->stop(); });
    };

    std::function<void()> housekeeping = [&] {
        auto swept = loop_store->sweep_expired();
        if (!swept)
            log::warning("housekeeping: " + swept.error().describe());
        else if (*swept > 0) {
            api.metrics().expired_swept += static_cast<std::uint64_t>(*swept);
            log::notice(std::to_string(*swept) + " inbox message(s) expired before their first claim");
        }
        loop->add_timer_after(std::chrono::milliseconds(kHousekeepingIntervalMs), housekeeping);
    };
    loop->add_timer_after(std::chrono::milliseconds(kHousekeepingIntervalMs), housekeeping);

    // systemd's watchdog is fed from the loop, so a stuck loop stops the
    // pings; each ping carries the one-line STATUS= systemctl status shows.
    std::function<void()> watchdog;
    if (const auto interval = watchdog_interval()) {
        watchdog = [&, interval = *interval] {
            const std::string status = "WATCHDOG=1\nSTATUS=" + std::to_string(executor->running_tasks()) +
                                       " task(s) running, " + std::to_string(executor->supervisor().running()) +
                                       " worker(s), " + std::to_string(executor->supervisor().queued()) + " queued";
            notify_systemd(status.c_str());
            loop->add_timer_after(interval, watchdog);
        };
        loop->add_timer_after(std::chrono::milliseconds(0), watchdog);
    }

    RetentionSweeper retention(config.task_retention_seconds, pool, clock);
    executor->start();
    // TaskFrames of a remote npsd inbox into ours (docs/upstream.md); stops
    // before the executor and the store pool it deposits through.
    std::unique_ptr<UpstreamInbox> upstream;
    if (config.upstream.npsd_url)
        upstream = NPS_TRY(UpstreamInbox::start(config, pool, [&executor] { executor->wake(); }));
    log::info("ready, runner " + config.runner_nid);
    notify_systemd("READY=1");
    NPS_TRY_VOID(loop->run());
    log::info("stopped");
    return {};
}

}  // namespace nps::daemon
