// SPDX-License-Identifier: Apache-2.0
#include "nps/api/frame_body.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "nps/api/json_io.hpp"
#include "nps/base/ascii.hpp"

namespace nps::api {

namespace {

namespace ncp = proto::ncp;

// The q parameter of an Accept element (1 when absent, 0 when unreadable).
double quality_of(std::string_view element)
{
    std::size_t at = element.find(';');
    while (at != std::string_view::npos) {
        std::string_view param = element.substr(at + 1);
        const std::size_t next = param.find(';');
        param = param.substr(0, next);
        while (!param.empty() && param.front() == ' ')
            param.remove_prefix(1);
        if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
            const std::string text(param.substr(2));
            char* end = nullptr;
            const double q = std::strtod(text.c_str(), &end);
            return end == text.c_str() ? 0.0 : q;
        }
        at = next == std::string_view::npos ? next : at + 1 + next;
    }
    return 1.0;
}

bool starts_like_json(std::string_view body)
{
    if (body.empty())
        return false;
    const char c = body.front();
    return c == '{' || c == '[' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

std::string media_type_of(std::string_view value)
{
    value = value.substr(0, value.find(';'));
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
    return ascii_lower(value);
}

bool is_frame_media_type(std::string_view content_type)
{
    const std::string type = media_type_of(content_type);
    return type == "application/x-nps-frame" || type == "application/nwp-frame";
}

Result<RequestBody> read_request_body(const net::HttpRequest& request, std::size_t max_payload_bytes)
{
    if (!is_frame_media_type(request.header("content-type")) || starts_like_json(request.body))
        return RequestBody{.json = request.body, .frame = std::nullopt};
    auto decoded = NPS_TRY(ncp::decode_frame_to_json(request.body, {.max_payload_bytes = max_payload_bytes}));
    return RequestBody{.json = std::move(decoded.json), .frame = decoded.header};
}

std::optional<AnswerFraming> answer_framing(const net::HttpRequest& request,
                                            const std::optional<ncp::FrameHeader>& request_frame)
{
    const std::string& accept = request.header("accept");
    std::size_t start = 0;
    while (start <= accept.size()) {
        std::size_t end = accept.find(',', start);
        if (end == std::string::npos)
            end = accept.size();
        const std::string_view element = std::string_view(accept).substr(start, end - start);
        if (is_frame_media_type(element) && quality_of(element) > 0) {
            AnswerFraming framing{.media_type = media_type_of(element)};
            if (request_frame)
                framing.tier = request_frame->flags.tier;
            return framing;
        }
        start = end + 1;
    }
    return std::nullopt;
}

net::HttpResponse framed_response(net::HttpResponse response, const AnswerFraming& framing)
{
    if (media_type_of(response.content_type) != "application/json" || response.body.empty())
        return response;
    const std::uint8_t type = response.status < 300 ? ncp::kCapsFrame : ncp::kErrorFrame;
    auto frame = ncp::encode_frame(type, framing.tier, response.body);
    if (!frame)
        return error_response(internal_error("Failed to frame the answer: " + frame.error().describe()));
    response.body = std::move(*frame);
    response.content_type = framing.media_type;
    return response;
}

}  // namespace nps::api
