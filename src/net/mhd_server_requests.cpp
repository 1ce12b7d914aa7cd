// SPDX-License-Identifier: Apache-2.0
// MhdServer (mhd_server.hpp): its requests. The body is collected up to the
// limit, the handler is called once with a Responder, the connection is
// suspended until an answer is given, and the answer is queued (a buffer or
// a stream).
#include <exception>
#include <string>
#include <utility>

#include "listen_socket.hpp"
#include "mhd_request.hpp"
#include "mhd_server.hpp"

namespace nps::net {

namespace detail {

namespace {

// What a streamed answer hands MHD per read at most.
constexpr std::size_t kStreamChunkBytes = 16 * 1024;

void free_string(void* cls)
{
    delete static_cast<std::string*>(cls);
}

}  // namespace

MHD_Result MhdServer::on_access(void* cls, MHD_Connection* connection, const char* url, const char* method,
                                const char* /*version*/, const char* upload_data, size_t* upload_data_size,
                                void** con_cls)
{
    auto* listener = static_cast<Listener*>(cls);
    MhdServer& server = *listener->server;
    try {
        auto* context = static_cast<RequestContext*>(*con_cls);
        if (context == nullptr) {
            if (server.stopping_)
                return MHD_NO;
            // First call: headers are in, no body yet.
            context = new RequestContext;
            context->connection = connection;
            context->state = state_of(connection);
            *con_cls = context;
            if (context->state != nullptr)
                context->state->in_request = true;
            const bool bad_target = context->state != nullptr && context->state->bad_target;
            if (bad_target || ambiguous_framing(connection)) {
                // Answered before any body is read; MHD closes the connection after it.
                if (context->state != nullptr)
                    context->state->bad_target = false;
                context->handled = true;
                context->answer = bad_target ? bad_target_response() : bad_framing_response();
                return server.respond(*listener, connection, url, method, *context);
            }
            const auto declared = declared_content_length(connection);
            if (declared && *declared > server.options_.max_body_bytes && expects_continue(connection)) {
                // The client waits for "100 Continue": answer now and it never sends the body.
                context->body_too_large = true;
                return server.respond(*listener, connection, url, method, *context);
            }
            return MHD_YES;
        }
        if (*upload_data_size > 0) {
            const std::size_t max = server.options_.max_body_bytes;
            if (!context->body_too_large) {
                if (context->body.size() + *upload_data_size > max) {
                    context->body_too_large = true;
                    std::string().swap(context->body);
                } else {
                    context->body.append(upload_data, *upload_data_size);
                }
            }
            *upload_data_size = 0;  // consumed (or drained)
            return MHD_YES;
        }
        return server.respond(*listener, connection, url, method, *context);
    } catch (const std::exception& e) {
        log_line(std::string("request failed: ") + e.what());
    } catch (...) {
        log_line("request failed: unknown exception");
    }
    return MHD_NO;  // closes the connection
}

void MhdServer::on_completed(void* cls, MHD_Connection* connection, void** con_cls,
                             MHD_RequestTerminationCode /*code*/)
{
    if (ConnectionState* state = state_of(connection)) {
        // A kept-alive connection's next head is due within the timeout.
        state->in_request = false;
        state->head_since = Clock::now();
    }
    auto* context = static_cast<RequestContext*>(*con_cls);
    *con_cls = nullptr;
    if (context == nullptr)
        return;
    if (context->pending != nullptr)
        context->pending->detach();  // its Responders become no-ops
    if (context->suspended) {
        MhdServer& server = *static_cast<Listener*>(cls)->server;
        server.unwatch(*context);
        server.suspended_.erase(context);
    }
    if (context->answer && context->answer->stream)
        context->answer->stream->cancel();  // given, never queued: its producer lets go
    delete context;
}

HttpRequest MhdServer::build_request(const Listener& listener, MHD_Connection* connection, const char* url,
                                     const char* method, RequestContext& context) const
{
    HttpRequest request;
    request.method = method != nullptr ? method : "";
    request.path = url != nullptr ? url : "";
    request.query = request_query(connection);
    request.headers = request_headers(connection);
    request.body = std::move(context.body);
    request.body_too_large = context.body_too_large;
    request.from_unix_socket = listener.is_unix;
    if (!listener.is_unix) {
        const MHD_ConnectionInfo* info = sym_MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        request.from_loopback = info != nullptr && is_loopback_sockaddr(info->client_addr);
    }
    return request;
}

// Calls the handler with a Responder for `context`. Afterwards the request
// is answered (context.answer) or a Responder was kept.
void MhdServer::call_handler(const Listener& listener, MHD_Connection* connection, const char* url,
                             const char* method, RequestContext& context)
{
    context.handled = true;
    std::string what = std::string(method != nullptr ? method : "") + " " + (url != nullptr ? url : "");
    auto pending = std::make_shared<PendingRequest>(this, &context, what);
    try {
        const HttpRequest request = build_request(listener, connection, url, method, context);
        handler_(request, Responder(pending));
    } catch (const std::exception& e) {
        log_line("handler failed on " + what + ": " + e.what());
        pending->respond(internal_error_response());
    } catch (...) {
        log_line("handler failed on " + what + ": unknown exception");
        pending->respond(internal_error_response());
    }
    // The last Responder gone unanswered answers 500 (~PendingRequest).
    pending.reset();
}

MHD_Result MhdServer::respond(const Listener& listener, MHD_Connection* connection, const char* url,
                              const char* method, RequestContext& context)
{
    if (!context.answer) {
        if (context.handled || stopping_)
            return MHD_NO;  // resumed unanswered: the server is stopping
        call_handler(listener, connection, url, method, context);
    }
    if (!context.answer) {
        context.suspended = true;
        suspended_.insert(&context);
        sym_MHD_suspend_connection(connection);
        watch(context);
        return MHD_YES;
    }
    HttpResponse response = std::move(*context.answer);
    context.answer.reset();
    return queue(connection, context.state, std::move(response));
}

MHD_Result MhdServer::queue(MHD_Connection* connection, ConnectionState* state, HttpResponse response)
{
    MHD_Response* mhd_response = nullptr;
    if (response.stream) {
        auto* reader = new StreamReader{response.stream, this, connection, state};
        if (state != nullptr)
            state->stream = reader;
        StreamReader::attach(*reader);
        mhd_response = sym_MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamChunkBytes,
                                                             &StreamReader::read, reader, &StreamReader::release);
        if (mhd_response == nullptr) {
            StreamReader::release(reader);
            return MHD_NO;
        }
    } else {
        auto* body = new std::string(std::move(response.body));
        mhd_response = sym_MHD_create_response_from_buffer_with_free_callback_cls(body->size(), body->data(),
                                                                                  &free_string, body);
        if (mhd_response == nullptr) {
            delete body;
            return MHD_NO;
        }
    }
    if (!response.content_type.empty())
        sym_MHD_add_response_header(mhd_response, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
    for (const auto& [name, value] : response.headers)
        if (sym_MHD_add_response_header(mhd_response, name.c_str(), value.c_str()) != MHD_YES)
            log_line("dropped invalid response header '" + name + "'");
    const MHD_Result result =
        sym_MHD_queue_response(connection, static_cast<unsigned int>(response.status), mhd_response);
    sym_MHD_destroy_response(mhd_response);
    return result;
}

void MhdServer::answered(RequestContext& context, HttpResponse response)
{
    if (response.status < 200 || response.status > 999) {
        log_line("handler returned invalid HTTP status " + std::to_string(response.status));
        response = internal_error_response();
    }
    context.answer = std::move(response);
    if (context.suspended) {
        // MHD calls the access handler again, which queues the answer, in
        // its next run: ask the owner for one unless in one now (the owner
        // asks next_timeout() afterwards, which says 0).
        unwatch(context);
        context.suspended = false;
        suspended_.erase(&context);
        sym_MHD_resume_connection(context.connection);
        wake_owner();
    }
}

PendingRequest::PendingRequest(MhdServer* s, RequestContext* c, std::string w)
    : server(s), context(c), what(std::move(w))
{
    context->pending = this;
}

PendingRequest::~PendingRequest()
{
    if (context != nullptr && !answered) {
        log_line("no answer to " + what + " (every Responder dropped)");
        respond(internal_error_response());
    }
    detach();
}

bool PendingRequest::respond(HttpResponse response)
{
    if (answered || context == nullptr)
        return false;
    answered = true;
    RequestContext* c = context;
    detach();
    server->answered(*c, std::move(response));
    return true;
}

void PendingRequest::detach()
{
    if (context != nullptr && context->pending == this)
        context->pending = nullptr;
    context = nullptr;
}

}  // namespace detail

Responder::Responder(std::shared_ptr<detail::PendingRequest> pending) : pending_(std::move(pending)) {}

bool Responder::respond(HttpResponse response) const
{
    return pending_ != nullptr && pending_->respond(std::move(response));
}

bool Responder::pending() const
{
    return pending_ != nullptr && !pending_->answered && pending_->context != nullptr;
}

}  // namespace nps::net
