// SPDX-License-Identifier: Apache-2.0
#include "nps/base/small_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "nps/base/unique_fd.hpp"

namespace nps {

Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes, const std::string& what)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return system_error_errno("Failed to read " + what + " '" + path + "'");
    // One byte more than allowed tells "exactly the cap" from "larger".
    std::string data(max_bytes + 1, '\0');
    std::size_t filled = 0;
    while (filled < data.size()) {
        const ssize_t n = ::read(fd.get(), data.data() + filled, data.size() - filled);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return system_error_errno("Failed to read " + what + " '" + path + "'");
        if (n == 0)
            break;
        filled += static_cast<std::size_t>(n);
    }
    if (filled > max_bytes)
        return internal_error(what + " '" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
    data.resize(filled);
    return data;
}

}  // namespace nps
