// SPDX-License-Identifier: Apache-2.0
// NCP frames as HTTP bodies (transport profile §2.1; docs/ncp-frames.md,
// "Over HTTP"). A request whose Content-Type is a frame media type
// (`application/x-nps-frame`, `application/nwp-frame`) carries one NCP frame:
// the 4- or 8-byte header, then a Tier-1 JSON or Tier-2 MsgPack payload. The
// routes read JSON, so the payload is handed on as JSON text (MsgPack
// converted by msgpack_json.hpp). An answer is framed when the request's
// Accept names a frame media type: success bodies as a CapsFrame (0x04),
// errors as an ErrorFrame (0xFE), in the tier the request used (MsgPack, the
// NCP default, for a request without a framed body).
//
// Refusals carry the codes of ncp_frame.hpp: bad flags, unknown type, ENC,
// a tier not enabled (Tier-3: 415 NCP-ENCODING-UNSUPPORTED), a payload over
// the limit, a length that disagrees with the body.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"
#include "nps/net/http_server.hpp"
#include "nps/proto/ncp_frame.hpp"

namespace nps::api {

// "type/subtype" of a media-type header value or list element, lower case,
// without parameters or surrounding white space.
std::string media_type_of(std::string_view value);

// True for the media types of a binary NCP frame (parameters and case ignored).
bool is_frame_media_type(std::string_view content_type);

struct RequestBody {
    std::string json;                               // the body as JSON text
    std::optional<proto::ncp::FrameHeader> frame;   // set when it arrived as an NCP frame
};

// The body of `request` as JSON. Under a frame media type it must be one
// NCP frame, except that a body starting like JSON text (`{`, `[` or white
// space: no frame type has those bytes) is taken as bare JSON, as the SDKs
// and earlier clients of ours send it. Other bodies pass unchanged.
Result<RequestBody> read_request_body(const net::HttpRequest& request, std::size_t max_payload_bytes);

// How an answer to `request` is encoded: nullopt for JSON; else the frame
// media type named in Accept and the tier to use.
struct AnswerFraming {
    std::string media_type;
    proto::ncp::Tier tier = proto::ncp::Tier::msgpack;
};
std::optional<AnswerFraming> answer_framing(const net::HttpRequest& request,
                                            const std::optional<proto::ncp::FrameHeader>& request_frame);

// `response` (a JSON answer) as one frame; other answers are returned as
// they are. A body that cannot be framed becomes a JSON 500 answer.
net::HttpResponse framed_response(net::HttpResponse response, const AnswerFraming& framing);

}  // namespace nps::api
