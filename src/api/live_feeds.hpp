// SPDX-License-Identifier: Apache-2.0
// Live feeds (docs/api.md "Live feeds"): the event log as Server-Sent Events
// (one task's, or every task's) and a node's worker log followed as it is
// written, each a streamed HTTP answer (net::ResponseStream).
//
// One mechanism serves them all: while any feed is open, a timer on the loop
// looks every limits::kLiveFeedPollMs for what was written since each
// feed's cursor (another connection, thread or process sharing runner.db
// writes too, and the log files grow under the supervisor), and changed()
// makes it look at once for this process's own writes. A feed whose client
// goes away is dropped at once (the server watches for hang-ups); at most
// limits::kMaxLiveFeeds are open (more: 503 NPS-SERVER-UNAVAILABLE).
//
// Event streams: each event is `id: <cursor>` and `data: <JSON>` (the task
// JSON's event shape plus task_id and pos); the cursor is the task's seq on
// a task's feed and the log-wide pos on the all-tasks feed, so Last-Event-ID
// resumes either. A task's feed ends with `event: end` (data: the task's
// final state) after the event that ended the task, or when the task is
// removed. A quiet stream gets a `: keepalive` comment every
// limits::kLiveFeedKeepaliveSeconds.
//
// Log follows: text/plain, the tail first, then what the node's workers
// write (a retry's new worker is followed on), ending once no worker of the
// node runs and the node or the task has ended.
//
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/net/http_server.hpp"
#include "nps/proto/states.hpp"
#include "nps/store/store_pool.hpp"

namespace nps::api {

// The log directory of a node's running worker (nullopt: none runs).
using RunningLogLookup =
    std::function<std::optional<std::string>(const std::string& task_id, const std::string& node_id)>;

struct LogFollowRequest {
    std::string task_id;
    std::string node_id;
    std::string stream = "stderr";            // "stderr" or "stdout"
    std::size_t tail_bytes = 0;               // of the log there is now, sent first
    std::optional<std::string> finished_dir;  // the node's last finished worker's log, if any
};

class LiveFeeds {
public:
    LiveFeeds(store::StorePool& stores, event::EventLoop& loop);
    ~LiveFeeds();
    LiveFeeds(const LiveFeeds&) = delete;
    LiveFeeds& operator=(const LiveFeeds&) = delete;

    void set_running_log_lookup(RunningLogLookup lookup) { running_log_ = std::move(lookup); }

    // A task's events after seq `after` (NOP-TASK-NOT-FOUND for an unknown
    // task), or, without task_id, every task's after pos `after` (nullopt:
    // from now on).
    Result<net::HttpResponse> follow_events(const std::optional<std::string>& task_id,
                                            std::optional<std::int64_t> after);
    Result<net::HttpResponse> follow_log(const LogFollowRequest& request);

    // Something was written in this process: look now.
    void changed();
    // Ends every feed (the daemon stops) and refuses new ones.
    void end_all();
    std::size_t open_feeds() const { return events_.size() + logs_.size(); }

private:
    using TimePoint = event::EventLoop::TimePoint;

    struct EventFeed {
        std::shared_ptr<net::ResponseStream> stream;
        std::optional<std::string> task_id;
        std::int64_t cursor = 0;
        TimePoint last_write{};
        std::optional<proto::TaskState> ended_state;  // the task was over when the feed opened
    };

    struct LogFeed {
        std::shared_ptr<net::ResponseStream> stream;
        LogFollowRequest request;
        std::string dir;   // the worker log directory followed now, "" while none
        UniqueFd fd;
        ino_t inode = 0;
        bool first_open = true;       // the tail applies to the first file only
        std::int64_t event_cursor = 0;  // the task's events read so far (seq)
        bool node_or_task_ended = false;
    };

    Result<void> admit() const;
    std::uint64_t add_stream(const std::shared_ptr<net::ResponseStream>& stream);
    void schedule(std::chrono::milliseconds delay);
    void poll();
    // false: the feed is done (ended or its client gone) and is dropped.
    bool poll_events(EventFeed& feed, bool& more);
    bool poll_log(LogFeed& feed);
    void open_log(LogFeed& feed, const std::string& dir);
    // Copies what the followed file holds beyond the read offset; false if
    // the client is gone.
    bool drain(LogFeed& feed);
    void drop(std::uint64_t id);

    store::StorePool& stores_;
    event::EventLoop& loop_;
    RunningLogLookup running_log_;
    std::map<std::uint64_t, EventFeed> events_;
    std::map<std::uint64_t, LogFeed> logs_;
    std::uint64_t next_id_ = 1;
    event::EventLoop::TimerId timer_ = 0;
    TimePoint timer_due_{};
    bool ending_ = false;
};

}  // namespace nps::api
