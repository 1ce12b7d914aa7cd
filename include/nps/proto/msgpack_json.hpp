// SPDX-License-Identifier: Apache-2.0
// Tier-2 NCP payloads: MsgPack ↔ JSON text, with msgpack-cxx (Debian's
// libmsgpack-cxx-dev) doing the wire format. The rest of the runner reads
// JSON, so a MsgPack payload is converted to the JSON text its Tier-1 form
// would have, and an answer's JSON is packed back.
//
// MsgPack → JSON mapping: nil → null, bool → true/false, integers → integer
// literals (the full uint64 / int64 range), float32/float64 → the shortest
// round-trip number (RFC 8785 form), str → string (must be UTF-8), array →
// array, map → object (keys must be strings, unique). bin and ext (also the
// timestamp extension) have no JSON form and are refused, as are NaN and the
// infinities. Exactly one value, no trailing bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"

namespace nps::proto {

struct MsgpackLimits {
    std::size_t max_depth = limits::kMaxMsgpackDepth;                  // nested arrays/maps (root = 1)
    std::size_t max_string_bytes = limits::kMaxMsgpackStringBytes;     // one str (values and keys)
    std::size_t max_container_entries = limits::kMaxMsgpackContainerEntries;  // one array or map
    std::size_t max_json_bytes = limits::kMaxMsgpackJsonBytes;         // the text produced
};

// Fails with NWP-HTTP-FRAME-BODY-MALFORMED (message "msgpack payload: <why>
// at byte <offset>") on malformed or truncated MsgPack, trailing bytes, bin,
// ext, a non-string or duplicate key, invalid UTF-8, a non-finite float, or
// nesting beyond max_depth; with NCP-FRAME-PAYLOAD-TOO-LARGE when a string,
// a container or the output exceeds its limit. Memory use is bounded by the
// output limit: a container's declared size is never allocated up front.
// Never throws.
Result<std::string> msgpack_to_json(std::string_view msgpack, const MsgpackLimits& limits = {});

// Packs a JSON text: objects as maps (members in text order), integers as
// the smallest MsgPack integer, other numbers as float64 (msgpack-cxx packs an
// integral double as an integer: same value), strings as str.
// NWP-HTTP-FRAME-BODY-MALFORMED on invalid JSON or nesting beyond
// limits::kMaxJsonDepth. Never throws.
Result<std::string> json_to_msgpack(std::string_view json_text);

}  // namespace nps::proto
