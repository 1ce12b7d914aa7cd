// SPDX-License-Identifier: Apache-2.0
#include "executor_fixture.hpp"

#include <dirent.h>
#include <sys/mount.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "nps/base/digest.hpp"
#include "parked_child.hpp"

namespace nps::test {

namespace {

using Json = nlohmann::json;

bool have(const char* tool)
{
    std::string command = std::string("command -v ") + tool + " >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
}

bool terminal(const std::string& state)
{
    return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED";
}

}  // namespace

std::string executor_unavailable_reason()
{
    if (::geteuid() != 0)
        return "needs root (namespaces, cgroups, overlay mounts)";
    if (!have("umoci"))
        return "needs umoci to build the demo image (scripts/install-deps)";
    if (!have("busybox"))
        return "needs busybox-static for the demo image (scripts/install-deps)";
    return "";
}

const std::string& demo_image_layout()
{
    static const std::string layout = [] {
        static TempDir dir("nps-demo-image");
        std::string command = std::string(NPS_SOURCE_ROOT) + "/demo/make-image " + dir.path() + " 2>&1";
        if (std::system(command.c_str()) != 0)
            throw std::runtime_error("demo/make-image failed");
        return dir.path() + "/oci";
    }();
    return layout;
}

std::string inline_spawn_spec(const std::vector<std::string>& command, const Json& extra)
{
    Json spec = {{"image", kDemoImage}, {"command", Json(command)}};
    if (extra.is_object())
        spec.update(extra);
    return "spawnspec:" + base64url_encode(spec.dump());
}

ExecutorFixture::ExecutorFixture(const std::string& extra_config, const char* state_disk_size) : dir_("nps-exec")
{
    if (state_disk_size) {
        const std::string options = std::string("mode=0700,size=") + state_disk_size;
        REQUIRE_MESSAGE(::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0,
                        "mount a tmpfs on " << dir_.path() << ": " << std::strerror(errno));  // dir_ unmounts it
    }
    const std::string config = "[runner]\ninboxes = [\"" + std::string(kInbox) + "\"]\n" + extra_config;
    runner_.emplace(RunnerOptions{.state_dir = dir_.path(), .config_text = config});
    auto imported =
        run_command({"image", "import", demo_image_layout(), "--name", kDemoImage, "--state-dir", dir_.path()});
    REQUIRE_MESSAGE(imported.exit_status == 0, imported.err);
    start();
}

void ExecutorFixture::start()
{
    REQUIRE_MESSAGE(runner_->start(), runner_->log());
}

void ExecutorFixture::announce(const std::string& agent, const std::string& spawn_spec_ref)
{
    auto reply = http("PUT", runner_->url() + "/v1/ndp/announces/" + agent,
                      Json{{"nid", agent}, {"activation_mode", "ephemeral"}, {"spawn_spec_ref", spawn_spec_ref}}.dump());
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
}

std::string ExecutorFixture::submit(const Json& frame)
{
    auto reply = http("POST", runner_->url() + "/v1/inbox/" + kInbox, frame.dump());
    REQUIRE_MESSAGE(reply.status == 201, reply.raw);
    return frame.at("task_id").get<std::string>();
}

Json ExecutorFixture::task(const std::string& task_id)
{
    auto reply = http("GET", runner_->url() + "/v1/tasks/" + task_id);
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    return reply.body;
}

Json ExecutorFixture::wait_until(const std::string& task_id, const std::function<bool(const Json&)>& pred,
                                 std::chrono::seconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    Json last;
    while (std::chrono::steady_clock::now() < deadline) {
        last = task(task_id);
        if (pred(last))
            return last;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL("task " << task_id << " did not reach the expected state in time: " << last.dump() << "\nlog:\n"
                 << runner_->log());
    return last;
}

Json ExecutorFixture::wait_terminal(const std::string& task_id, std::chrono::seconds timeout)
{
    return wait_until(
        task_id, [](const Json& t) { return terminal(t.value("state", "")); }, timeout);
}

Json dag_node(const std::string& id, const std::string& agent, const std::string& action,
              const std::vector<std::string>& input_from, const Json& extra)
{
    Json node = {{"id", id}, {"agent", agent}, {"action", action}};
    if (!input_from.empty())
        node["input_from"] = input_from;
    if (extra.is_object())
        node.update(extra);
    return node;
}

Json task_frame_of(const std::string& task_id, const std::vector<Json>& nodes, const Json& extra)
{
    Json edges = Json::array();
    for (const auto& node : nodes)
        if (node.contains("input_from"))
            for (const auto& from : node["input_from"])
                edges.push_back({{"from", from}, {"to", node["id"]}});
    Json frame = {{"task_id", task_id}, {"dag", {{"nodes", nodes}, {"edges", edges}}}};
    if (extra.is_object())
        frame.update(extra);
    return frame;
}

namespace {

std::string read_all(const std::string& path)
{
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

bool parked(pid_t pid)
{
    return is_parked_child(pid, runner_binary());
}

std::vector<pid_t> processes_in_cgroups_of(pid_t runner_pid)
{
    const std::string marker = "/w-" + std::to_string(runner_pid) + "-";
    std::vector<pid_t> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream in(entry.path() / "cgroup");
        std::string line;
        while (std::getline(in, line))
            if (line.find(marker) != std::string::npos) {
                found.push_back(std::stoi(name));
                break;
            }
    }
    return found;
}

// A spawn-pool slot holding only parked children, or none yet: the pool
// creates a slot's cgroup before it moves the new child in, so an empty slot
// is one being refilled (all_cgroups_of still sees it once the runner ends).
bool parked_slot(const std::string& dir)
{
    if (dir.find("-p", dir.rfind('/')) == std::string::npos)
        return false;
    const auto pids = cgroup_procs(dir);
    return std::all_of(pids.begin(), pids.end(), parked);
}

}  // namespace

std::vector<pid_t> worker_processes_of(pid_t runner_pid)
{
    std::vector<pid_t> found;
    for (pid_t pid : processes_in_cgroups_of(runner_pid))
        if (!parked(pid))
            found.push_back(pid);
    return found;
}

std::vector<pid_t> parked_children_of(pid_t runner_pid)
{
    std::vector<pid_t> found;
    for (pid_t pid : processes_in_cgroups_of(runner_pid))
        if (parked(pid))
            found.push_back(pid);
    return found;
}

std::vector<std::string> all_cgroups_of(pid_t runner_pid)
{
    const std::string prefix = "w-" + std::to_string(runner_pid) + "-";
    std::vector<std::string> found;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator("/sys/fs/cgroup", ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec) && it->path().filename().string().rfind(prefix, 0) == 0) {
            found.push_back(it->path().string());
            it.disable_recursion_pending();
        }
    }
    return found;
}

