// SPDX-License-Identifier: Apache-2.0
// Test support for the supervisor suite: an EventLoop and a Supervisor over
// real sandboxed busybox workers, with or without per-worker cgroups.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/cgroup/delegation.hpp"
#include "nps/supervisor/supervisor.hpp"
#include "parked_child.hpp"  // cgroup_procs()
#include "temp_dir.hpp"

namespace nps::test {

enum class Cgroups { none, host };

// The host's cgroup base, prepared once; nullptr when this host has none.
const cgroup::CgroupBase* host_cgroup_base();

// A DelegateFrame for a test worker (task "task-1", node "n1", …).
nlohmann::json test_delegate_frame(const std::string& node_id = "n1");

// A worker running `/bin/sh -c script` in the busybox rootfs.
supervisor::WorkerSpec sh_worker(const std::string& script);

class Harness {
public:
    // Skips (returns with available() false) when `cgroups` is host and this
    // host has no cgroups. `tweak` adjusts the options before creation.
    explicit Harness(Cgroups cgroups, const std::function<void(supervisor::SupervisorOptions&)>& tweak = {});
    ~Harness();

    bool available() const { return supervisor_ != nullptr; }
    supervisor::Supervisor& supervisor() { return *supervisor_; }
    event::EventLoop& loop() { return *loop_; }
    const std::string& log_root() const { return logs_.path(); }
    const std::string& prefix() const { return prefix_; }

    // Supervisor::start(), with the process `held` (Supervisor::hold) if given.
    supervisor::WorkerId start(supervisor::WorkerSpec spec, std::optional<supervisor::WorkerId> held = {});
    // Runs the loop until the worker's outcome is in (fails the test after
    // `limit`).
    supervisor::WorkerOutcome wait(supervisor::WorkerId id, std::chrono::seconds limit = std::chrono::seconds(30));
    // Runs the loop until `done` (false after `limit`).
    bool run_until(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(30));
    bool has_outcome(supervisor::WorkerId id) const { return outcomes_.count(id) > 0; }

    std::vector<std::pair<supervisor::WorkerId, std::uint64_t>> progress;  // (id, seq)
    std::function<void(supervisor::WorkerId, std::uint64_t)> on_progress;  // extra hook
    std::function<void(const supervisor::WorkerOutcome&)> on_outcome;      // extra hook

    // Cgroup directories named after this harness's workers that still
    // exist, spawn pool slots with a parked child excepted (those belong to
    // the live supervisor's pool, not to a worker).
    std::vector<std::string> leftover_cgroups() const;
    // Runs the loop until leftover_cgroups() is empty (a worker's cgroup is
    // removed on a spawn thread just after its outcome); false after 10 s.
    bool no_cgroups_left() { return run_until([&] { return leftover_cgroups().empty(); }, std::chrono::seconds(10)); }
    // The spawn pool's slot directories holding a parked child.
    std::vector<std::string> parked_slots() const;
    // Every directory named <prefix>-*, parked slots included.
    std::vector<std::string> all_cgroups() const;
    // Runs the loop until the pool has `count` children parked.
    bool wait_parked(std::size_t count);
    // Destroys the supervisor now (its destructor's kill-everything path).
    void destroy_supervisor() { supervisor_.reset(); }

private:
    TempDir logs_{"nps-sup-logs"};
    std::string prefix_;
    const cgroup::CgroupBase* base_ = nullptr;
    std::unique_ptr<event::EventLoop> loop_;
    std::unique_ptr<supervisor::Supervisor> supervisor_;
    std::map<supervisor::WorkerId, supervisor::WorkerOutcome> outcomes_;
};

// Whether the cgroup directory holds a spawn pool's parked child: a slot name
// (…-p<n>) and only copies of this process that have not executed a worker.
bool is_parked_slot(const std::string& dir);

// Whether a process whose command line contains `needle` runs on the host.
bool process_running(const std::string& needle);
// This process's resident set, bytes.
std::size_t rss_bytes();
std::string slurp(const std::string& path);

}  // namespace nps::test
