// SPDX-License-Identifier: Apache-2.0
#include <cstdio>

#include <sqlite3.h>

#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"


namespace nps::cli {

int version(int argc, char** argv, int first)
{
    static const VerbSpec spec{"version", "", "Print the version of nps-runner and of the protocols it implements.", "",
                               {}, 0, 0};
    if (auto start = start_verb(spec, argc, argv, first); !start.args)
        return start.exit_status;
    std::printf("nps-runner %s\nNOP 0.9 (NPS-CR-0007 task-claim protocol), NDP 0.12, suite 1.0.0-alpha.18\nSQLite %s\n",
                NPS_RUNNER_VERSION, sqlite3_libversion());
    return kExitOk;
}

}  // namespace nps::cli
