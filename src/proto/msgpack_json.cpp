// SPDX-License-Identifier: Apache-2.0
// MsgPack ↔ JSON text over msgpack-cxx (see nps/proto/msgpack_json.hpp).
//
// Decoding uses msgpack-cxx's event parser (msgpack::parse with a visitor)
// rather than msgpack::unpack: unpack allocates an object array of the
// declared size before reading any element, so a five-byte array header
// could ask for gigabytes. The visitor writes JSON as events arrive and
// checks every limit before anything grows.
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/proto/msgpack_json.hpp"

#include <msgpack.hpp>

#include <cmath>
#include <cstring>
#include <exception>
#include <set>
#include <vector>

#include "nps/base/json_string.hpp"
#include "nps/proto/jcs.hpp"
#include "utf8.hpp"

namespace nps::proto {

namespace {

constexpr std::string_view kMalformed = code::kNwpHttpFrameBodyMalformed;
constexpr std::string_view kTooLarge = code::kNcpFramePayloadTooLarge;

// One open array or map.
struct Container {
    bool is_map = false;
    std::size_t items = 0;       // entries begun so far
    std::set<std::string> keys;  // maps only: duplicate detection
};

class JsonWriter : public msgpack::null_visitor {
public:
    JsonWriter(std::string& out, const MsgpackLimits& limits) : out_(out), limits_(limits) {}

    // --- scalars ---
    bool visit_nil() { return scalar("null"); }
    bool visit_boolean(bool v) { return scalar(v ? "true" : "false"); }
    bool visit_positive_integer(std::uint64_t v) { return scalar(std::to_string(v)); }
    bool visit_negative_integer(std::int64_t v) { return scalar(std::to_string(v)); }
    bool visit_float32(float v) { return number(static_cast<double>(v)); }
    bool visit_float64(double v) { return number(v); }
    bool visit_str(const char* data, std::uint32_t size)
    {
        if (size > limits_.max_string_bytes)
            return fail(kTooLarge, "a string of " + std::to_string(size) + " bytes exceeds the limit of " +
                                       std::to_string(limits_.max_string_bytes));
        const std::string_view s(data, size);
        if (!detail::utf8_length(s))
            return fail(kMalformed, "a string is not valid UTF-8");
        if (in_key_) {
            Container& map = stack_.back();
            if (!map.keys.emplace(s).second)
                return fail(kMalformed, "duplicate map key " + std::string(s.substr(0, 64)));
            append_json_string(out_, s);
            key_done_ = true;
            return check_size();
        }
        append_json_string(out_, s);
        return check_size();
    }
    bool visit_bin(const char*, std::uint32_t) { return fail(kMalformed, "bin has no JSON form"); }
    bool visit_ext(const char*, std::uint32_t) { return fail(kMalformed, "ext has no JSON form"); }

    // --- containers ---
    bool start_array(std::uint32_t n) { return open(false, n, '['); }
    bool start_array_item() { return comma(); }
    bool end_array_item() { return true; }
    bool end_array() { return close(']'); }
    bool start_map(std::uint32_t n) { return open(true, n, '{'); }
    bool start_map_key()
    {
        if (!comma())
            return false;
        in_key_ = true;
        key_done_ = false;
        return true;
    }
    bool end_map_key()
    {
        in_key_ = false;
        if (!key_done_)
            return fail(kMalformed, "a map key is not a string");
        out_ += ':';
        return true;
    }
    bool start_map_value() { return true; }
    bool end_map_value() { return true; }
    bool end_map() { return close('}'); }

    // --- parser failures ---
    void parse_error(std::size_t, std::size_t error_offset)
    {
        fail(kMalformed, "malformed MsgPack at byte " + std::to_string(error_offset));
    }
    void insufficient_bytes(std::size_t, std::size_t error_offset)
    {
        fail(kMalformed, "truncated MsgPack at byte " + std::to_string(error_offset));
    }

    const std::optional<Error>& error() const { return error_; }

private:
    bool fail(std::string_view code, std::string problem)
    {
        if (!error_)  // keep the first reason: the parser reports its own failure after ours
            error_ = protocol_error(std::string(code), "msgpack payload: " + std::move(problem));
        return false;
    }
    bool check_size()
    {
        if (out_.size() > limits_.max_json_bytes)
            return fail(kTooLarge, "the JSON form exceeds " + std::to_string(limits_.max_json_bytes) + " bytes");
        return true;
    }
    bool scalar(std::string_view text)
    {
        if (in_key_)
            return fail(kMalformed, "a map key is not a string");
        out_ += text;
        return check_size();
    }
    bool number(double v)
    {
        if (!std::isfinite(v))
            return fail(kMalformed, "a float is NaN or infinite");
        return scalar(jcs_format_number(v));
    }
    bool open(bool is_map, std::uint32_t n, char bracket)
    {
        if (in_key_)
            return fail(kMalformed, "a map key is not a string");
        if (stack_.size() + 1 > limits_.max_depth)
            return fail(kMalformed, "nesting deeper than " + std::to_string(limits_.max_depth));
        if (n > limits_.max_container_entries)
            return fail(kTooLarge, (is_map ? "a map of " : "an array of ") + std::to_string(n) +
                                       " entries exceeds the limit of " +
                                       std::to_string(limits_.max_container_entries));
        stack_.push_back(Container{.is_map = is_map, .items = 0, .keys = {}});
        out_ += bracket;
        return check_size();
    }
    bool comma()
    {
        Container& c = stack_.back();
        if (c.items++ > 0)
            out_ += ',';
        return true;
    }
    bool close(char bracket)
    {
        stack_.pop_back();
        out_ += bracket;
        return check_size();
    }

