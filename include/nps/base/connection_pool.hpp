// SPDX-License-Identifier: Apache-2.0
// ConnectionPool<T>: connections to one database (a store::Store, an
// image::ImageStore) shared by several threads. A connection is not
// thread-safe, so a user borrows one for as long as it uses it (a Lease, which
// gives it back when destroyed); given-back connections are kept, up to
// `max_idle`, so their prepared statements are reused; when none is idle,
// `open` makes a new one. Thread-safe. The pool must outlive its leases.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "nps/base/result.hpp"

namespace nps {

template <class T>
class ConnectionPool {
public:
    using Open = std::function<Result<std::unique_ptr<T>>()>;

    explicit ConnectionPool(Open open, std::size_t max_idle = 8) : open_(std::move(open)), max_idle_(max_idle) {}
    ConnectionPool(const ConnectionPool&) = delete;
    ConnectionPool& operator=(const ConnectionPool&) = delete;

    class Lease {
    public:
        Lease(ConnectionPool* pool, std::unique_ptr<T> connection)
            : pool_(pool), connection_(std::move(connection))
        {
        }
        Lease(Lease&&) noexcept = default;
        Lease& operator=(Lease&& other) noexcept
        {
            give_back();
            pool_ = other.pool_;
            connection_ = std::move(other.connection_);
            return *this;
        }
        ~Lease() { give_back(); }
        T* operator->() const { return connection_.get(); }
        T& operator*() const { return *connection_; }

    private:
        void give_back()
        {
            if (pool_ && connection_)
                pool_->give_back(std::move(connection_));
        }

        ConnectionPool* pool_;
        std::unique_ptr<T> connection_;
    };

    // An idle connection, or a new one (the error `open` gave).
    Result<Lease> acquire()
    {
        {
            std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                auto connection = std::move(idle_.back());
                idle_.pop_back();
                return Lease(this, std::move(connection));
            }
        }
        auto connection = NPS_TRY(open_());
        return Lease(this, std::move(connection));
    }

private:
    void give_back(std::unique_ptr<T> connection)
    {
        std::lock_guard lock(mutex_);
        if (idle_.size() < max_idle_)
            idle_.push_back(std::move(connection));
    }

    Open open_;
    std::size_t max_idle_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<T>> idle_;
};

}  // namespace nps
