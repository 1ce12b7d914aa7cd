// SPDX-License-Identifier: Apache-2.0
// StorePool: Store connections for the API (on the loop thread) and the pool
// threads (announce lookups of SpawnSpec resolution). A Store is not
// thread-safe, so each user borrows one for its duration; idle
// connections are kept (up to `max_idle`) to reuse their prepared statements.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/result.hpp"
#include "nps/store/store.hpp"

namespace nps::store {

class StorePool {
public:
    StorePool(store::OpenOptions options, const Clock& clock, std::size_t max_idle = 8);

    class Lease {
    public:
        Lease(StorePool* pool, std::unique_ptr<store::Store> store) : pool_(pool), store_(std::move(store)) {}
        Lease(Lease&&) noexcept = default;
        Lease& operator=(Lease&&) noexcept = default;
        ~Lease();
        store::Store* operator->() const { return store_.get(); }
        store::Store& operator*() const { return *store_; }

    private:
        StorePool* pool_;
        std::unique_ptr<store::Store> store_;
    };

    // An idle connection, or a new one.
    Result<Lease> acquire();

private:
    void give_back(std::unique_ptr<store::Store> store);

    store::OpenOptions options_;
    const Clock& clock_;
    std::size_t max_idle_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<store::Store>> idle_;
};

}  // namespace nps::store
