// SPDX-License-Identifier: Apache-2.0
#include "live_feeds.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"

namespace nps::api {

namespace {

using std::chrono::milliseconds;

// Read from a followed log per poll at most (the rest: next poll).
constexpr std::size_t kLogBytesPerPoll = 256 * 1024;

bool ends_task(const std::string& name)
{
    return name == "task:completed" || name == "task:failed" || name == "task:cancelled" || name == "inbox:expired";
}

proto::TaskState final_state(const std::string& name)
{
    using proto::TaskState;
    return name == "task:completed"   ? TaskState::completed
           : name == "task:cancelled" ? TaskState::cancelled
                                      : TaskState::failed;
}

// "<node>:completed" and the like: the node will start no more workers
// (a saga's compensation aside).
bool ends_node(const std::string& name, const std::string& node_id)
{
    if (name.size() <= node_id.size() + 1 || name.compare(0, node_id.size(), node_id) != 0 ||
        name[node_id.size()] != ':')
        return false;
    const std::string_view what = std::string_view(name).substr(node_id.size() + 1);
    return what == "completed" || what == "failed" || what == "skipped" || what == "compensated";
}

// One Server-Sent Event. JSON text holds no raw newline, so one data line.
std::string sse_event(std::int64_t id, const std::string& task_id, const store::TaskEvent& e)
{
    Json data = event_json(e);
    data["task_id"] = task_id;
    return "id: " + std::to_string(id) + "\ndata: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) +
           "\n\n";
}

std::string sse_end(const std::string& task_id, std::string_view state)
{
    return "event: end\ndata: " + Json{{"task_id", task_id}, {"state", state}}.dump() + "\n\n";
}

net::HttpResponse stream_response(const std::shared_ptr<net::ResponseStream>& stream, const char* content_type)
{
    net::HttpResponse response;
    response.content_type = content_type;
    response.stream = stream;
    response.headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
    return response;
}

}  // namespace

LiveFeeds::LiveFeeds(store::StorePool& stores, event::EventLoop& loop) : stores_(stores), loop_(loop) {}

LiveFeeds::~LiveFeeds()
{
    end_all();
}

Result<void> LiveFeeds::admit() const
{
    if (ending_)
        return protocol_error(proto::code::kNpsServerUnavailable, "The daemon is shutting down");
    if (open_feeds() >= limits::kMaxLiveFeeds)
        return protocol_error(proto::code::kNpsServerUnavailable, "Too many live feeds open (" +
                                                                      std::to_string(limits::kMaxLiveFeeds) +
                                                                      "); close one or poll instead");
    return {};
}

std::uint64_t LiveFeeds::add_stream(const std::shared_ptr<net::ResponseStream>& stream)
{
    const std::uint64_t id = next_id_++;
    stream->on_gone([this, id] { drop(id); });
    schedule(milliseconds(0));
    return id;
}

Result<net::HttpResponse> LiveFeeds::follow_events(const std::optional<std::string>& task_id,
                                                   std::optional<std::int64_t> after)
{
    NPS_TRY_VOID(admit());
    auto store = NPS_TRY(stores_.acquire());
    EventFeed feed;
    if (task_id) {
        const auto task = NPS_TRY(store->task(*task_id));  // NOP-TASK-NOT-FOUND
        if (proto::is_terminal(task.state))
            feed.ended_state = task.state;
    }
    feed.stream = std::make_shared<net::ResponseStream>();
    feed.task_id = task_id;
    feed.cursor = after ? std::max<std::int64_t>(*after, 0) : task_id ? 0 : NPS_TRY(store->last_event_pos());
    feed.last_write = loop_.now();
    // Browsers' EventSource reconnects after this long if the stream breaks.
    feed.stream->write("retry: 2000\n\n");
    auto response = stream_response(feed.stream, "text/event-stream");
    events_.emplace(add_stream(feed.stream), std::move(feed));
    return response;
}

Result<net::HttpResponse> LiveFeeds::follow_log(const LogFollowRequest& request)
{
    NPS_TRY_VOID(admit());
    LogFeed feed;
    feed.stream = std::make_shared<net::ResponseStream>();
    feed.request = request;
    auto response = stream_response(feed.stream, "text/plain; charset=utf-8");
    // A finished worker's log is where the follow starts when none runs now.
    const auto running = running_log_ ? running_log_(request.task_id, request.node_id) : std::nullopt;
    if (running)
        open_log(feed, *running);
    else if (request.finished_dir)
        open_log(feed, *request.finished_dir);
    if (!drain(feed))
        return response;  // (cannot happen: nobody reads yet)
    logs_.emplace(add_stream(feed.stream), std::move(feed));
    return response;
}

void LiveFeeds::changed()
{
    if (open_feeds() > 0)
        schedule(milliseconds(0));
}

void LiveFeeds::end_all()
{
    ending_ = true;
    loop_.cancel_timer(std::exchange(timer_, 0));
    auto events = std::move(events_);
    auto logs = std::move(logs_);
    for (auto& [id, feed] : events) {
        feed.stream->on_gone(nullptr);
        feed.stream->end();
    }
    for (auto& [id, feed] : logs) {
        feed.stream->on_gone(nullptr);
        feed.stream->end();
    }
}

void LiveFeeds::schedule(milliseconds delay)
{
    const TimePoint due = loop_.now() + delay;
    if (timer_ != 0 && timer_due_ <= due)
        return;
    loop_.cancel_timer(timer_);
    timer_due_ = due;
    timer_ = loop_.add_timer(due, [this] {
        timer_ = 0;
        poll();
    });
}

void LiveFeeds::drop(std::uint64_t id)
{
    events_.erase(id);
    logs_.erase(id);
}

void LiveFeeds::poll()
{
    bool more = false;
    std::vector<std::uint64_t> done;
    for (auto& [id, feed] : events_)
        if (!poll_events(feed, more))
            done.push_back(id);
    for (auto& [id, feed] : logs_)
        if (!poll_log(feed))
            done.push_back(id);
    for (std::uint64_t id : done) {
        auto stream = events_.count(id) ? events_[id].stream : logs_[id].stream;
        stream->on_gone(nullptr);
        drop(id);
    }
    if (open_feeds() > 0)
        schedule(more ? milliseconds(0) : milliseconds(limits::kLiveFeedPollMs));
}

bool LiveFeeds::poll_events(EventFeed& feed, bool& more)
{
    if (feed.stream->gone())
        return false;
    auto store = stores_.acquire();
    if (!store)
        return true;  // try again next poll
    auto batch = (*store)->events_after(
        store::EventQuery{.task_id = feed.task_id, .after = feed.cursor, .limit = limits::kLiveFeedBatchEvents});
    if (!batch)
        return true;
    for (const auto& [task_id, event] : *batch) {
        feed.cursor = feed.task_id ? event.seq : event.pos;
        if (!feed.stream->write(sse_event(feed.cursor, task_id, event)))
            return false;
        if (feed.task_id && ends_task(event.name)) {
            feed.stream->write(sse_end(task_id, proto::to_string(final_state(event.name))));
            feed.stream->end();
            return false;
        }
    }
    more |= batch->size() == limits::kLiveFeedBatchEvents;
    const TimePoint now = loop_.now();
    if (!batch->empty()) {
        feed.last_write = now;
        return true;
    }
    if (feed.task_id && feed.ended_state) {
        // The task was over when the feed opened (a resume after its end):
        // its log is sent, the feed ends.
        feed.stream->write(sse_end(*feed.task_id, proto::to_string(*feed.ended_state)));
        feed.stream->end();
        return false;
    }
    if (now - feed.last_write < std::chrono::seconds(limits::kLiveFeedKeepaliveSeconds))
        return true;
    feed.last_write = now;
    if (feed.task_id) {
        // A quiet task's feed also notices the task being removed.
        auto task = (*store)->task(*feed.task_id);
        if (!task && task.error().code == proto::code::kNopTaskNotFound) {
            feed.stream->write(sse_end(*feed.task_id, "REMOVED"));
            feed.stream->end();
            return false;
        }
    }
    return feed.stream->write(": keepalive\n\n");
}

bool LiveFeeds::poll_log(LogFeed& feed)
{
    if (feed.stream->gone())
        return false;
    const LogFollowRequest& r = feed.request;
    // The node's and task's news since the last poll: has either ended?
    if (auto store = stores_.acquire()) {
        auto batch = (*store)->events_after(
            store::EventQuery{.task_id = r.task_id, .after = feed.event_cursor, .limit = limits::kLiveFeedBatchEvents});
        if (batch) {
            for (const auto& [task_id, event] : *batch) {
                feed.event_cursor = event.seq;
                if (ends_task(event.name) || ends_node(event.name, r.node_id))
                    feed.node_or_task_ended = true;
            }
        } else if (batch.error().code == proto::code::kNopTaskNotFound) {
            feed.node_or_task_ended = true;
        }
    }
    const auto running = running_log_ ? running_log_(r.task_id, r.node_id) : std::nullopt;
    if (!drain(feed))
        return false;
    if (running && *running != feed.dir) {
        open_log(feed, *running);  // a new worker (a retry): follow it from its start
        if (!drain(feed))
            return false;
    }
    if (!running && feed.node_or_task_ended) {
        feed.stream->end();
        return false;
    }
    return true;
}

void LiveFeeds::open_log(LogFeed& feed, const std::string& dir)
{
    feed.dir = dir;
    feed.fd.reset();
    const std::string path = dir + "/" + feed.request.stream + ".log";
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd)
        return;  // nothing written yet (the file appears with the first byte): next poll
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return;
    if (feed.first_open && feed.request.tail_bytes < static_cast<std::size_t>(st.st_size))
        ::lseek(fd.get(), st.st_size - static_cast<off_t>(feed.request.tail_bytes), SEEK_SET);
    feed.first_open = false;
    feed.fd = std::move(fd);
    feed.inode = st.st_ino;
}

bool LiveFeeds::drain(LogFeed& feed)
{
    if (!feed.fd && !feed.dir.empty())
        open_log(feed, feed.dir);  // the worker had written nothing when it was first looked at
    if (!feed.fd)
        return !feed.stream->gone();
    char buffer[16 * 1024];
    std::size_t budget = kLogBytesPerPoll;
    while (budget > 0) {
        const ssize_t n = ::read(feed.fd.get(), buffer, std::min(sizeof buffer, budget));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (!feed.stream->write(std::string_view(buffer, static_cast<std::size_t>(n))))
            return false;
        budget -= static_cast<std::size_t>(n);
    }
    if (budget > 0) {
        // At the end of the file: if the log rotated, go on with the new file.
        struct stat st {};
        const std::string path = feed.dir + "/" + feed.request.stream + ".log";
        if (::stat(path.c_str(), &st) == 0 && st.st_ino != feed.inode) {
            open_log(feed, feed.dir);
            return drain(feed);
        }
    } else {
        schedule(milliseconds(0));
    }
    return !feed.stream->gone();
}

}  // namespace nps::api
