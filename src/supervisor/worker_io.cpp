// SPDX-License-Identifier: Apache-2.0
// A worker's stdio on the loop: the stdin socket (DelegateFrame, cancel
// frame), and stdout/stderr read as they become readable. Every read is
// activity for the idle limit; stdout goes through the LineFramer and the
// StreamDecoder, log bytes of both streams to the rotating logs.
#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nps/supervisor/supervisor.hpp"
#include "worker.hpp"

namespace nps::supervisor {

namespace {

// Reads per readiness event before the loop serves others: a flooding
// worker gets 256 KiB per round, then waits its turn.
constexpr int kReadsPerEvent = 4;

}  // namespace

Result<void> Supervisor::register_io(Worker& w)
{
    NPS_TRY_VOID(loop_.add_fd(w.child.pidfd(), EPOLLIN, [this, &w](std::uint32_t) { on_exit(w); }));
    NPS_TRY_VOID(loop_.add_fd(w.out.get(), EPOLLIN, [this, &w](std::uint32_t) { on_output(w, LogStream::out); }));
    NPS_TRY_VOID(loop_.add_fd(w.err.get(), EPOLLIN, [this, &w](std::uint32_t) { on_output(w, LogStream::err); }));
    return {};
}

void Supervisor::send_stdin(Worker& w, std::string bytes)
{
    if (!w.in)
        return;  // closed: the worker has gone or stopped reading
    w.in_pending += bytes;
    on_stdin(w);
}

void Supervisor::on_stdin(Worker& w)
{
    while (!w.in_pending.empty()) {
        ssize_t n = ::send(w.in.get(), w.in_pending.data(), w.in_pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            w.in_pending.erase(0, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (!w.in_watched) {
                if (auto added = loop_.add_fd(w.in.get(), EPOLLOUT, [this, &w](std::uint32_t) { on_stdin(w); });
                    !added) {
                    w.warnings.push_back("stdin: " + added.error().describe());
                    break;
                }
                w.in_watched = true;
            }
            return;
        }
        // EPIPE / ECONNRESET: the worker closed its stdin (or exited). What
        // it did not read is of no use to anyone.
        w.in_pending.clear();
        w.in_close_when_sent = true;
        break;
    }
    if (w.in_watched) {
        loop_.remove_fd(w.in.get());
        w.in_watched = false;
    }
    if (w.in_close_when_sent)
        close_stdin(w);
}

void Supervisor::close_stdin(Worker& w)
{
    if (!w.in)
        return;
    if (!w.in_pending.empty()) {
        w.in_close_when_sent = true;  // after the rest is sent
        return;
    }
    if (w.in_watched) {
        loop_.remove_fd(w.in.get());
        w.in_watched = false;
    }
    w.in.reset();  // EOF on the worker's stdin
}

// Where the LineFramer's pieces of stdout go.
class Supervisor::StdoutSink final : public LineFramer::Sink {
public:
    StdoutSink(Supervisor& supervisor, Worker& worker) : supervisor_(supervisor), worker_(worker) {}
    void log(std::string_view bytes) override { worker_.out_log.write(bytes); }
    void candidate(std::string_view line) override { supervisor_.handle_candidate(worker_, line); }
    void oversized() override { supervisor_.handle_oversized(worker_); }

private:
    Supervisor& supervisor_;
    Worker& worker_;
};

void Supervisor::on_output(Worker& w, LogStream stream)
{
    UniqueFd& fd = stream == LogStream::out ? w.out : w.err;
    for (int round = 0; round < kReadsPerEvent && fd; ++round) {
        ssize_t n = ::read(fd.get(), read_buffer_.data(), read_buffer_.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n > 0) {
            w.last_activity = event::EventLoop::now();
            const std::string_view bytes(read_buffer_.data(), static_cast<std::size_t>(n));
            if (stream == LogStream::err) {
                w.err_log.write(bytes);
            } else {
                StdoutSink sink(*this, w);
                w.framer.feed(bytes, sink);
            }
            if (static_cast<std::size_t>(n) < read_buffer_.size())
                return;  // the pipe is empty now
            continue;
        }
        // End of stream (or a read error, which ends it just the same).
        if (stream == LogStream::out) {
            StdoutSink sink(*this, w);
            w.framer.finish(sink);
        }
        loop_.remove_fd(fd.get());
        fd.reset();
        return;
    }
}

void Supervisor::drain(Worker& w, LogStream stream)
{
    // After the exit every writer is gone (the sandbox's pid namespace dies
    // with its first process), so this ends at EOF; EAGAIN ends it too.
    UniqueFd& fd = stream == LogStream::out ? w.out : w.err;
    while (fd) {
        ssize_t n = ::read(fd.get(), read_buffer_.data(), read_buffer_.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0) {
            const std::string_view bytes(read_buffer_.data(), static_cast<std::size_t>(n));
            if (stream == LogStream::err) {
                w.err_log.write(bytes);
            } else {
                StdoutSink sink(*this, w);
                w.framer.feed(bytes, sink);
            }
            continue;
        }
        if (stream == LogStream::out) {
            StdoutSink sink(*this, w);
            w.framer.finish(sink);
        }
        loop_.remove_fd(fd.get());
        fd.reset();
    }
}

void Supervisor::handle_candidate(Worker& w, std::string_view line)
{
    auto log_line = [&] {
        std::string text(line);
        text.push_back('\n');
        w.out_log.write(text);
    };
    if (w.settlement) {
        log_line();  // the node's fate is decided; the rest is output
        return;
    }
    auto event = w.decoder.accept(line);
    if (!event) {
        log_line();  // the offending line, for whoever debugs the worker
        settle_violation(w, event.error());
        return;
    }
    switch (event->kind) {
    case StreamEvent::Kind::log: log_line(); return;
    case StreamEvent::Kind::progress:
        if (w.callbacks.on_progress)
            w.callbacks.on_progress(w.id, event->seq, event->data_json);
        return;
    case StreamEvent::Kind::final_data:
    case StreamEvent::Kind::final_error: settle_final(w, *event); return;
    }
}

void Supervisor::handle_oversized(Worker& w)
{
    if (!w.settlement && !w.decoder.finished())
        settle_violation(w, w.decoder.oversized_error());
}

}  // namespace nps::supervisor
