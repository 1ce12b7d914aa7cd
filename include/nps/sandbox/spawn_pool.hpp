// SPDX-License-Identifier: Apache-2.0
// SpawnPool: sandbox children cloned ahead of time, each already placed in a
// cgroup of its own (a "slot"), parked until it is told what to become.
//
// Why: the clone and the pid, uts and ipc namespaces, and the placement in
// the slot's cgroups, are paid in refill(), off the hot path; spawn() then
// only writes the limits and hands the child its plan. (The placement used
// to be the main reason: a move into a v1 cgroup by pid waits for an RCU
// grace period, 8–15 ms here, when spawns are sparse. A parked child now
// moves itself, which does not wait, as every spawn's child does:
// docs/cgroups.md.)
//
// A parked child is a copy of the caller made at refill() time — or, with a
// SpawnServer in the options, a copy of that small server, cloned as the
// caller's child (CLONE_PARENT) — that has closed every fd but its end of a
// socketpair and waits on it. spawn() writes
// the plan (paths, argv, env, rlimits, seccomp program) into a shared page
// area the child mapped at the same address, and passes the fds (stdio, the
// report socket, a shared network namespace) over the socket. The child then
// makes its mount (and, for a private network, net) namespace and runs the
// same setup as sandbox::spawn(): the sandbox is the same.
//
// The slot's cgroup becomes the worker's: spawn() returns it with the
// Child, and it is killed and removed like any WorkerCgroup. Not supported
// (use sandbox::spawn): user namespaces, a caller-made SandboxSpec::cgroup.
//
// A parked child is a copy of the *thread* that called refill() (or counts
// the thread that started the server as its parent), and its
// PR_SET_PDEATHSIG (kept once it runs a worker, as spawn()'s children keep
// theirs) fires when that thread ends: refill() from a thread that outlives
// the workers started from the pool (the caller's, or one made for it such
// as supervisor::RefilledPool's).
//
// Thread safety: one refill() (or park_one()) at a time may run on one
// thread while spawn(), try_spawn() and ready() run on others; the slots
// are handed over under a mutex, the slow work happens outside it. Destroy
// the pool only when no call runs: it kills the parked children and removes
// their cgroups.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "nps/base/result.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/sandbox/child.hpp"
#include "nps/sandbox/spawn_server.hpp"
#include "nps/sandbox/spawner.hpp"

namespace nps::sandbox {

struct SpawnPoolOptions {
    const cgroup::CgroupBase* cgroup_base = nullptr;  // required; must outlive the pool
    std::string name_prefix;  // slots are cgroups <prefix><n>: [A-Za-z0-9._-], unique to this runner
    std::size_t size = 1;     // children refill() keeps parked, 1..limits::kSpawnPoolMaxSize
    cgroup::KillMethod kill_method = cgroup::KillMethod::automatic;
    // Parks its children through this server (not owned; it must outlive the
    // pool): each is then a copy of the small server rather than of the
    // refilling thread's process, and its death signal is tied to the
    // server's starter. nullptr, or a server that is gone: cloned here.
    SpawnServer* server = nullptr;
    // Set on each slot's cgroup when it is parked, so a spawn asking for
    // exactly these limits and this enforcement (a daemon's defaults) writes
    // none on its way. A slot whose limits could not be set so (a limit the
    // host cannot enforce) parks without them; a spawn then sets its own
    // and fails as spawn() would. nullopt: none set ahead.
    std::optional<cgroup::CgroupLimits> park_limits;
    cgroup::Enforcement park_enforcement = cgroup::Enforcement::strict;
};

// A worker started from the pool: its process and its cgroup.
struct PooledChild {
    Child child;
    cgroup::WorkerCgroup cgroup;
};

// try_spawn(): a worker started from the pool, or why the pool could not
// take it (the caller then uses sandbox::spawn()).
struct PoolAttempt {
    std::optional<PooledChild> started;
    std::string missed;  // when !started: "no parked child is ready", …
};

struct PooledSlot;  // a parked child, its cgroup and its plan area (spawn_pool.cpp)

class SpawnPool {
public:
    // Parks nothing yet: call refill().
    static Result<SpawnPool> create(SpawnPoolOptions options);

    SpawnPool(SpawnPool&&) noexcept;
    SpawnPool& operator=(SpawnPool&&) noexcept;
    ~SpawnPool();

    // Parks children until `size` are ready. Each costs a clone3 and, on
    // v1 hierarchies, a cgroup migration that may sleep for a grace period:
    // call it off the hot path (after a spawn, from an idle moment).
    Result<void> refill();
    // Parks one child if fewer than `size` are; false when none was needed.
    Result<bool> park_one();

    // Children parked now (dead ones not yet noticed included).
    std::size_t ready() const;
    std::size_t size() const { return options_.size; }

    // Starts spec in a parked child: applies `limits` to its cgroup, then
    // hands it spec. Returns once spec.argv has been executed, like
    // sandbox::spawn(), whose errors it reports alike. Fails without a parked
    // child (the caller may fall back to spawn()), for spec.user_namespace
    // or spec.cgroup, and when the plan exceeds limits::kSpawnPoolPlanBytes.
    // Parked children that died are skipped (and their slots removed).
    Result<PooledChild> spawn(const SandboxSpec& spec, const cgroup::CgroupLimits& limits,
                              cgroup::Enforcement enforcement = cgroup::Enforcement::strict);

    // spawn(), telling apart what the pool cannot do from what failed:
    // a PoolAttempt without `started` when no live child is parked, for a
    // user namespace or a caller-made cgroup, for a plan over
    // limits::kSpawnPoolPlanBytes, or when the parked child is gone before it
    // took the plan — sandbox::spawn() may still start that worker; an
    // error when the worker's own spec failed (its rootfs, its limits under
    // Enforcement::strict, its setup or exec in the child), as
    // sandbox::spawn() would have failed too. A slot given the plan is used
    // up either way.
    Result<PoolAttempt> try_spawn(const SandboxSpec& spec, const cgroup::CgroupLimits& limits,
                                  cgroup::Enforcement enforcement = cgroup::Enforcement::strict);

private:
    explicit SpawnPool(SpawnPoolOptions options);

    struct Slots;  // the parked slots and the next slot number, under a mutex

    // The oldest parked slot whose child is alive; nullptr when none is.
    std::unique_ptr<PooledSlot> take();
    void put_back(std::unique_ptr<PooledSlot> slot);
    // Places a slot's new child in its v1 cgroups and parks it.
    Result<bool> place_and_park(std::unique_ptr<PooledSlot> slot);

    SpawnPoolOptions options_;
    std::unique_ptr<Slots> slots_;
};

}  // namespace nps::sandbox
