// SPDX-License-Identifier: Apache-2.0
// announce NID (--spawn-spec REF | --spawn-spec-file F | --image REF …) |
// announce resolve NID | announce ls | announce rm NID…
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/small_file.hpp"
#include "nps/spawn/spawn_spec.hpp"

#include "nps/cli/output.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/net/http_client.hpp"
#include "task_client.hpp"

namespace nps::cli {

namespace {

// The spawn_spec_ref the options name: --spawn-spec as given; or the
// spawnspec: data URI of --spawn-spec-file's document, or of the SpawnSpec
// built from --image, --command and --env, checked here first so a mistake
// is named before anything is sent. nullopt when none is given.
Result<std::optional<std::string>> spawn_spec_ref_of(const ParsedArgs& args)
{
    const int given = args.flag("--spawn-spec") + args.flag("--spawn-spec-file") + args.flag("--image");
    if (given > 1)
        return internal_error("give one of --spawn-spec, --spawn-spec-file and --image");
    if (auto ref = args.value("--spawn-spec"))
        return std::optional<std::string>(*ref);
    if (!args.flag("--image") && (args.flag("--command") || args.flag("--env")))
        return internal_error("--command and --env go with --image");
    std::string document;
    if (auto path = args.value("--spawn-spec-file")) {
        document = NPS_TRY(read_small_file(*path, limits::kDefaultSpawnSpecBytes, "SpawnSpec file"));
    } else if (auto image = args.value("--image")) {
        spawn::SpawnSpec spec{.image = *image};
        if (auto command = args.value("--command")) {
            // A JSON array of strings, or words split at white space.
            nlohmann::json argv = nlohmann::json::parse(*command, nullptr, /*allow_exceptions=*/false);
            if (argv.is_array()) {
                for (const auto& word : argv) {
                    if (!word.is_string())
                        return internal_error("--command: a JSON array must hold strings only");
                    spec.command.push_back(word.get<std::string>());
                }
            } else {
                std::istringstream words(*command);
                for (std::string word; words >> word;)
                    spec.command.push_back(word);
            }
        }
        for (const auto& pair : args.values("--env")) {
            const auto eq = pair.find('=');
            if (eq == std::string::npos || eq == 0)
                return internal_error("--env '" + pair + "' is not NAME=VALUE");
            spec.env[pair.substr(0, eq)] = pair.substr(eq + 1);
        }
        NPS_TRY_VOID(spawn::validate_spawn_spec(spec));
        document = spawn::spawn_spec_to_json(spec);
    } else {
        return std::optional<std::string>();
    }
    const spawn::SpawnSpec parsed = NPS_TRY(spawn::parse_spawn_spec(document, limits::kDefaultSpawnSpecBytes));
    return std::optional<std::string>("spawnspec:" + base64url_encode(spawn::spawn_spec_to_json(parsed)));
}

}  // namespace

int announce(int argc, char** argv, int first)
{
    VerbSpec spec{
        "announce",
        "NID (--spawn-spec REF | --spawn-spec-file FILE | --image REF [--command CMD] [--env K=V]...)\n"
        "                           [--activation-mode MODE] [--ttl S] [--json]",
        "Register an agent NID in the local NDP registry with the SpawnSpec it is started from.",
        "REF is a spawnspec:<base64url JSON> data URI or an https:// / nwp:// URL (see\n"
        "docs/spawnspec.md); --spawn-spec-file and --image build the data URI for you from a\n"
        "SpawnSpec JSON file or from an image and command, checked before it is sent. A DAG node\n"
        "whose agent is NID is then run as an ephemeral worker built from that SpawnSpec. A\n"
        "reference's syntax is checked now; its content when the agent is resolved\n"
        "('nps-runner announce resolve NID' shows the outcome).\n\n"
        "Examples:\n"
        "  nps-runner announce urn:nps:agent:example.com:wc --image wc:1 --command '/bin/wc-worker --words'\n"
        "  nps-runner announce urn:nps:agent:example.com:wc --spawn-spec-file wc-spec.json",
        {{"--spawn-spec", "REF", "the agent's spawn_spec_ref (one of these three unless the agent is resident)"},
         {"--spawn-spec-file", "FILE", "a SpawnSpec JSON document (docs/spawnspec.md), sent as a spawnspec: data URI"},
         {"--image", "REF", "the image of a SpawnSpec built here (imported or pullable)"},
         {"--command", "CMD", "with --image: the worker's argv, words or a JSON array (default: the image's)"},
         {"--env", "K=V", "with --image: an environment variable of the worker", true},
         {"--activation-mode", "MODE", "ephemeral (default), hybrid or resident (NDP §3.1.1)"},
         {"--ttl", "S", "seconds the announce stays fresh (default: no expiry; 0 = offline)"},
         {"--json", nullptr, "print the API's JSON"}},
        1,
        1,
    };
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        const std::string mode = args.value("--activation-mode").value_or("ephemeral");
        if (mode != "ephemeral" && mode != "hybrid" && mode != "resident") {
            std::fprintf(stderr, "nps-runner: --activation-mode must be ephemeral, hybrid or resident\n");
            return kExitUsage;
        }
        auto built = spawn_spec_ref_of(args);
        if (!built) {
            const Error& e = built.error();
            std::fprintf(stderr, "nps-runner: %s%s%s\n", e.code.c_str(), e.code.empty() ? "" : ": ",
                         e.describe().c_str());
            return kExitUsage;
        }
        const std::optional<std::string>& ref = *built;
        if (!ref && mode != "resident") {
            std::fprintf(stderr, "nps-runner: announce needs --spawn-spec REF, --spawn-spec-file FILE or --image REF\n");
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
        if (args.flag("--json"))
            Output{}.print_json(*r);
        else
            std::printf("%s %s\n", args.positionals[0].c_str(), Output{}.field((*r)["status"]).c_str());
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
    VerbSpec spec{"announce rm", "NID... [--json]",
                  "Remove agents from the local NDP registry. Tasks dispatched afterwards to a removed\n"
                  "agent fail with NDP-RESOLVE-NOT-FOUND (unless [spawn] registry_url knows it); running\n"
                  "workers are not touched. Exit 1 if any NID had no announce.",
                  "", {{"--json", nullptr, "print [{id, removed, error, message}]"}}, 1, 1000};
    return run_client_verb(spec, argc, argv, first, [](const ParsedArgs& args, const ApiClient& client) {
        return remove_each(client, args.positionals, "/v1/ndp/announces/", args.flag("--json"));
    });
}

}  // namespace nps::cli
