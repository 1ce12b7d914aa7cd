// SPDX-License-Identifier: Apache-2.0
#include "nps/store/store_pool.hpp"

namespace nps::store {

StorePool::StorePool(store::OpenOptions options, const Clock& clock, std::size_t max_idle)
    : options_(std::move(options)), clock_(clock), max_idle_(max_idle)
{
}

StorePool::Lease::~Lease()
{
    if (pool_ && store_)
        pool_->give_back(std::move(store_));
}

Result<StorePool::Lease> StorePool::acquire()
{
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            auto store = std::move(idle_.back());
            idle_.pop_back();
            return Lease(this, std::move(store));
        }
    }
    auto store = NPS_TRY(store::Store::open(options_, clock_));
    return Lease(this, std::move(store));
}

void StorePool::give_back(std::unique_ptr<store::Store> store)
{
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_)
        idle_.push_back(std::move(store));
}

}  // namespace nps::store
