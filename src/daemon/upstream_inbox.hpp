// SPDX-License-Identifier: Apache-2.0
// UpstreamInbox: takes the TaskFrames of an inbox on a remote npsd (or any
// server of the npsd inbox API, a second nps-runner included) into the local
// durable inbox, so this runner stands in for the reference runner in an
// npsd deployment (docs/upstream.md; `serve --upstream-npsd URL --inbox NID`).
//
// One thread loops: long-poll peek (GET {url}/v1/inbox/{nid}?wait=&batch=),
// then for each message in order a local deposit, committed with the API's
// durability (synchronous=FULL: on disk when it returns), and only then the
// upstream ack (DELETE {url}/v1/inbox/{nid}/{message_id}). A crash between
// the two leaves the message upstream; its next peek deposits it again,
// which the local inbox answers as an idempotent duplicate and the ack
// follows. So nothing is lost and nothing runs twice.
//
// A message that can never be deposited (not a TaskFrame, a conflicting
// task_id: a 4xx refusal other than 408/429) is acked and logged with its
// code, so it cannot block the inbox; a refusal that may pass later (inbox
// full, store busy or out of space) and every transport failure back off
// (1 s doubling to 30 s) and retry the same message. The upstream's
// priority and remaining TTL carry over.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "nps/base/result.hpp"
#include "nps/config/config.hpp"
#include "nps/store/store_pool.hpp"

namespace nps::daemon {

class UpstreamInbox {
public:
    // Starts pulling config.upstream.inbox (or config.inboxes[0]) from
    // config.upstream.npsd_url, which must be set. `deposited` runs on the
    // pulling thread after each new local deposit (wake the claim loop).
    static Result<std::unique_ptr<UpstreamInbox>> start(const config::Config& config, store::StorePool& stores,
                                                         std::function<void()> deposited);
    // Stops within about a second (an open long-poll is abandoned) and joins.
    ~UpstreamInbox();

    UpstreamInbox(const UpstreamInbox&) = delete;
    UpstreamInbox& operator=(const UpstreamInbox&) = delete;

    const std::string& inbox() const { return inbox_; }

private:
    UpstreamInbox(const config::Config& config, store::StorePool& stores, std::function<void()> deposited,
                  std::string inbox);
    void run();
    // One peek and what it brought; false when the caller should back off.
    bool pull_once();
    // Sleeps up to `ms` or until stopped.
    void pause(unsigned ms);

    const config::Config config_;  // as at start: inbox limits, [upstream]
    const config::UpstreamPolicy& policy_ = config_.upstream;
    store::StorePool& stores_;
    std::function<void()> deposited_;
    std::string inbox_;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::thread thread_;
};

}  // namespace nps::daemon