std::string describe_processes(const std::vector<pid_t>& pids)
{
    std::string out;
    for (pid_t pid : pids) {
        const std::string proc = "/proc/" + std::to_string(pid);
        const std::string stat = read_all(proc + "/stat");  // pid (comm) state ppid …
        const auto comm_end = stat.rfind(')');
        std::istringstream fields(comm_end == std::string::npos ? "" : stat.substr(comm_end + 1));
        std::string state, ppid;
        fields >> state >> ppid;
        std::string cmdline = read_all(proc + "/cmdline");
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        std::string cgroups = read_all(proc + "/cgroup");
        std::replace(cgroups.begin(), cgroups.end(), '\n', ' ');
        std::string stack = read_all(proc + "/stack");
        std::replace(stack.begin(), stack.end(), '\n', ' ');
        out += "pid " + std::to_string(pid) + " " + stat.substr(0, comm_end + 1) + " state " + state + " ppid " + ppid +
               " cmdline [" + cmdline + "] cgroups " + cgroups + " kernel stack " + stack + "\n";
    }
    return out;
}

std::string describe_cgroups(const std::vector<std::string>& dirs)
{
    std::string out;
    for (const auto& dir : dirs)
        out += dir + ", its processes:\n" + describe_processes(cgroup_procs(dir));
    return out;
}

std::vector<std::string> worker_cgroups_of(pid_t runner_pid)
{
    std::vector<std::string> found;
    for (auto& dir : all_cgroups_of(runner_pid))
        if (!parked_slot(dir))
            found.push_back(dir);
    return found;
}

}  // namespace nps::test
