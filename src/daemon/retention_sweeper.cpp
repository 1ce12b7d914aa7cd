// SPDX-License-Identifier: Apache-2.0
#include "retention_sweeper.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "nps/base/log.hpp"

namespace nps::daemon {

namespace {

constexpr std::uint32_t kBatch = 200;        // tasks per transaction
constexpr std::int64_t kBatchPauseMs = 5;    // between transactions: the API's writers go first
constexpr std::uint32_t kReclaimPages = 1024;  // 4 MiB of 4 KiB pages per pass at most

}  // namespace

RetentionSweeper::RetentionSweeper(std::int64_t retention_seconds, store::StorePool& stores, const Clock& clock)
    : retention_ms_(retention_seconds * 1000),
      interval_ms_(std::clamp<std::int64_t>(retention_seconds * 100, 1000, 60'000)),
      stores_(stores),
      clock_(clock)
{
    if (auto store = stores_.acquire())
        store_.emplace(std::move(*store));
    else
        log::warning("retention: " + store.error().describe() + " (trying again at each pass)");
    thread_ = std::thread([this] { run(); });
}

RetentionSweeper::~RetentionSweeper()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

bool RetentionSweeper::pause(std::int64_t ms)
{
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
}

void RetentionSweeper::run()
{
    ::pthread_setname_np(::pthread_self(), "nps-retention");
    while (pause(interval_ms_)) {
        try {
            sweep_once();
        } catch (const std::exception& e) {  // out of memory, say: never take the daemon down
            log::error(std::string("retention: ") + e.what());
        }
    }
}

std::optional<std::int64_t> RetentionSweeper::in_batches(const std::function<Result<std::int64_t>()>& batch)
{
    std::int64_t total = 0;
    for (;;) {
        auto n = batch();
        if (!n) {
            log::warning("retention: " + n.error().describe());
            return std::nullopt;
        }
        total += *n;
        if (*n < kBatch || !pause(kBatchPauseMs))
            return total;
    }
}

void RetentionSweeper::sweep_once()
{
    if (!store_) {
        auto store = stores_.acquire();
        if (!store) {
            log::warning("retention: " + store.error().describe());
            return;
        }
        store_.emplace(std::move(*store));
    }
    store::StorePool::Lease& store = *store_;
    const auto expired = in_batches([&] { return store->expire_results(kBatch); });
    if (!expired)
        return;
    const auto deleted = in_batches([&] {
        return store->prune_tasks({.finished_before_ms = clock_.now_ms() - retention_ms_, .limit = kBatch});
    });
    if (!deleted)
        return;
    if (*deleted > 0)
        if (auto reclaimed = store->reclaim_space(kReclaimPages); !reclaimed)
            log::warning("retention: " + reclaimed.error().describe());
    if (*expired > 0 || *deleted > 0)
        log::info("retention: " + std::to_string(*expired) + " task result(s) expired, " + std::to_string(*deleted) +
                  " finished task(s) deleted");
}

}  // namespace nps::daemon