    std::string& out_;
    const MsgpackLimits& limits_;
    std::vector<Container> stack_;
    bool in_key_ = false;
    bool key_done_ = false;
    std::optional<Error> error_;
};

// JSON DOM → packer.
class Packer {
public:
    explicit Packer(msgpack::sbuffer& buffer) : buffer_(buffer), pk_(buffer) {}

    Result<void> value(simdjson::dom::element e, std::size_t depth)
    {
        using simdjson::dom::element_type;
        // Containers are the nesting, as in msgpack_to_json: a scalar inside
        // kMaxJsonDepth containers is still within the limit.
        const bool container = e.type() == element_type::OBJECT || e.type() == element_type::ARRAY;
        if (container && depth > limits::kMaxJsonDepth)
            return protocol_error(std::string(kMalformed),
                                  "json payload: nesting deeper than " + std::to_string(limits::kMaxJsonDepth));
        switch (e.type()) {
        case element_type::OBJECT: {
            simdjson::dom::object obj = e.get_object().value_unsafe();
            std::size_t n = 0;
            for ([[maybe_unused]] auto field : obj)
                ++n;
            pk_.pack_map(static_cast<std::uint32_t>(n));
            for (auto field : obj) {
                pk_.pack_str(static_cast<std::uint32_t>(field.key.size()));
                pk_.pack_str_body(field.key.data(), static_cast<std::uint32_t>(field.key.size()));
                NPS_TRY_VOID(value(field.value, depth + 1));
            }
            return {};
        }
        case element_type::ARRAY: {
            simdjson::dom::array arr = e.get_array().value_unsafe();
            std::size_t n = 0;
            for ([[maybe_unused]] auto item : arr)
                ++n;
            pk_.pack_array(static_cast<std::uint32_t>(n));
            for (auto item : arr)
                NPS_TRY_VOID(value(item, depth + 1));
            return {};
        }
        case element_type::STRING: {
            const std::string_view s = e.get_string().value_unsafe();
            pk_.pack_str(static_cast<std::uint32_t>(s.size()));
            pk_.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
            return {};
        }
        case element_type::INT64: pk_.pack_int64(e.get_int64().value_unsafe()); return {};
        case element_type::UINT64: pk_.pack_uint64(e.get_uint64().value_unsafe()); return {};
        case element_type::DOUBLE: pack_double(e.get_double().value_unsafe()); return {};
        case element_type::BOOL:
            if (e.get_bool().value_unsafe())
                pk_.pack_true();
            else
                pk_.pack_false();
            return {};
        case element_type::NULL_VALUE: pk_.pack_nil(); return {};
        }
        return internal_error("json payload: unknown JSON value type");
    }

private:
    // msgpack-c's pack_double casts the value to int64 to see whether it is
    // integral: undefined for |d| >= 2^63 (UBSan, fuzz finding). Those are
    // written as a float 64 by hand.
    void pack_double(double d)
    {
        if (std::fabs(d) < 9223372036854775808.0) {
            pk_.pack_double(d);
            return;
        }
        std::uint64_t bits = 0;
        std::memcpy(&bits, &d, sizeof bits);
        char bytes[9] = {static_cast<char>(0xcb)};
        for (int i = 0; i < 8; ++i)
            bytes[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
        buffer_.write(bytes, sizeof bytes);
    }

    msgpack::sbuffer& buffer_;
    msgpack::packer<msgpack::sbuffer> pk_;
};

}  // namespace

Result<std::string> msgpack_to_json(std::string_view msgpack, const MsgpackLimits& limits)
{
    if (msgpack.empty())
        return protocol_error(std::string(kMalformed), "msgpack payload: empty");
    std::string out;
    JsonWriter writer(out, limits);
    std::size_t offset = 0;
    bool parsed = false;
    try {
        parsed = msgpack::parse(msgpack.data(), msgpack.size(), offset, writer);
    } catch (const std::bad_alloc&) {
        return internal_error("msgpack payload: out of memory");
    } catch (const std::exception& e) {
        return protocol_error(std::string(kMalformed), std::string("msgpack payload: ") + e.what());
    }
    if (writer.error())
        return *writer.error();
    if (!parsed)
        return protocol_error(std::string(kMalformed), "msgpack payload: not one MsgPack value");
    if (offset != msgpack.size())
        return protocol_error(std::string(kMalformed), "msgpack payload: " +
                                                           std::to_string(msgpack.size() - offset) +
                                                           " bytes after the value");
    return out;
}

Result<std::string> json_to_msgpack(std::string_view json_text)
{
    // Integers up to 2^64-1 stay integers: parse as is first, and widen
    // literals beyond 64 bits to doubles (json::parse_document) only when simdjson
    // refuses the text (which also gives the error of invalid JSON).
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(json_text.data(), json_text.size()).get(root) != simdjson::SUCCESS)
        root = NPS_TRY(json::parse_document(parser, json_text, "json payload"));
    try {
        msgpack::sbuffer buffer;
        Packer packer(buffer);
        NPS_TRY_VOID(packer.value(root, 1));
        return std::string(buffer.data(), buffer.size());
    } catch (const std::bad_alloc&) {
        return internal_error("json payload: out of memory while packing MsgPack");
    }
}

}  // namespace nps::proto
