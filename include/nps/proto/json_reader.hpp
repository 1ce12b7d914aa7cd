// SPDX-License-Identifier: Apache-2.0
// The one reader of untrusted JSON: simdjson's DOM, parsed with one rule for
// integers beyond 64 bits, and typed reads of its members. Every decoder of
// untrusted input (TaskFrames, announces, SpawnSpecs, a worker's frames)
// reads through these, so a field of the wrong type is refused with the same
// words everywhere: "<path>: expected a string, got a number".
//
// Errors are protocol errors with the caller's code; `path` names the field
// ("dag.nodes[2].timeout_ms").
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::proto::json {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Parses `text` into `parser` (the element lives as long as the parser's
// next parse). simdjson 3.0.1 refuses integer literals beyond 64 bits, which
// JSON allows: those are read as doubles, as I-JSON and JCS read every
// number. Fails with `code` and "<what>: invalid JSON: <simdjson's reason>".
// Nesting is bounded by simdjson's own limit (1024); decoders that allow
// less check it as they walk (canonical_json below does, at
// limits::kMaxJsonDepth).
Result<element> parse_document(simdjson::dom::parser& parser, std::string_view text, std::string_view what,
                               std::string_view code = code::kNwpHttpFrameBodyMalformed);

// The RFC 8785 text of `value` (nps/proto/jcs.hpp), without printing and
// re-parsing it. Fails (NWP-HTTP-FRAME-BODY-MALFORMED, `path` leading the
// message) on a duplicate key, nesting deeper than limits::kMaxJsonDepth,
// malformed UTF-8 or a non-finite number.
Result<std::string> canonical_json(element value, std::string_view path = {});

// "an object", "an array", "a string", "a number", "a boolean", "null".
std::string_view json_type_name(element value);

// A protocol error with `code` and the message "<path>: <problem>".
Error field_error(std::string_view code, std::string_view path, std::string_view problem);
// "<path>: expected <expected>, got <the type of value>".
Error type_error(element value, std::string_view expected, std::string_view code, std::string_view path);

// Member `key` of `obj`; nullopt when absent or JSON null (optional fields
// treat an explicit null as absent). The DOM keeps repeated keys: decoders
// refuse them first (canonical_json does).
std::optional<element> optional_member(const object& obj, std::string_view key);
// Like optional_member, but absent or null is an error "<path>: required".
Result<element> required_member(const object& obj, std::string_view key, std::string_view code,
                                std::string_view path);

// Fails on the first member of `obj` whose key is not in `known`: "<path>.<key>:
// unknown key", with the expected spelling when the key is another spelling
// of a known one (camelCase, other case, no underscores: `inputFrom` →
// "did you mean \"input_from\"?"), else the list of known keys. A frame
// never has a member silently ignored (docs/protocol-choices.md).
Result<void> check_known_members(const object& obj, std::initializer_list<std::string_view> known,
                                 std::string_view code, std::string_view path);

Result<std::string_view> read_string(element value, std::string_view code, std::string_view path);
Result<bool> read_bool(element value, std::string_view code, std::string_view path);
Result<object> read_object(element value, std::string_view code, std::string_view path);
Result<array> read_array(element value, std::string_view code, std::string_view path);
// A JSON integer (no fraction or exponent) in [min, max].
Result<std::uint64_t> read_uint(element value, std::string_view code, std::string_view path, std::uint64_t min,
                                std::uint64_t max);

}  // namespace nps::proto::json
