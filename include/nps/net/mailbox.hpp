// SPDX-License-Identifier: Apache-2.0
// Mailbox: how other threads hand work to a Reactor's loop. An eventfd is
// watched on the loop; post() (any thread) queues a function and writes the
// eventfd; the loop runs the queued functions in order. A Poster, taken with
// poster(), keeps the queue alive on its own, so a helper thread may post
// after the Mailbox is gone: what arrives after close() (or destruction) is
// dropped, never run.
#pragma once

#include <functional>
#include <memory>

#include "nps/base/result.hpp"
#include "nps/net/reactor.hpp"

namespace nps::net {

using Poster = std::function<void(std::function<void()>)>;

class Mailbox {
public:
    // On the loop's thread (or before the loop runs).
    static Result<std::unique_ptr<Mailbox>> create(Reactor& reactor);
    ~Mailbox();  // close()
    Mailbox(const Mailbox&) = delete;
    Mailbox& operator=(const Mailbox&) = delete;

    // Thread-safe; nothing happens after close().
    void post(std::function<void()> work);
    // Thread-safe, and valid for as long as anyone holds it.
    Poster poster() const;
    // On the loop's thread: drops what is queued, stops watching the eventfd.
    // Idempotent.
    void close();

    struct Shared;

private:
    Mailbox(Reactor& reactor, std::shared_ptr<Shared> shared);
    void drain();

    Reactor& reactor_;
    std::shared_ptr<Shared> shared_;
    bool closed_ = false;
};

}  // namespace nps::net
