// SPDX-License-Identifier: Apache-2.0
// The shared prologue of the client verbs: parse, answer --help, connect.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>

#include "nps/cli/args.hpp"
#include "nps/cli/client.hpp"
#include "nps/cli/verbs.hpp"

namespace nps::cli {

// The common start of every verb: parses argv against `spec`, answers
// --help (exit 0) or prints a usage error (exit 2). Without a value, the verb
// returns `exit_status` at once.
struct VerbStart {
    std::optional<ParsedArgs> args;
    int exit_status = kExitOk;
};
VerbStart start_verb(const VerbSpec& spec, int argc, char** argv, int first);

// Parses argv against `spec` (client options appended), prints help or a
// usage error, builds the ApiClient and calls `body`.
int run_client_verb(VerbSpec spec, int argc, char** argv, int first,
                    const std::function<int(const ParsedArgs&, const ApiClient&)>& body);

}  // namespace nps::cli
