// SPDX-License-Identifier: Apache-2.0
// A real `nps-runner serve` claiming from one inbox, with the demo worker
// image (demo/make-image) imported into its state directory, and helpers to
// announce agents, submit TaskFrames and wait for their end.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner_process.hpp"
#include "temp_dir.hpp"

namespace nps::test {

inline constexpr const char* kDemoImage = "nps-demo-worker:1";
inline constexpr const char* kInbox = "urn:nps:agent:exec.test:pipeline";

// Why the executor tests cannot run here ("" when they can).
std::string executor_unavailable_reason();

// The demo image's OCI layout, built once per test process.
const std::string& demo_image_layout();

// "spawnspec:<base64url>" of a SpawnSpec running the demo image with this
// command (worker modes: demo/worker.sh).
std::string inline_spawn_spec(const std::vector<std::string>& command, const nlohmann::json& extra = {});

class ExecutorFixture {
public:
    // extra_config is appended to the [runner] section's config file. With
    // state_disk_size ("24m") the state directory is a tmpfs of that size, a
    // disk the test can fill.
    explicit ExecutorFixture(const std::string& extra_config = "", const char* state_disk_size = nullptr);

    RunnerProcess& runner() { return *runner_; }
    const std::string& state_dir() const { return dir_.path(); }
    // Starts (again, after a stop or kill) the daemon on the same state.
    void start();

    void announce(const std::string& agent, const std::string& spawn_spec_ref);
    // Deposits the frame into kInbox; returns its task_id.
    std::string submit(const nlohmann::json& frame);
    nlohmann::json task(const std::string& task_id);
    // Polls GET /v1/tasks/{id} until its state is terminal (or the timeout).
    nlohmann::json wait_terminal(const std::string& task_id, std::chrono::seconds timeout = std::chrono::seconds(60));
    // Polls until `pred(task)` holds.
    nlohmann::json wait_until(const std::string& task_id, const std::function<bool(const nlohmann::json&)>& pred,
                              std::chrono::seconds timeout = std::chrono::seconds(60));

private:
    TempDir dir_;
    std::string config_path_;
    std::optional<RunnerProcess> runner_;
};

// A node of a linear DAG step.
nlohmann::json dag_node(const std::string& id, const std::string& agent, const std::string& action,
                        const std::vector<std::string>& input_from = {}, const nlohmann::json& extra = {});
// A TaskFrame of these nodes, with edges from each node's input_from.
nlohmann::json task_frame_of(const std::string& task_id, const std::vector<nlohmann::json>& nodes,
                             const nlohmann::json& extra = {});

// Processes whose cgroup (any hierarchy) names a worker cgroup of `runner_pid`
// (w-<pid>-…), the spawn pool's parked children (copies of the runner that
// have not executed a worker) excepted.
std::vector<pid_t> worker_processes_of(pid_t runner_pid);
// The spawn pool's parked children of `runner_pid`.
std::vector<pid_t> parked_children_of(pid_t runner_pid);
// Worker cgroup directories of `runner_pid` under the v2 and v1 hierarchies,
// the spawn pool's slots holding a parked child excepted.
std::vector<std::string> worker_cgroups_of(pid_t runner_pid);
// Every w-<pid>-… directory of `runner_pid`, parked slots included.
std::vector<std::string> all_cgroups_of(pid_t runner_pid);
// What a failed check needs to know of these processes: pid, parent, state,
// name, command line, cgroups and kernel stack, one per line.
std::string describe_processes(const std::vector<pid_t>& pids);
// These cgroup directories and the processes in each.
std::string describe_cgroups(const std::vector<std::string>& dirs);

}  // namespace nps::test
