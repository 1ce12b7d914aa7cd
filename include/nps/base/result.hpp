// SPDX-License-Identifier: Apache-2.0
// Result<T>: a value or an Error, spelled like std::expected (C++23) so the
// code moves to the standard type unchanged once the toolchain has it.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace nps {

// An error names the operation and the object ("Failed to open database
// '/x/runner.db'") and, where the failure is a protocol decision, carries the
// NPS protocol code (e.g. "NOP-CLAIM-CONFLICT") that proto/error_codes maps to
// an NPS status and HTTP code. An empty code means an internal/system failure.
struct Error {
    std::string code;
    std::string message;
    int sys_errno = 0;
    // A failure of a node attempt that another attempt may overcome; only
    // proto::runtime_failure() (proto/runtime_failure.hpp) sets it.
    bool retryable = false;

    // message, plus ": <strerror>" when sys_errno is set.
    std::string describe() const;
};

// A protocol error: `code` must be a code known to proto/error_codes.
Error protocol_error(std::string code, std::string message);
// A system error from errno (or an explicit error number).
Error system_error(std::string message, int err);
Error system_error_errno(std::string message);
// An internal failure with no protocol code and no errno.
Error internal_error(std::string message);

template <class T>
class [[nodiscard]] Result {
public:
    using value_type = T;

    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & { assert(has_value()); return std::get<0>(v_); }
    const T& value() const& { assert(has_value()); return std::get<0>(v_); }
    T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }

    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const& { assert(!has_value()); return std::get<1>(v_); }
    Error&& error() && { assert(!has_value()); return std::get<1>(std::move(v_)); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), failed_(true) {}

    bool has_value() const noexcept { return !failed_; }
    explicit operator bool() const noexcept { return has_value(); }
    void value() const { assert(has_value()); }

    const Error& error() const& { assert(failed_); return error_; }
    Error&& error() && { assert(failed_); return std::move(error_); }

private:
    Error error_;
    bool failed_ = false;
};

}  // namespace nps

// NPS_TRY(expr): evaluate a Result; on error return the error from the
// enclosing function, otherwise yield the value (GNU statement expression).
// Each use gets its own variable name, so NPS_TRY calls may nest.
#define NPS_TRY(expr) NPS_TRY_IMPL_(expr, NPS_CONCAT_(nps_try_result_, __COUNTER__))
#define NPS_TRY_IMPL_(expr, var)                \
    __extension__({                             \
        auto var = (expr);                      \
        if (!var)                               \
            return std::move(var).error();      \
        std::move(var).value();                 \
    })

// NPS_TRY_VOID(expr): the same for Result<void>.
#define NPS_TRY_VOID(expr) NPS_TRY_VOID_IMPL_(expr, NPS_CONCAT_(nps_try_result_, __COUNTER__))
#define NPS_TRY_VOID_IMPL_(expr, var)           \
    do {                                        \
        auto var = (expr);                      \
        if (!var)                               \
            return std::move(var).error();      \
    } while (0)

#define NPS_CONCAT_(a, b) NPS_CONCAT_IMPL_(a, b)
#define NPS_CONCAT_IMPL_(a, b) a##b
