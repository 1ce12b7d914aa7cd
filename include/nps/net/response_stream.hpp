// SPDX-License-Identifier: Apache-2.0
// A response body written over time: Server-Sent Events, a followed log.
//
// The handler answers with an HttpResponse whose `stream` is set (a
// LoopHttpServer only; an HttpServer answers such a response 500). The
// response goes out with chunked transfer encoding; the producer keeps its
// shared_ptr and calls write() as data comes, end() when the body is done.
// Everything on the server's thread (the owner's loop), like Responder.
//
// Back-pressure: at most `max_buffered` bytes wait for a slow client; a write
// beyond that closes the connection (the client reconnects and resumes, as
// Server-Sent Events clients do), so a reader that stops reading cannot grow
// the daemon's memory. A client that goes away is noticed at once (the
// connection is watched for hang-up while it waits for data), and so is the
// server stopping: write() then returns false and the on_gone callback runs
// once, so the producer can drop the stream.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "nps/base/limits.hpp"

namespace nps::net {

namespace detail {
struct StreamReader;
}

class ResponseStream {
public:
    explicit ResponseStream(std::size_t max_buffered = limits::kMaxHttpStreamBufferBytes);
    ResponseStream(const ResponseStream&) = delete;
    ResponseStream& operator=(const ResponseStream&) = delete;

    // Queues bytes for the client; false when the client is gone (or was
    // just dropped for reading too slowly) or after end().
    bool write(std::string_view bytes);
    // The body is complete once what was written has gone out.
    void end();
    // The answer will not go out after all (its client left before the
    // server took it): the stream becomes gone and on_gone runs. For the
    // server, and for a handler whose Responder could not answer.
    void cancel() { mark_gone(); }
    // The client went away, was dropped, or the server stopped.
    bool gone() const { return gone_; }
    bool ended() const { return ended_; }
    // Called once, from the server, when the client goes away or the server
    // stops (not after end(), and not when write() returns false: the
    // producer knows then); replaces an earlier callback.
    void on_gone(std::function<void()> callback) { on_gone_ = std::move(callback); }

private:
    friend struct detail::StreamReader;

    // The server's side.
    std::size_t take(char* into, std::size_t max);
    bool has_data() const { return offset_ < buffer_.size(); }
    void mark_gone();

    std::size_t max_buffered_;
    std::string buffer_;
    std::size_t offset_ = 0;   // bytes of buffer_ already sent
    bool ended_ = false;
    bool gone_ = false;
    std::function<void()> on_gone_;
    std::function<void()> data_ready_;  // set by the server: resume the connection
};

}  // namespace nps::net
