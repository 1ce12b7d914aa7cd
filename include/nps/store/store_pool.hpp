// SPDX-License-Identifier: Apache-2.0
// StorePool: Store connections for the API (on the loop thread), the deposit
// committer and the pool threads (announce lookups of SpawnSpec resolution),
// each borrowed for its use (nps/base/connection_pool.hpp).
#pragma once

#include <cstddef>

#include "nps/base/clock.hpp"
#include "nps/base/connection_pool.hpp"
#include "nps/store/store.hpp"

namespace nps::store {

class StorePool : public ConnectionPool<Store> {
public:
    StorePool(OpenOptions options, const Clock& clock, std::size_t max_idle = 8)
        : ConnectionPool<Store>([options = std::move(options), &clock] { return Store::open(options, clock); },
                                max_idle)
    {
    }
};

}  // namespace nps::store
