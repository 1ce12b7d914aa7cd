// SPDX-License-Identifier: Apache-2.0
// Whole small files (CA bundles, password and token files) read with a cap.
#pragma once

#include <cstddef>
#include <string>

#include "nps/base/result.hpp"

namespace nps {

// The contents of `path`, at most `max_bytes`. Errors name `what`:
// "Failed to read <what> '<path>': …", "<what> '<path>' is larger than N bytes".
Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes, const std::string& what);

}  // namespace nps
