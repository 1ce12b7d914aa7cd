// SPDX-License-Identifier: Apache-2.0
// Lifetime: drops the work posted for an object once the object is gone.
// The owner holds a Lifetime and posts through poster(loop) (itself, or a
// helper thread working for it); such work runs only if the Lifetime has not
// ended by the time the loop gets to it.
//
// poster() is called on the loop's thread; the Poster it makes
// may be called from any thread, even after the owner and the loop are gone.
// end() and the destructor run on the loop's thread, where the guarded work
// runs, so "not ended" holds for the whole of a run.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "nps/event/event_loop.hpp"

namespace nps::event {

class Lifetime {
public:
    Lifetime() = default;
    ~Lifetime() { end(); }
    Lifetime(const Lifetime&) = delete;
    Lifetime& operator=(const Lifetime&) = delete;

    // Idempotent: from here on, guarded work is dropped.
    void end() { alive_->store(false); }
    bool ended() const { return !alive_->load(); }

    // loop.poster(), each posted work guarded.
    Poster poster(const EventLoop& loop) const
    {
        return [alive = alive_, post = loop.poster()](std::function<void()> work) {
            post([alive, work = std::move(work)] {
                if (alive->load())
                    work();
            });
        };
    }

private:
    const std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
};

}  // namespace nps::event
