// SPDX-License-Identifier: Apache-2.0
#include "nps/store/deposit_committer.hpp"

#include <utility>

namespace nps::store {

DepositCommitter::DepositCommitter(StorePool& stores) : stores_(stores), thread_([this] { run(); }) {}

DepositCommitter::~DepositCommitter()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

void DepositCommitter::submit(DepositRequest request, Done done)
{
    {
        std::lock_guard lock(mutex_);
        queue_.push_back({std::move(request), std::move(done)});
    }
    wake_.notify_one();
}

void DepositCommitter::run()
{
    std::vector<DepositRequest> requests;
    std::vector<Done> dones;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty())
                return;  // stopping, and everything submitted is answered
            while (!queue_.empty() && requests.size() < kMaxDepositsPerCommit) {
                requests.push_back(std::move(queue_.front().request));
                dones.push_back(std::move(queue_.front().done));
                queue_.pop_front();
            }
        }
        auto results = commit(requests);
        commits_.fetch_add(1, std::memory_order_relaxed);
        for (std::size_t i = 0; i < dones.size(); ++i)
            dones[i](std::move(results[i]));
        requests.clear();
        dones.clear();
    }
}

std::vector<Result<DepositResult>> DepositCommitter::commit(const std::vector<DepositRequest>& requests)
{
    auto store = stores_.acquire();
    if (!store)
        return std::vector<Result<DepositResult>>(requests.size(), store.error());
    return (*store)->deposit_batch(requests);
}

}  // namespace nps::store
