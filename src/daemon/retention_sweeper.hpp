// SPDX-License-Identifier: Apache-2.0
// RetentionSweeper: the daemon's thread that keeps runner.db from growing
// with history (docs/retention.md). Every pass, off the event loop:
//  1. expires the results of finished tasks whose result_ttl_seconds has
//     passed (Store::expire_results),
//  2. deletes finished tasks older than [store] task_retention_hours
//     (Store::prune_tasks),
//  3. gives free pages back to the file system (Store::reclaim_space),
// each in small transactions with a pause between them, so the API's
// writers never wait long for the write lock. A pass runs every
// retention/10, between 1 s and 60 s; a failure is logged and retried at
// the next pass. The thread's own store connection is opened at
// construction (the daemon's open files do not change when it first runs).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "nps/base/clock.hpp"
#include "nps/store/store_pool.hpp"

namespace nps::daemon {

class RetentionSweeper {
public:
    RetentionSweeper(std::int64_t retention_seconds, store::StorePool& stores, const Clock& clock);
    // Stops within one batch and joins.
    ~RetentionSweeper();
    RetentionSweeper(const RetentionSweeper&) = delete;
    RetentionSweeper& operator=(const RetentionSweeper&) = delete;

private:
    void run();
    void sweep_once();
    // Runs `batch` (one transaction, returning how many rows it took) until
    // it takes fewer than a full batch, pausing between transactions: the
    // total, or nullopt after a failure (logged).
    std::optional<std::int64_t> in_batches(const std::function<Result<std::int64_t>()>& batch);
    // Sleeps up to `ms` or until stopped; false when stopped.
    bool pause(std::int64_t ms);

    const std::int64_t retention_ms_;
    const std::int64_t interval_ms_;
    store::StorePool& stores_;
    std::optional<store::StorePool::Lease> store_;  // the thread's connection, kept
    const Clock& clock_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace nps::daemon
