// SPDX-License-Identifier: Apache-2.0
// MhdServer (mhd_server.hpp): streamed answers. MHD pulls a ResponseStream
// through StreamReader::read; while the stream has nothing to send, its
// connection is parked (suspended, watched for a hang-up) until the producer
// writes, ends or lets go.
#include "mhd_server.hpp"

namespace nps::net::detail {

void MhdServer::park(StreamReader& reader)
{
    reader.parked = true;
    parked_streams_.insert(&reader);
    sym_MHD_suspend_connection(reader.connection);
    if (reader.state != nullptr)
        watch_fd(*reader.state);
}

void MhdServer::unpark(StreamReader& reader)
{
    if (!reader.parked)
        return;
    forget(reader);
    sym_MHD_resume_connection(reader.connection);
    wake_owner();
}

void MhdServer::forget(StreamReader& reader)
{
    if (reader.parked && reader.state != nullptr)
        unwatch_fd(reader.state->fd);
    reader.parked = false;
    parked_streams_.erase(&reader);
}

void StreamReader::attach(StreamReader& reader)
{
    reader.stream->data_ready_ = [r = &reader] {
        if (r->parked)
            r->server->unpark(*r);
    };
}

ssize_t StreamReader::read(void* cls, std::uint64_t /*pos*/, char* into, std::size_t max)
{
    auto& reader = *static_cast<StreamReader*>(cls);
    ResponseStream& stream = *reader.stream;
    if (stream.gone())
        return MHD_CONTENT_READER_END_WITH_ERROR;  // closes the connection
    if (stream.has_data())
        return static_cast<ssize_t>(stream.take(into, max));
    if (stream.ended())
        return MHD_CONTENT_READER_END_OF_STREAM;
    reader.server->park(reader);
    return 0;
}

void StreamReader::release(void* cls)
{
    auto* reader = static_cast<StreamReader*>(cls);
    reader->server->forget(*reader);
    if (reader->state != nullptr && reader->state->stream == reader)
        reader->state->stream = nullptr;
    reader->stream->data_ready_ = nullptr;
    reader->stream->mark_gone();  // a no-op after end()
    delete reader;
}

void StreamReader::abandon()
{
    server->unpark(*this);
    stream->mark_gone();
}

}  // namespace nps::net::detail
