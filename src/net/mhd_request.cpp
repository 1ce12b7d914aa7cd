// SPDX-License-Identifier: Apache-2.0
#include "mhd_request.hpp"

#include <netinet/in.h>

#include <charconv>
#include <cstring>
#include <string_view>

#include "listen_socket.hpp"
#include "nps/base/ascii.hpp"

namespace nps::net::detail {

namespace {

constexpr const char* kInternalErrorBody =
    R"({"status":"NPS-SERVER-INTERNAL","error":"NPS-SERVER-INTERNAL","message":"internal error"})";
constexpr const char* kBadTargetBody =
    R"({"status":"NPS-CLIENT-BAD-FRAME","error":"NPS-CLIENT-BAD-FRAME",)"
    R"("message":"request target holds a control character or invalid UTF-8 after percent-decoding"})";
constexpr const char* kBadFramingBody =
    R"({"status":"NPS-CLIENT-BAD-FRAME","error":"NPS-CLIENT-BAD-FRAME",)"
    R"("message":"conflicting Content-Length values, or Content-Length with Transfer-Encoding"})";

MHD_Result collect_header(void* cls, MHD_ValueKind /*kind*/, const char* key, size_t key_size,
                          const char* value, size_t value_size)
{
    auto& headers = *static_cast<std::map<std::string, std::string>*>(cls);
    std::string name = ascii_lower(std::string_view(key, key_size));
    std::string text = value != nullptr ? std::string(value, value_size) : std::string();
    auto [it, inserted] = headers.try_emplace(std::move(name), text);
    if (!inserted)  // a repeated header is a comma-joined list (RFC 9110 §5.3)
        it->second += ", " + text;
    return MHD_YES;
}

MHD_Result collect_argument(void* cls, MHD_ValueKind /*kind*/, const char* key, size_t key_size,
                            const char* value, size_t value_size)
{
    auto& query = *static_cast<std::map<std::string, std::string>*>(cls);
    query[std::string(key, key_size)] = value != nullptr ? std::string(value, value_size) : std::string();
    return MHD_YES;
}

HttpResponse bad_request_response(const char* body)
{
    HttpResponse response;
    response.status = 400;
    response.body = body;
    response.headers.emplace_back("Connection", "close");
    return response;
}

}  // namespace

std::map<std::string, std::string> request_headers(MHD_Connection* connection)
{
    std::map<std::string, std::string> headers;
    sym_MHD_get_connection_values_n(connection, MHD_HEADER_KIND, &collect_header, &headers);
    return headers;
}

std::map<std::string, std::string> request_query(MHD_Connection* connection)
{
    std::map<std::string, std::string> query;
    sym_MHD_get_connection_values_n(connection, MHD_GET_ARGUMENT_KIND, &collect_argument, &query);
    return query;
}

bool ambiguous_framing(MHD_Connection* connection)
{
    struct Seen {
        std::optional<std::string> length;
        bool conflicting = false;
        bool transfer_encoding = false;
    } seen;
    sym_MHD_get_connection_values_n(
        connection, MHD_HEADER_KIND,
        [](void* cls, MHD_ValueKind, const char* key, size_t key_size, const char* value,
           size_t value_size) -> MHD_Result {
            auto& s = *static_cast<Seen*>(cls);
            const std::string name = ascii_lower(std::string_view(key, key_size));
            if (name == "transfer-encoding") {
                s.transfer_encoding = true;
            } else if (name == "content-length") {
                std::string_view list(value != nullptr ? value : "", value != nullptr ? value_size : 0);
                while (true) {
                    const auto comma = list.find(',');
                    std::string_view item = list.substr(0, comma);
                    while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
                        item.remove_prefix(1);
                    while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
                        item.remove_suffix(1);
                    if (!s.length)
                        s.length = std::string(item);
                    else if (*s.length != item)
                        s.conflicting = true;
                    if (comma == std::string_view::npos)
                        break;
                    list.remove_prefix(comma + 1);
                }
            }
            return MHD_YES;
        },
        &seen);
    return seen.conflicting || (seen.length && seen.transfer_encoding);
}

std::optional<std::uint64_t> declared_content_length(MHD_Connection* connection)
{
    const char* length = sym_MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length == nullptr)
        return std::nullopt;
    const std::string_view text(length);
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

bool expects_continue(MHD_Connection* connection)
{
    const char* expect = sym_MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    return expect != nullptr && ascii_lower(expect) == "100-continue";
}

std::string peer_key(const sockaddr* addr)
{
    if (addr == nullptr || is_loopback_sockaddr(addr))
        return {};
    // Copied out: a sockaddr may be less aligned than the family's struct.
    if (addr->sa_family == AF_INET) {
        sockaddr_in in;
        std::memcpy(&in, addr, sizeof in);
        return std::string(reinterpret_cast<const char*>(&in.sin_addr), sizeof in.sin_addr);
    }
    if (addr->sa_family == AF_INET6) {
        sockaddr_in6 in6;
        std::memcpy(&in6, addr, sizeof in6);
        return std::string(reinterpret_cast<const char*>(&in6.sin6_addr), sizeof in6.sin6_addr);
    }
    return {};
}

HttpResponse internal_error_response()
{
    HttpResponse response;
    response.status = 500;
    response.body = kInternalErrorBody;
    return response;
}

HttpResponse bad_target_response()
{
    return bad_request_response(kBadTargetBody);
}

HttpResponse bad_framing_response()
{
    return bad_request_response(kBadFramingBody);
}

}  // namespace nps::net::detail
