// SPDX-License-Identifier: Apache-2.0
// Fuzzes an HTTP request's NCP frame body and its Accept header as the API
// reads them (api/frame_body.hpp): the frame decode, the MsgPack → JSON
// conversion, the Accept parse, and framing an answer in the chosen tier.
// Input: byte 0 picks the Content-Type, then the Accept header up to the
// first NUL, then the body.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nps/api/frame_body.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    static const char* const kTypes[] = {"application/x-nps-frame", "application/nwp-frame; charset=x",
                                         "application/json", ""};
    std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t nul = rest.find('\0');
    nps::net::HttpRequest request;
    request.method = "POST";
    request.path = "/task";
    request.headers["content-type"] = kTypes[data[0] % 4];
    request.headers["accept"] = std::string(rest.substr(0, nul));
    request.body = nul == std::string_view::npos ? std::string() : std::string(rest.substr(nul + 1));
    auto body = nps::api::read_request_body(request, 1 << 16);
    const auto framing = nps::api::answer_framing(request, body ? body->frame : std::nullopt);
    if (body && framing) {
        nps::net::HttpResponse answer;
        answer.body = body->json.empty() ? std::string("{}") : body->json;
        (void)nps::api::framed_response(std::move(answer), *framing);
    }
    return 0;
}
