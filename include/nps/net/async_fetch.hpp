// SPDX-License-Identifier: Apache-2.0
// AsyncFetcher: guarded_request() and trusted_request() (guarded_fetch.hpp)
// on an event loop, with the same rules, options and errors, without
// blocking it:
//  - the transfers run on CurlMulti handles driven by the loop (one for
//    trusted requests, whose connections are kept alive between requests; one
//    for guarded requests, whose hops each use a fresh connection closed
//    afterwards, so a pinned CURLOPT_RESOLVE entry or connection serves only
//    the hop that admitted it);
//  - the destination guard's DNS step (getaddrinfo blocks) runs on a short
//    helper thread per hop and its answer is posted back to the loop
//    (EventLoop::post, through a Lifetime's poster, so it is dropped once the
//    fetcher is gone); an IP literal is admitted on the loop (nothing to resolve).
//    Every address is still checked before the hop starts, the connection is
//    pinned to them, and the socket callback refuses any other — exactly as
//    the blocking client does.
// The multi handles are made by the first request of each kind: loading
// libcurl, and the TLS, LDAP and Kerberos libraries it links, costs ~5 MB of
// resident memory, which a runner that never calls out does not pay.
// A request's Done runs on the loop, once, never inside the call that started
// it; abort() means it never runs. request.cancel is not used (abort() is
// the loop's way).
//
// The guard's resolver must outlive the lookups a helper thread still runs
// (each ends within the hop's time limit): the system resolver does.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "nps/base/result.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/event/lifetime.hpp"
#include "nps/net/curl_multi.hpp"
#include "nps/net/guarded_fetch.hpp"

namespace nps::net {

class AsyncFetcher {
public:
    using Id = std::uint64_t;  // never 0
    using Done = std::function<void(Result<FetchedResponse>)>;

    // On the loop's thread (or before the loop runs).
    static std::unique_ptr<AsyncFetcher> create(event::EventLoop& loop);
    // Aborts every request (no Done runs); helper threads still resolving
    // finish alone and their answers are dropped.
    ~AsyncFetcher();
    AsyncFetcher(const AsyncFetcher&) = delete;
    AsyncFetcher& operator=(const AsyncFetcher&) = delete;

    Id guarded(GuardedRequest request, Done done);
    Id trusted(const TrustedRequest& request, Done done);
    // No-op for an unknown or finished id.
    void abort(Id id);
    void abort_all();
    std::size_t active() const { return ops_.size(); }

    struct Op;

private:
    explicit AsyncFetcher(event::EventLoop& loop);
    Id add(std::unique_ptr<Op> op);
    // `made`, made now if it is not yet.
    Result<CurlMulti*> lazily_made(std::unique_ptr<CurlMulti>& made);
    void fail_later(Id id, Error error);
    void finish(Id id, Result<FetchedResponse> result);
    void next_hop(Id id);
    void admitted(Id id, Result<AdmittedDestination> admitted);
    void hop_done(Id id, int rc);

    event::EventLoop& loop_;
    event::Lifetime lifetime_;  // answers of resolver threads arriving after this fetcher are dropped
    std::unique_ptr<CurlMulti> trusted_multi_;  // null until the first trusted request
    std::unique_ptr<CurlMulti> guarded_multi_;  // null until the first guarded request
    std::map<Id, std::unique_ptr<Op>> ops_;
    Id next_id_ = 1;
};

}  // namespace nps::net
