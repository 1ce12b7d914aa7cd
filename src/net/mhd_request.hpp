// SPDX-License-Identifier: Apache-2.0
// Internal to src/net: what libmicrohttpd says about a request, read into our
// types, and the answers the server gives before any handler runs.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "nps/lazy/microhttpd.hpp"
#include "nps/net/http_server.hpp"

namespace nps::net::detail {

// Header names lower-cased; a repeated header is one comma-joined value
// (RFC 9110 §5.3).
std::map<std::string, std::string> request_headers(MHD_Connection* connection);
// Decoded query parameters; the last of a repeated one wins.
std::map<std::string, std::string> request_query(MHD_Connection* connection);
// RFC 9112 §6.3: Content-Length values that differ, or Content-Length with
// Transfer-Encoding. Repeated equal values count as one.
bool ambiguous_framing(MHD_Connection* connection);
// The Content-Length, when it is one decimal number.
std::optional<std::uint64_t> declared_content_length(MHD_Connection* connection);
// "Expect: 100-continue".
bool expects_continue(MHD_Connection* connection);
// The peer's address bytes, counted per peer; empty for a loopback peer or
// a unix socket (not counted).
std::string peer_key(const sockaddr* addr);

// 500 with the NPS-SERVER-INTERNAL error body.
HttpResponse internal_error_response();
// 400 NPS-CLIENT-BAD-FRAME and "Connection: close" (what follows on the
// connection cannot be trusted to be framed as the client meant): a target
// with a control character or invalid UTF-8, or an ambiguous body length.
HttpResponse bad_target_response();
HttpResponse bad_framing_response();

}  // namespace nps::net::detail
