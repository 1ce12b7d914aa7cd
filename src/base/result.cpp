// SPDX-License-Identifier: Apache-2.0
#include "nps/base/result.hpp"

#include <cerrno>
#include <cstring>

namespace nps {

std::string Error::describe() const
{
    if (sys_errno == 0)
        return message;
    return message + ": " + std::strerror(sys_errno);
}

Error protocol_error(std::string code, std::string message)
{
    return Error{std::move(code), std::move(message), 0};
}

Error system_error(std::string message, int err)
{
    return Error{{}, std::move(message), err};
}

Error system_error_errno(std::string message)
{
    return system_error(std::move(message), errno);
}

Error internal_error(std::string message)
{
    return Error{{}, std::move(message), 0};
}

}  // namespace nps
