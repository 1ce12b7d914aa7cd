// SPDX-License-Identifier: Apache-2.0
// The loop-driven guarded and trusted requests (async_fetch.hpp): the walk
// and the hops are guarded_walk.hpp's and hop.hpp's, as in the blocking
// client; only who waits differs.
#include "nps/net/async_fetch.hpp"

#include <system_error>
#include <thread>

#include "nps/proto/destination_policy.hpp"
#include "guarded_walk.hpp"
#include "hop.hpp"

namespace nps::net {

struct AsyncFetcher::Op {
    Done done;
    std::optional<detail::GuardedWalk> walk;  // guarded requests
    std::string url;                          // trusted requests
    std::unique_ptr<detail::Hop> hop;         // the hop in progress
    CurlMulti* multi = nullptr;
    CurlMulti::TransferId transfer = 0;
    event::EventLoop::TimerId timer = 0;      // a step waiting for the next round
};

AsyncFetcher::AsyncFetcher(event::EventLoop& loop) : loop_(loop) {}

std::unique_ptr<AsyncFetcher> AsyncFetcher::create(event::EventLoop& loop)
{
    return std::unique_ptr<AsyncFetcher>(new AsyncFetcher(loop));
}

Result<CurlMulti*> AsyncFetcher::lazily_made(std::unique_ptr<CurlMulti>& made)
{
    if (!made)
        made = NPS_TRY(CurlMulti::create(loop_));
    return made.get();
}

AsyncFetcher::~AsyncFetcher()
{
    lifetime_.end();  // answers of helper threads still resolving are dropped
    abort_all();
}

AsyncFetcher::Id AsyncFetcher::add(std::unique_ptr<Op> op)
{
    const Id id = next_id_++;
    ops_.emplace(id, std::move(op));
    return id;
}

void AsyncFetcher::abort(Id id)
{
    auto it = ops_.find(id);
    if (it == ops_.end())
        return;
    std::unique_ptr<Op> op = std::move(it->second);
    ops_.erase(it);
    loop_.cancel_timer(op->timer);
    if (op->multi && op->transfer)
        op->multi->abort(op->transfer);  // before the hop's easy handle goes
}

void AsyncFetcher::abort_all()
{
    while (!ops_.empty())
        abort(ops_.begin()->first);
}

void AsyncFetcher::finish(Id id, Result<FetchedResponse> result)
{
    auto it = ops_.find(id);
    if (it == ops_.end())
        return;
    Done done = std::move(it->second->done);
    abort(id);
    done(std::move(result));
}

// Done never runs inside the call that started the request.
void AsyncFetcher::fail_later(Id id, Error error)
{
    ops_.at(id)->timer = loop_.add_timer_after(std::chrono::milliseconds(0),
                                               [this, id, error = std::move(error)]() mutable {
                                                   ops_.at(id)->timer = 0;
                                                   finish(id, std::move(error));
                                               });
}

AsyncFetcher::Id AsyncFetcher::trusted(const TrustedRequest& request, Done done)
{
    auto op = std::make_unique<Op>();
    op->done = std::move(done);
    op->url = request.url;
    Op* raw = op.get();
    const Id id = add(std::move(op));
    TrustedRequest uncancellable = request;
    uncancellable.cancel = nullptr;
    auto options = detail::trusted_hop_options(uncancellable);
    if (!options) {
        fail_later(id, options.error());
        return id;
    }
    auto hop = detail::Hop::prepare(std::move(*options));
    if (!hop) {
        fail_later(id, hop.error());
        return id;
    }
    raw->hop = std::move(*hop);
    auto multi = lazily_made(trusted_multi_);
    if (!multi) {
        fail_later(id, multi.error());
        return id;
    }
    auto transfer = (*multi)->start(raw->hop->handle(), [this, id](CURLcode rc) {
        auto it = ops_.find(id);
        if (it == ops_.end())
            return;
        Op& running = *it->second;
        running.transfer = 0;
        auto result = running.hop->finish(rc);
        if (!result)
            finish(id, result.error());
        else
            finish(id, detail::trusted_response(std::move(*result), running.url));
    });
    if (!transfer) {
        fail_later(id, internal_error(raw->hop->what() + " failed: " + transfer.error().describe()));
        return id;
    }
    raw->multi = *multi;
    raw->transfer = *transfer;
    return id;
}

AsyncFetcher::Id AsyncFetcher::guarded(GuardedRequest request, Done done)
{
    request.cancel = nullptr;
    auto op = std::make_unique<Op>();
    op->done = std::move(done);
    op->walk.emplace(std::move(request), std::nullopt);
    const Id id = add(std::move(op));
    if (auto begun = ops_.at(id)->walk->begin(); !begun) {
        fail_later(id, begun.error());
        return id;
    }
    // Through the loop, so that even an IP literal's Done is not run
    // inside this call.
    ops_.at(id)->timer = loop_.add_timer_after(std::chrono::milliseconds(0), [this, id] {
        ops_.at(id)->timer = 0;
        next_hop(id);
    });
    return id;
}

void AsyncFetcher::next_hop(Id id)
{
    auto it = ops_.find(id);
    if (it == ops_.end())
        return;
    detail::GuardedWalk& walk = *it->second->walk;
    auto left = walk.time_left();
    if (!left)
        return finish(id, left.error());
    const DestinationGuard& guard = *walk.request().guard;
    const std::string url = walk.url();
    const std::string what = walk.what();
    auto destination = proto::check_destination_url(url, guard.rules(), what);
    if (!destination)
        return finish(id, destination.error());
    if (destination->literal)
        return admitted(id, guard.admit(url, what, *left));  // nothing to resolve
    try {
        std::thread([guard, url, what, timeout = *left, id, post = lifetime_.poster(loop_), this] {
            auto answer = guard.admit(url, what, timeout);
            // Runs on the loop only while this fetcher exists.
            post([this, id, answer = std::move(answer)]() mutable { admitted(id, std::move(answer)); });
        }).detach();
    } catch (const std::system_error& e) {
        finish(id, internal_error(what + ": cannot start the resolver thread: " + e.what()));
    }
}

void AsyncFetcher::admitted(Id id, Result<AdmittedDestination> admitted)
{
    auto it = ops_.find(id);
    if (it == ops_.end())
        return;
    if (!admitted)
        return finish(id, admitted.error());
    Op& op = *it->second;
    auto left = op.walk->time_left();
    if (!left)
        return finish(id, left.error());
    auto hop = detail::Hop::prepare(op.walk->hop_options(*admitted, *left));
    if (!hop)
        return finish(id, op.walk->fail(hop.error().describe()));
    op.hop = std::move(*hop);
    auto multi = lazily_made(guarded_multi_);
    if (!multi)
        return finish(id, multi.error());
    auto transfer = (*multi)->start(op.hop->handle(), [this, id](CURLcode rc) { hop_done(id, rc); });
    if (!transfer)
        return finish(id, op.walk->fail(op.hop->what() + " failed: " + transfer.error().describe()));
    op.multi = *multi;
    op.transfer = *transfer;
}

void AsyncFetcher::hop_done(Id id, int rc)
{
    auto it = ops_.find(id);
    if (it == ops_.end())
        return;
    Op& op = *it->second;
    op.transfer = 0;
    op.multi = nullptr;
    auto result = op.hop->finish(static_cast<CURLcode>(rc));
    op.hop.reset();
    if (!result)
        return finish(id, op.walk->fail(result.error().describe()));
    auto answer = op.walk->after(std::move(*result));
    if (!answer)
        return finish(id, answer.error());
    if (*answer)
        return finish(id, std::move(**answer));
    next_hop(id);
}

}  // namespace nps::net
