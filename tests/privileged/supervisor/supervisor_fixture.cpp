// SPDX-License-Identifier: Apache-2.0
#include "supervisor_fixture.hpp"

#include <dirent.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "../sandbox_rootfs.hpp"
#include "nps/cgroup/mode.hpp"
#include "parked_child.hpp"

namespace nps::test {

using namespace nps::supervisor;

const cgroup::CgroupBase* host_cgroup_base()
{
    static const std::optional<cgroup::CgroupBase> base = []() -> std::optional<cgroup::CgroupBase> {
        auto layout = cgroup::detect_cgroup_layout();
        if (!layout || layout->mode == cgroup::CgroupMode::none)
            return std::nullopt;
        auto prepared = cgroup::prepare_cgroup_base(*layout);
        if (!prepared) {
            MESSAGE("cgroups present but unusable: " << prepared.error().describe());
            return std::nullopt;
        }
        return *prepared;
    }();
    return base ? &*base : nullptr;
}

nlohmann::json test_delegate_frame(const std::string& node_id)
{
    return nlohmann::json::parse(R"({"frame":"0x41","parent_task_id":"task-1","subtask_id":"3f1c2a4e-0000-4000-8000-000000000001",)"
           R"("node_id":")" + node_id + R"(","target_agent_nid":"urn:nps:agent:test:worker",)"
           R"("action":"nwp://test/act","params":{"x":2},)"
           R"("delegated_scope":{"nodes":[")" + node_id + R"("],"actions":["nwp://test/act"],"max_token_budget":10},)"
           R"("deadline_at":"2030-01-01T00:00:00Z","idempotency_key":"idem-1"})");
}

WorkerSpec sh_worker(const std::string& script)
{
    WorkerSpec spec;
    spec.sandbox = {.rootfs = busybox_rootfs(), .argv = {"/bin/sh", "-c", script}, .env = {"PATH=/bin"}};
    spec.delegate_frame = test_delegate_frame();
    return spec;
}

Harness::Harness(Cgroups cgroups, const std::function<void(SupervisorOptions&)>& tweak)
{
    static int counter = 0;
    prefix_ = "t" + std::to_string(::getpid()) + "x" + std::to_string(++counter);
    if (cgroups == Cgroups::host) {
        base_ = host_cgroup_base();
        if (!base_) {
            MESSAGE("no cgroups on this host: the cgroup variant is skipped");
            return;
        }
    }
    auto loop = nps::event::EventLoop::create();
    REQUIRE_MESSAGE(loop, (loop ? "" : loop.error().describe()));
    loop_ = std::move(*loop);
    SupervisorOptions options;
    options.log_root = logs_.path();
    options.cgroup_base = base_;
    options.name_prefix = prefix_;
    options.stop_grace = std::chrono::milliseconds(200);
    if (tweak)
        tweak(options);
    auto made = Supervisor::create(*loop_, options);
    REQUIRE_MESSAGE(made, (made ? "" : made.error().describe()));
    supervisor_ = std::move(*made);
}

Harness::~Harness()
{
    supervisor_.reset();
}

WorkerId Harness::start(WorkerSpec spec, std::optional<WorkerId> held)
{
    WorkerCallbacks callbacks;
    callbacks.on_outcome = [this](const WorkerOutcome& outcome) {
        outcomes_[outcome.id] = outcome;
        if (on_outcome)
            on_outcome(outcome);
    };
    callbacks.on_progress = [this](WorkerId id, std::uint64_t seq, const std::string&) {
        progress.emplace_back(id, seq);
        if (on_progress)
            on_progress(id, seq);
    };
    auto id = held ? supervisor_->start(std::move(spec), std::move(callbacks), *held)
                   : supervisor_->start(std::move(spec), std::move(callbacks));
    REQUIRE_MESSAGE(id, (id ? "" : id.error().describe()));
    return *id;
}

bool Harness::run_until(const std::function<bool()>& done, std::chrono::seconds limit)
{
    const auto deadline = nps::event::EventLoop::now() + limit;
    while (!done()) {
        if (nps::event::EventLoop::now() > deadline)
            return false;
        auto ran = loop_->run_once(std::chrono::milliseconds(100));
        REQUIRE_MESSAGE(ran, (ran ? "" : ran.error().describe()));
    }
    return true;
}

WorkerOutcome Harness::wait(WorkerId id, std::chrono::seconds limit)
{
    REQUIRE_MESSAGE(run_until([&] { return outcomes_.count(id) > 0; }, limit),
                    "no outcome for worker " << id << " within " << limit.count() << " s");
    return outcomes_.at(id);
}

std::vector<std::string> Harness::all_cgroups() const
{
    std::vector<std::string> found;
    if (!base_)
        return found;
    std::vector<std::string> dirs;
    if (!base_->unified_dir.empty())
        dirs.push_back(base_->unified_dir);
    for (const auto& v1 : base_->v1)
        dirs.push_back(v1.dir);
    for (const auto& dir : dirs) {
        DIR* d = ::opendir(dir.c_str());
        if (!d)
            continue;
        while (dirent* e = ::readdir(d)) {
            if (std::string(e->d_name).rfind(prefix_ + "-", 0) == 0)
                found.push_back(dir + "/" + e->d_name);
        }
        ::closedir(d);
    }
    return found;
}

std::vector<std::string> Harness::leftover_cgroups() const
{
    // A slot the refill thread is making has no parked child yet: let the
    // pool fill up first (bounded: a pool failing to refill must not hang).
    if (supervisor_) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (supervisor_->spawn_stats().pool_ready < supervisor_->spawn_stats().pool_size &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::vector<std::string> found;
    for (auto& dir : all_cgroups())
        if (!is_parked_slot(dir))
            found.push_back(dir);
    return found;
}

std::vector<std::string> Harness::parked_slots() const
{
    std::vector<std::string> found;
    for (auto& dir : all_cgroups())
        if (is_parked_slot(dir))
            found.push_back(dir);
    return found;
}

bool Harness::wait_parked(std::size_t count)
{
    return run_until([&] { return supervisor_->spawn_stats().pool_ready >= count; });
}

bool is_parked_slot(const std::string& dir)
{
    const std::string name = dir.substr(dir.rfind('/') + 1);
    const auto dash = name.rfind('-');
    if (dash == std::string::npos || dash + 2 >= name.size() || name[dash + 1] != 'p')
        return false;
    const auto pids = cgroup_procs(dir);
    if (pids.empty())
        return false;
    for (pid_t pid : pids)
        if (!is_parked_child(pid, "/proc/self/exe"))
            return false;
    return true;
}

bool process_running(const std::string& needle)
{
    DIR* proc = ::opendir("/proc");
    if (!proc)
        return false;
    bool found = false;
    while (dirent* e = ::readdir(proc)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        std::string cmdline = slurp(std::string("/proc/") + e->d_name + "/cmdline");
        for (char& c : cmdline)
            if (c == '\0')
                c = ' ';
        if (cmdline.find(needle) != std::string::npos) {
            // A zombie still has its cmdline empty; a live match is what counts.
            found = true;
            break;
        }
    }
    ::closedir(proc);
    return found;
}

std::size_t rss_bytes()
{
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stoul(line.substr(6)) * 1024;
    }
    return 0;
}

std::string slurp(const std::string& path)
{
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

}  // namespace nps::test
