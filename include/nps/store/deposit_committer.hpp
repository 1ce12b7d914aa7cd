// SPDX-License-Identifier: Apache-2.0
// DepositCommitter: group commit of deposits (docs/durability.md, "Group
// commit").
//
// submit() queues a deposit and returns at once. One thread, with its own
// Store connection, takes everything queued (up to kMaxDepositsPerCommit),
// deposits it with Store::deposit_batch — one transaction, one fsync — and
// then calls each request's `done` with its result, on that thread, in
// submission order. So `done` sees only what is durable (a success has been
// committed), and each request's failure is its own (a full inbox or a
// conflicting task_id refuses that request, not its group).
//
// Nothing waits to fill a group: a deposit arriving at an idle committer is
// committed at once, on its own; under load a group is what arrived while
// the previous commit was running. The latency added at low load is one
// thread hand-off.
//
// Thread-safety: submit() from any thread. Destruction commits what is
// queued and joins the thread; `done` may still run during it, never after.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/store/store_pool.hpp"

namespace nps::store {

class DepositCommitter {
public:
    using Done = std::function<void(Result<DepositResult> result)>;

    // Bounds one transaction: its time (so one group's answers are not held
    // back by a huge one) and its memory.
    static constexpr std::size_t kMaxDepositsPerCommit = 256;

    // Each group borrows a connection from `stores` for its transaction (the
    // most recently used one: a connection the API found broken has been
    // replaced); when none can be opened, the group's requests fail with why.
    explicit DepositCommitter(StorePool& stores);
    ~DepositCommitter();
    DepositCommitter(const DepositCommitter&) = delete;
    DepositCommitter& operator=(const DepositCommitter&) = delete;

    void submit(DepositRequest request, Done done);

    // Transactions run so far (deposits ÷ commits is the mean group size).
    std::uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }

private:
    struct Pending {
        DepositRequest request;
        Done done;
    };

    void run();
    std::vector<Result<DepositResult>> commit(const std::vector<DepositRequest>& requests);

    StorePool& stores_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Pending> queue_;
    bool stopping_ = false;
    std::atomic<std::uint64_t> commits_{0};
    std::thread thread_;  // last: starts once the rest exists
};

}  // namespace nps::store
