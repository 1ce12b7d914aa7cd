// SPDX-License-Identifier: Apache-2.0
// ConnectionPool: a borrowed connection comes back to the pool, is lent again
// before a new one is opened, and idle ones beyond max_idle are closed.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <string>
#include <optional>
#include <thread>
#include <vector>

#include "nps/base/connection_pool.hpp"

namespace {

struct Connection {
    Connection(int number, std::atomic<int>& counter) : id(number), open_now(counter) { ++open_now; }
    ~Connection() { --open_now; }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    int id;
    std::atomic<int>& open_now;
};

// Counts what the pool opens; `open` may run on several threads at once.
struct Counting {
    std::atomic<int> opened{0};
    std::atomic<int> open_now{0};
    bool refuse = false;

    nps::ConnectionPool<Connection>::Open opener()
    {
        return [this]() -> nps::Result<std::unique_ptr<Connection>> {
            if (refuse)
                return nps::internal_error("Failed to open connection " + std::to_string(opened + 1) + ": refused");
            return std::make_unique<Connection>(++opened, open_now);
        };
    }
};

}  // namespace

TEST_CASE("a given-back connection is lent again before another is opened")
{
    Counting c;
    nps::ConnectionPool<Connection> pool(c.opener(), 2);
    {
        auto first = pool.acquire();
        REQUIRE(first);
        CHECK((*first)->id == 1);
        auto second = pool.acquire();  // the first is still borrowed
        REQUIRE(second);
        CHECK((*second)->id == 2);
    }
    CHECK(c.open_now == 2);  // both idle, kept
    auto again = pool.acquire();
    REQUIRE(again);
    CHECK((*again)->id == 1);  // the last given back (second went back before first)
    CHECK(c.opened == 2);
}

TEST_CASE("connections given back beyond max_idle are closed")
{
    Counting c;
    nps::ConnectionPool<Connection> pool(c.opener(), 1);
    {
        auto a = pool.acquire();
        auto b = pool.acquire();
        auto d = pool.acquire();
        REQUIRE((a && b && d));
        CHECK(c.open_now == 3);
    }
    CHECK(c.open_now == 1);
}

TEST_CASE("a connection that cannot be opened is the error of acquire, and nothing is kept")
{
    Counting c;
    c.refuse = true;
    nps::ConnectionPool<Connection> pool(c.opener(), 2);
    auto refused = pool.acquire();
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message == "Failed to open connection 1: refused");
    c.refuse = false;
    auto opened = pool.acquire();
    REQUIRE(opened);
    CHECK((*opened)->id == 1);
}

TEST_CASE("a lease moved or assigned over gives its connection back exactly once")
{
    Counting c;
    nps::ConnectionPool<Connection> pool(c.opener(), 4);
    auto a = pool.acquire();
    auto b = pool.acquire();
    REQUIRE((a && b));
    std::optional<nps::ConnectionPool<Connection>::Lease> kept(std::move(*a));
    *kept = std::move(*b);  // connection 1 goes back; kept now holds 2
    CHECK((*kept)->id == 2);
    auto reused = pool.acquire();
    REQUIRE(reused);
    CHECK((*reused)->id == 1);
    kept.reset();
    auto next = pool.acquire();
    REQUIRE(next);
    CHECK((*next)->id == 2);
    CHECK(c.opened == 2);
}

TEST_CASE("threads borrowing at once never share a connection")
{
    Counting c;
    nps::ConnectionPool<Connection> pool(c.opener(), 8);
    std::vector<std::thread> threads;
    std::vector<int> clashes(4, 0);
    std::vector<std::unique_ptr<std::atomic<int>>> users;
    for (int i = 0; i < 64; ++i)
        users.push_back(std::make_unique<std::atomic<int>>(0));
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 2000; ++round) {
                auto lease = pool.acquire();
                if (!lease)
                    continue;
                auto& in_use = *users[static_cast<std::size_t>((*lease)->id) % users.size()];
                if (in_use.fetch_add(1) != 0)
                    ++clashes[static_cast<std::size_t>(t)];
                in_use.fetch_sub(1);
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    for (int clash : clashes)
        CHECK(clash == 0);
    CHECK(c.opened <= 4);
}
