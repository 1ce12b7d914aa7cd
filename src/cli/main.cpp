// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/main.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#include "nps/cli/verbs.hpp"

namespace nps::cli {

namespace {

constexpr const char* kOverview = R"(Usage: nps-runner VERB [OPTIONS]

nps-runner is the NPS-Node L3 on-demand runtime: it keeps a durable per-NID
inbox of NOP TaskFrames, leases them to competing runners without double
execution, and runs each DAG node as an ephemeral sandboxed worker.

Verbs:
  serve                     run the daemon (HTTP API on 127.0.0.1:17437 and a unix socket)
  submit [--to NID] FILE|-  deposit a TaskFrame; prints its task_id
  invoke AGENT [--params J] run one node on AGENT and (--wait) print its result
  task show ID [--json]     a task's state, nodes and events
  task ls                   list tasks (--state, --limit)
  task wait ID              wait until a task is terminal (--timeout S)
  task watch ID             print a task's events as they happen, until it ends
  task logs ID [NODE] [-f]  a node's worker log; -f follows it live
  task cancel ID            cancel a task
  task rm ID...             delete finished tasks now
  task prune --older-than D delete the tasks that finished more than D (7d, 2h) ago
  announce NID --spawn-spec REF
                            register an agent NID in the local NDP registry
  announce ls               list registered agents
  announce rm NID...        remove agents from the registry
  announce resolve NID      show the SpawnSpec an agent resolves to, or why it does not
  run --image REF | --rootfs DIR -- CMD
                            run one command in a sandbox, attached
  image import PATH [--name REF]
                            import an OCI layout, oci-archive or docker-archive
  image pull REF            pull an image from an OCI distribution registry
  image ls | rm REF... | gc | inspect REF
                            list, remove, garbage-collect and inspect stored images
  config check [--config F] validate a config file; print every setting and its source
  store migrate [--store URL]
                            bring the task store's schema (runner.db or PostgreSQL) up to date
  status                    summarise a running daemon: cgroups, tasks, workers, inboxes
  ps                        the running workers: task, node, pid, uptime, memory, CPU
  ui [--task ID] [--open]   print (or open) a one-time login URL of the web dashboard
  version                   print the version

Run 'nps-runner VERB --help' for a verb's options; 'man nps-runner' for more.
)";

struct Verb {
    const char* first;
    const char* second;  // nullptr: one-word verb
    int (*run)(int, char**, int);
};

constexpr Verb kVerbs[] = {
    {"serve", nullptr, serve},
    {"submit", nullptr, submit},
    {"task", "show", task_show},
    {"task", "ls", task_ls},
    {"task", "wait", task_wait},
    {"task", "watch", task_watch},
    {"task", "logs", task_logs},
    {"task", "cancel", task_cancel},
    {"task", "rm", task_rm},
    {"task", "prune", task_prune},
    {"announce", "ls", announce_ls},
    {"announce", "rm", announce_rm},
    {"announce", "resolve", announce_resolve},
    {"announce", nullptr, announce},
    {"run", nullptr, run},
    {"image", "import", image_import},
    {"image", "pull", image_pull},
    {"image", "ls", image_ls},
    {"image", "rm", image_rm},
    {"image", "gc", image_gc},
    {"image", "inspect", image_inspect},
    {"config", "check", config_check},
    {"store", "migrate", store_migrate},
    {"status", nullptr, status},
    {"ui", nullptr, ui},
    {"ps", nullptr, ps},
    {"invoke", nullptr, invoke},
    {"version", nullptr, version},
};

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
        std::fputs(kOverview, argc < 2 ? stderr : stdout);
        return argc < 2 ? kExitUsage : kExitOk;
    }
    if (!std::strcmp(argv[1], "--version"))
        return version(argc, argv, 2);
    for (const auto& verb : kVerbs) {
        if (std::strcmp(argv[1], verb.first) != 0)
            continue;
        if (!verb.second)
            return verb.run(argc, argv, 2);
        if (argc > 2 && !std::strcmp(argv[2], verb.second))
            return verb.run(argc, argv, 3);
    }
    // A group verb without its sub-verb: the sub-verbs, on stdout for
    // --help (exit 0), else as a usage error.
    for (const char* group : {"task", "image", "config", "store"}) {
        if (std::strcmp(argv[1], group) != 0)
            continue;
        std::string subs;
        for (const auto& verb : kVerbs)
            if (!std::strcmp(verb.first, group) && verb.second)
                subs += std::string(subs.empty() ? "" : ", ") + verb.second;
        const bool help = argc > 2 && (!std::strcmp(argv[2], "--help") || !std::strcmp(argv[2], "-h"));
        std::fprintf(help ? stdout : stderr,
                     "%s'%s' needs a sub-verb: %s\nRun 'nps-runner %s SUB-VERB --help' for one's options.\n",
                     help ? "" : "nps-runner: ", group, subs.c_str(), group);
        return help ? kExitOk : kExitUsage;
    }
    std::fprintf(stderr, "nps-runner: unknown verb '%s'\nTry 'nps-runner --help'.\n", argv[1]);
    return kExitUsage;
}

}  // namespace nps::cli
