// SPDX-License-Identifier: Apache-2.0
#include <cstdio>

#include <sqlite3.h>

#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/store/store.hpp"

namespace nps::cli {

int version(int argc, char** argv, int first)
{
    static const VerbSpec spec{"version", "[--json]", "Print the version of nps-runner and of the protocols it implements.",
                               "", {{"--json", nullptr, "print {version, nop, ndp, suite, sqlite, schema}"}}, 0, 0};
    auto start = start_verb(spec, argc, argv, first);
    if (!start.args)
        return start.exit_status;
    if (start.args->flag("--json")) {
        Output{}.print_json({{"version", NPS_RUNNER_VERSION},
                             {"nop", "0.9"},
                             {"ndp", "0.12"},
                             {"suite", "1.0.0-alpha.18"},
                             {"sqlite", sqlite3_libversion()},
                             {"schema", store::latest_schema_version()}});
        return kExitOk;
    }
    std::printf("nps-runner %s\nNOP 0.9 (NPS-CR-0007 task-claim protocol), NDP 0.12, suite 1.0.0-alpha.18\nSQLite %s\n",
                NPS_RUNNER_VERSION, sqlite3_libversion());
    return kExitOk;
}

}  // namespace nps::cli
