// SPDX-License-Identifier: Apache-2.0
#include "nps/net/response_stream.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace nps::net {

namespace {
// Sent bytes are dropped from the front of the buffer once this many pile up
// (or all of it went), so a long stream does not copy its tail on every chunk.
constexpr std::size_t kCompactBytes = 64 * 1024;
}  // namespace

ResponseStream::ResponseStream(std::size_t max_buffered) : max_buffered_(max_buffered) {}

bool ResponseStream::write(std::string_view bytes)
{
    if (gone_ || ended_)
        return false;
    if (bytes.empty())
        return true;
    if (buffer_.size() - offset_ + bytes.size() > max_buffered_) {
        // A reader this slow is dropped: the server closes the connection.
        // No on_gone here: the producer learns it from this return value.
        on_gone_ = nullptr;
        mark_gone();
        if (data_ready_)
            data_ready_();
        return false;
    }
    buffer_.append(bytes);
    if (data_ready_)
        data_ready_();
    return true;
}

void ResponseStream::end()
{
    if (gone_ || ended_)
        return;
    ended_ = true;
    if (data_ready_)
        data_ready_();
}

std::size_t ResponseStream::take(char* into, std::size_t max)
{
    const std::size_t n = std::min(max, buffer_.size() - offset_);
    std::memcpy(into, buffer_.data() + offset_, n);
    offset_ += n;
    if (offset_ == buffer_.size()) {
        buffer_.clear();
        offset_ = 0;
    } else if (offset_ >= kCompactBytes) {
        buffer_.erase(0, offset_);
        offset_ = 0;
    }
    return n;
}

void ResponseStream::mark_gone()
{
    if (gone_ || ended_)
        return;
    gone_ = true;
    std::string().swap(buffer_);
    offset_ = 0;
    if (auto callback = std::exchange(on_gone_, nullptr))
        callback();
}

}  // namespace nps::net
