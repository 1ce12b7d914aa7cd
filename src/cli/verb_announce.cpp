// SPDX-License-Identifier: Apache-2.0
// announce NID --spawn-spec REF | announce resolve NID | announce ls
#include <cstdio>
#include <cstdlib>

#include "nps/cli/verb_runner.hpp"
#include "nps/net/http_client.hpp"
#include "task_client.hpp"

namespace nps::cli {

int announce(int argc, char** argv, int first)
{
    VerbSpec spec{
        "announce",
        "NID --spawn-spec REF [--activation-mode MODE] [--ttl S]",
        "Register an agent NID in the local NDP registry with the SpawnSpec it is started from.",
        "REF is a spawnspec:<base64url JSON> data URI or an https:// / nwp:// URL (see\n"
        "docs/spawnspec.md). A DAG node whose agent is NID is then run as an ephemeral worker\n"
        "built from that SpawnSpec. The reference's syntax is checked now; its content when\n"
        "the agent is resolved ('nps-runner announce resolve NID' shows the outcome).\n\n"
        "Example:\n  nps-runner announce urn:nps:agent:example.com:adder --spawn-spec spawnspec:eyJpbWFnZSI6…",
        {{"--spawn-spec", "REF", "the agent's spawn_spec_ref (required unless the agent is resident)"},
         {"--activation-mode", "MODE", "ephemeral (default), hybrid or resident (NDP §3.1.1)"},
         {"--ttl", "S", "seconds the announce stays fresh (default: no expiry; 0 = offline)"}},
        1,
        1,
    };
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const std::string mode = args.value("--activation-mode").value_or("ephemeral");
        if (mode != "ephemeral" && mode != "hybrid" && mode != "resident") {
            std::fprintf(stderr, "nps-runner: --activation-mode must be ephemeral, hybrid or resident\n");
            return kExitUsage;
        }
        auto ref = args.value("--spawn-spec");
        if (!ref && mode != "resident") {
            std::fprintf(stderr, "nps-runner: announce needs --spawn-spec REF\n");
            return kExitUsage;
        }
        nlohmann::json body = {{"nid", args.positionals[0]}, {"activation_mode", mode}};
        if (ref)
            body["spawn_spec_ref"] = *ref;
        if (auto ttl = args.value("--ttl")) {
            char* end = nullptr;
            unsigned long v = std::strtoul(ttl->c_str(), &end, 10);
            if (ttl->empty() || *end != '\0' || v > 0xffffffffUL || ttl->front() == '-') {
                std::fprintf(stderr, "nps-runner: --ttl '%s' is not a number of seconds\n", ttl->c_str());
                return kExitUsage;
            }
            body["ttl"] = v;
        }
        auto r = client.call("PUT", "/v1/ndp/announces/" + net::url_encode(args.positionals[0]), body.dump());
        if (!r)
            return report_error(r.error());
        std::printf("%s %s\n", args.positionals[0].c_str(), (*r)["status"].get<std::string>().c_str());
        return kExitOk;
    });
}

int announce_resolve(int argc, char** argv, int first)
{
    VerbSpec spec{
        "announce resolve",
        "NID | --ref REF [--json]",
        "Resolve an agent NID (or a spawn_spec_ref) to its validated SpawnSpec, as a worker spawn would.",
        "Prints the normalised SpawnSpec, or the NOP-SPAWN-SPEC-INVALID message saying what failed.\n"
        "Remote SpawnSpecs are fetched by the daemon, under its [spawn] rules and cache.",
        {{"--ref", "REF", "resolve this spawn_spec_ref instead of an agent's"},
         {"--json", nullptr, "print the API's JSON"}},
        0,
        1,
    };
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        auto ref = args.value("--ref");
        if (ref.has_value() == !args.positionals.empty()) {
            std::fprintf(stderr, "nps-runner: give an agent NID or --ref REF\n");
            return kExitUsage;
        }
        nlohmann::json body = ref ? nlohmann::json{{"spawn_spec_ref", *ref}}
                                  : nlohmann::json{{"agent", args.positionals[0]}};
        auto r = client.call("POST", "/v1/spawnspecs/resolve", body.dump());
        if (!r)
            return report_error(r.error());
        if (args.flag("--json")) {
            std::printf("%s\n", r->dump(2).c_str());
            return kExitOk;
        }
        std::printf("%s\n", (*r)["spawn_spec"].dump(2).c_str());
        std::fprintf(stderr, "source %s, cache %s\n", (*r)["source"].get<std::string>().c_str(),
                     (*r)["cache"].get<std::string>().c_str());
        return kExitOk;
    });
}

int announce_ls(int argc, char** argv, int first)
{
    VerbSpec spec{"announce ls", "[--json]", "List the agents in the local NDP registry.", "",
                  {{"--json", nullptr, "print the API's JSON"}}, 0, 0};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        auto list = client.call("GET", "/v1/ndp/announces");
        if (!list)
            return report_error(list.error());
        if (args.flag("--json")) {
            std::printf("%s\n", list->dump(2).c_str());
            return kExitOk;
        }
        for (const auto& a : (*list)["announces"]) {
            std::string ref = a["spawn_spec_ref"].get<std::string>();
            if (ref.size() > 60)
                ref = ref.substr(0, 57) + "...";
            std::printf("%-50s %-10s %s\n", a["nid"].get<std::string>().c_str(),
                        a["activation_mode"].get<std::string>().c_str(), ref.c_str());
        }
        return kExitOk;
    });
}

int announce_rm(int argc, char** argv, int first)
{
    VerbSpec spec{"announce rm", "NID...",
                  "Remove agents from the local NDP registry. Tasks dispatched afterwards to a removed\n"
                  "agent fail with NDP-RESOLVE-NOT-FOUND (unless [spawn] registry_url knows it); running\n"
                  "workers are not touched. Exit 1 if any NID had no announce.",
                  "", {}, 1, 1000};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        return remove_each(client, args.positionals, "/v1/ndp/announces/");
    });
}

}  // namespace nps::cli
