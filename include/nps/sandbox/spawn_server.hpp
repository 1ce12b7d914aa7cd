// SPDX-License-Identifier: Apache-2.0
// SpawnServer: a small helper process, forked from the runner early, that
// clones sandbox children on the runner's behalf.
//
// Why: sandbox::spawn() clones the calling process. In the daemon that is a
// copy of a process with many threads, a store cache and a heap that grows
// with its work: the clone copies its page tables, and afterwards every page
// the daemon writes that the child still shares is copied again (a
// copy-on-write fault), for each worker started (bench/RESULTS.md
// "throughput": ~11 % of the daemon's CPU). The server is a copy of the
// runner taken before any of that existed; its children copy only it.
//
// Each child is cloned with CLONE_PARENT, so it is the runner's own child,
// exactly like one of sandbox::spawn()'s: the runner holds its pidfd, reaps
// it, and its PR_SET_PDEATHSIG fires when the runner thread that started the
// server ends — start() on a thread that outlives the workers (the main
// thread). The sandbox is the same (the same plan and child code as
// spawn()); the plan reaches the child through a shared area mapped before
// the server was forked (shared_plan.hpp), the fds as SCM_RIGHTS.
//
// The server allocates nothing after start() and handles one request at a
// time. try_spawn() and park() may be called from several threads: each
// spawn holds one of the server's plan areas until its child has exec'd,
// each parked child one until it has (there is one per possible parked
// child and four more; a call waits for a free one), and requests and
// replies are exchanged one at a time. When the server is gone (killed by
// someone), try_spawn() and park() say so and the caller falls back to
// sandbox::spawn() or its own clone. Destroying the SpawnServer — after
// every pool parking through it — ends the server (its socket closes; then
// SIGKILL through its pidfd) and reaps it; children it started are the
// caller's and are not affected.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/child.hpp"
#include "nps/sandbox/spawner.hpp"

namespace nps::sandbox {

// try_spawn(): the started child, or why the server could not take the spec
// (the caller then uses sandbox::spawn()).
struct ServerAttempt {
    std::optional<Child> started;
    std::string missed;  // when !started: "the spawn server is gone", …
};

class SpawnServer {
public:
    class Area;  // a shared plan area held for one spawn or one parked child

    // Forks the server. Call early, on the thread that will outlive the
    // workers, while the process is small: the server is a copy of it.
    static Result<SpawnServer> start();

    SpawnServer(SpawnServer&&) noexcept;
    SpawnServer& operator=(SpawnServer&&) noexcept;
    ~SpawnServer();

    // sandbox::spawn(spec) through the server: the same checks, sandbox and
    // errors; a spec.cgroup is joined as spawn() joins it. A ServerAttempt
    // without `started` when the server is gone or the plan exceeds the
    // shared area; an error when the worker's own spec failed, as spawn()
    // would have failed. A held child (spec.hold_before_exec) keeps its plan
    // area until released; at most 8 do at once, more are misses.
    Result<ServerAttempt> try_spawn(const SandboxSpec& spec);

    // A SpawnPool's parked child (spawn_pool.hpp), cloned by the server so it
    // is a copy of the small server, not of the caller: in new pid, uts and
    // ipc namespaces, into `cgroup_dir_fd`'s v2 cgroup when >= 0 and, by
    // itself, into the v1 groups whose `tasks` files are given (it sends one
    // byte on `socket` once placed: SpawnPool waits for it), waiting on
    // `socket` for its plan, which the caller lays out in `area` (and
    // `empty_caps` is the capability set valid in the child). Its death
    // signal is tied to the thread that started the server.
    struct Parked {
        Child child;
        UniqueFd socket;  // the caller's end
        std::unique_ptr<Area> area;
        void* plan_area = nullptr;  // area's memory, kSpawnPoolPlanBytes
        void* empty_caps = nullptr;
    };
    // nullopt when the server is gone; an error when the clone failed.
    Result<std::optional<Parked>> park(int cgroup_dir_fd, const std::vector<UniqueFd>& cgroup_tasks);

    // The server's pid (for diagnostics and tests); -1 once it is gone.
    pid_t pid() const;

    struct State;

private:
    explicit SpawnServer(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

// One of the server's shared plan areas, given back on destruction. The
// SpawnServer must outlive it.
class SpawnServer::Area {
public:
    Area(State& state, std::size_t index, bool held = false) : state_(state), index_(index), held_(held) {}
    Area(const Area&) = delete;
    Area& operator=(const Area&) = delete;
    ~Area();

    std::size_t index() const { return index_; }
    void* memory() const;

private:
    State& state_;
    std::size_t index_;
    bool held_;  // taken for a held child (they have areas of their own)
};

}  // namespace nps::sandbox
