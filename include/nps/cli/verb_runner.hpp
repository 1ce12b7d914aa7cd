// SPDX-License-Identifier: Apache-2.0
// The shared prologue of the client verbs: parse, answer --help, connect.
#pragma once

#include <cstdio>
#include <functional>

#include "nps/cli/args.hpp"
#include "nps/cli/client.hpp"
#include "nps/cli/verbs.hpp"

namespace nps::cli {

// Parses argv against `spec` (client options appended), prints help or a
// usage error, builds the ApiClient and calls `body`.
int run_client_verb(VerbSpec spec, int argc, char** argv, int first,
                    const std::function<int(const ParsedArgs&, const ApiClient&)>& body);

}  // namespace nps::cli
