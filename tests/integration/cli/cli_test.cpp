// SPDX-License-Identifier: Apache-2.0
// The command line, run as a user would run it, against a real daemon.
#include <doctest/doctest.h>

#include "runner_process.hpp"

using nps::test::run_command;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::task_frame;
using nps::test::TempDir;

namespace {

const std::string kInbox = "urn:nps:agent:example.test:cli";

struct Daemon : nps::test::StartedRunner {
    using StartedRunner::StartedRunner;
    std::vector<std::string> with_server(std::vector<std::string> args) const
    {
        args.push_back("--server");
        args.push_back("unix:" + runner.socket_path());
        args.push_back("--config");
        args.push_back(dir.file("config.toml"));
        return args;
    }
};

}  // namespace

TEST_CASE("version and help")
{
    auto v = run_command({"version"});
    CHECK(v.exit_status == 0);
    CHECK(v.out.find("nps-runner ") == 0);
    auto overview = run_command({"--help"});
    CHECK(overview.exit_status == 0);
    CHECK(overview.out.find("serve") != std::string::npos);
    for (auto verb : std::vector<std::vector<std::string>>{{"serve"}, {"submit"}, {"task", "show"}, {"task", "ls"},
                                                           {"task", "wait"}, {"task", "cancel"}, {"task", "rm"},
                                                           {"task", "prune"}, {"announce"}, {"announce", "ls"},
                                                           {"announce", "rm"}, {"ps"}, {"version"}}) {
        verb.push_back("--help");
        auto help = run_command(verb);
        CHECK_MESSAGE(help.exit_status == 0, verb[0]);
        CHECK_MESSAGE(help.out.find("Usage: nps-runner " + verb[0]) == 0, help.out);
    }
    auto short_help = run_command({"task", "rm", "-h"});
    CHECK(short_help.exit_status == 0);
    CHECK(short_help.out.find("Usage: nps-runner task rm") == 0);
    auto group = run_command({"task", "--help"});
    CHECK(group.exit_status == 0);
    CHECK(group.out.find("show, ls, wait, watch, logs, cancel, rm, prune") != std::string::npos);
    CHECK(run_command({"task"}).exit_status == 2);
    CHECK(run_command({"-h"}).exit_status == 0);
    auto none = run_command({});
    CHECK(none.exit_status == 2);
    auto unknown = run_command({"frobnicate"});
    CHECK(unknown.exit_status == 2);
    CHECK(unknown.err.find("unknown verb 'frobnicate'") != std::string::npos);
    auto bad_option = run_command({"task", "ls", "--colour"});
    CHECK(bad_option.exit_status == 2);
    CHECK(bad_option.err.find("Unknown option '--colour'") != std::string::npos);
}

TEST_CASE("submit from a file and from stdin, then show, list, cancel and wait")
{
    Daemon d;
    nps::test::write_file(d.dir.file("task.json"), task_frame("cli-file"));
    auto submitted = run_command(d.with_server({"submit", "--to", kInbox, d.dir.file("task.json")}));
    REQUIRE_MESSAGE(submitted.exit_status == 0, submitted.err);
    CHECK(submitted.out == "cli-file\n");
    auto from_stdin = run_command(d.with_server({"submit", "--to", kInbox, "-"}), task_frame("cli-stdin"));
    REQUIRE_MESSAGE(from_stdin.exit_status == 0, from_stdin.err);
    CHECK(from_stdin.out == "cli-stdin\n");

    auto invalid = run_command(d.with_server({"submit", "--to", kInbox, "-"}), "{\"task_id\":\"x\"}");
    CHECK(invalid.exit_status == 1);
    CHECK(invalid.err.find("NOP-TASK-DAG-INVALID: dag: required") != std::string::npos);
    auto no_target = run_command(d.with_server({"submit", d.dir.file("task.json")}));
    CHECK(no_target.exit_status == 2);
    CHECK(no_target.err.find("--to") != std::string::npos);

    auto show = run_command(d.with_server({"task", "show", "cli-file"}));
    CHECK(show.exit_status == 0);
    CHECK(show.out.find("state     PENDING") != std::string::npos);
    auto json = run_command(d.with_server({"task", "show", "cli-file", "--json"}));
    CHECK(nlohmann::json::parse(json.out)["task_id"] == "cli-file");
    auto missing = run_command(d.with_server({"task", "show", "nope"}));
    CHECK(missing.exit_status == 1);
    CHECK(missing.err.find("NOP-TASK-NOT-FOUND") != std::string::npos);

    auto list = run_command(d.with_server({"task", "ls"}));
    CHECK(list.out.find("cli-file") != std::string::npos);
    CHECK(list.out.find("cli-stdin") != std::string::npos);

    auto timeout = run_command(d.with_server({"task", "wait", "cli-file", "--timeout", "0.2"}));
    CHECK(timeout.exit_status == 3);
    auto cancel = run_command(d.with_server({"task", "cancel", "cli-file"}));
    CHECK(cancel.exit_status == 0);
    CHECK(cancel.out == "cli-file CANCELLED\n");
    auto wait = run_command(d.with_server({"task", "wait", "cli-file"}));
    CHECK(wait.exit_status == 1);  // terminal, but not COMPLETED
    CHECK(wait.out.find("NOP-TASK-CANCELLED") != std::string::npos);
}

TEST_CASE("submit without --to uses the daemon's only inbox, names a frame without task_id, says when it replays")
{
    Daemon d("[runner]\ninboxes = [\"" + kInbox + "\"]\n");
    const std::string frame = task_frame("cli-default-inbox");
    nps::test::write_file(d.dir.file("task.json"), frame);
    auto first = run_command(d.with_server({"submit", d.dir.file("task.json")}));
    REQUIRE_MESSAGE(first.exit_status == 0, first.err);
    CHECK(first.out == "cli-default-inbox\n");
    CHECK(first.err.empty());
    auto shown = run_command(d.with_server({"task", "show", "cli-default-inbox", "--json"}));
    CHECK(nlohmann::json::parse(shown.out)["nid"] == kInbox);

    auto replay = run_command(d.with_server({"submit", d.dir.file("task.json")}));
    CHECK(replay.exit_status == 0);
    CHECK(replay.out == "cli-default-inbox\n");
    CHECK_MESSAGE(replay.err.find("already existed") != std::string::npos, replay.err);

    nlohmann::json unnamed = nlohmann::json::parse(frame);
    unnamed.erase("task_id");
    auto generated = run_command(d.with_server({"submit", "-"}), unnamed.dump());
    REQUIRE_MESSAGE(generated.exit_status == 0, generated.err);
    const std::string id = generated.out.substr(0, generated.out.size() - 1);
    CHECK(id.size() == 36);
    CHECK(id[14] == '4');  // a version 4 UUID
    CHECK(generated.err.find("names no task_id; it was given " + id) != std::string::npos);
    CHECK(nlohmann::json::parse(run_command(d.with_server({"task", "show", id, "--json"})).out)["task_id"] == id);
    auto again = run_command(d.with_server({"submit", "-"}), unnamed.dump());
    CHECK(again.out != generated.out);  // a new task each time: it has no identity of its own
}

TEST_CASE("announce and announce ls")
{
    Daemon d;
    auto put = run_command(d.with_server({"announce", "urn:nps:agent:example.test:adder", "--spawn-spec", "spawnspec:e30"}));
    REQUIRE_MESSAGE(put.exit_status == 0, put.err);
    CHECK(put.out == "urn:nps:agent:example.test:adder registered\n");
    auto ls = run_command(d.with_server({"announce", "ls"}));
    CHECK(ls.out.find("urn:nps:agent:example.test:adder") != std::string::npos);
    auto missing = run_command(d.with_server({"announce", "urn:nps:agent:example.test:adder"}));
    CHECK(missing.exit_status == 2);

    // A SpawnSpec built from --image/--command/--env, or read from a file: no base64 by hand.
    auto built = run_command(d.with_server({"announce", "urn:nps:agent:example.test:built", "--image", "demo:1",
                                            "--command", "/bin/worker double", "--env", "MODE=fast"}));
    REQUIRE_MESSAGE(built.exit_status == 0, built.err);
    auto resolved = run_command(d.with_server({"announce", "resolve", "urn:nps:agent:example.test:built"}));
    REQUIRE_MESSAGE(resolved.exit_status == 0, resolved.err);
    const auto spec = nlohmann::json::parse(resolved.out);
    CHECK(spec["image"] == "demo:1");
    CHECK(spec["command"] == nlohmann::json::array({"/bin/worker", "double"}));
    CHECK(spec["env"]["MODE"] == "fast");
    nps::test::write_file(d.dir.file("spec.json"), R"({"image":"demo:2","command":["/bin/worker","emit","{}"]})");
    auto from_file = run_command(d.with_server({"announce", "urn:nps:agent:example.test:filed", "--spawn-spec-file",
                                                d.dir.file("spec.json")}));
    REQUIRE_MESSAGE(from_file.exit_status == 0, from_file.err);
    auto filed = run_command(d.with_server({"announce", "resolve", "urn:nps:agent:example.test:filed"}));
    CHECK(nlohmann::json::parse(filed.out)["command"] == nlohmann::json::array({"/bin/worker", "emit", "{}"}));
    nps::test::write_file(d.dir.file("bad.json"), R"({"image":"demo:2","memory":"lots"})");
    auto bad = run_command(d.with_server({"announce", "urn:nps:agent:example.test:bad", "--spawn-spec-file",
                                          d.dir.file("bad.json")}));
    CHECK(bad.exit_status == 2);
    CHECK(bad.err.find("NOP-SPAWN-SPEC-INVALID") != std::string::npos);
    auto both = run_command(d.with_server({"announce", "urn:nps:agent:example.test:bad", "--image", "demo:1",
                                           "--spawn-spec", "spawnspec:e30"}));
    CHECK(both.exit_status == 2);
    CHECK(both.err.find("give one of") != std::string::npos);

    auto rm = run_command(d.with_server({"announce", "rm", "urn:nps:agent:example.test:adder"}));
    CHECK_MESSAGE(rm.exit_status == 0, rm.err);
    CHECK(rm.out == "urn:nps:agent:example.test:adder removed\n");
    CHECK(run_command(d.with_server({"announce", "ls"})).out.find("adder") == std::string::npos);
    auto again = run_command(d.with_server({"announce", "rm", "urn:nps:agent:example.test:adder"}));
    CHECK(again.exit_status == 1);
    CHECK(again.err.find("NDP-RESOLVE-NOT-FOUND") != std::string::npos);
}

TEST_CASE("ps on an idle daemon, and its JSON")
{
    Daemon d;
    auto ps = run_command(d.with_server({"ps"}));
    CHECK_MESSAGE(ps.exit_status == 0, ps.err);
    CHECK(ps.out == "no workers running\n");
    auto json = run_command(d.with_server({"ps", "--json"}));
    CHECK(json.exit_status == 0);
    CHECK(nlohmann::json::parse(json.out)["count"] == 0);
}

TEST_CASE("a client with no daemon says how to fix it")
{
    TempDir dir;
    auto r = run_command({"task", "ls", "--server", "unix:" + dir.file("absent.sock")});
    CHECK(r.exit_status == 1);
    CHECK(r.err.find("Cannot reach nps-runner") != std::string::npos);
}

TEST_CASE("worker-supplied text is printed escaped, and as it came with --raw")
{
    using Json = nlohmann::json;
    Daemon d;
    // An OSC title change, a screen clear, a C1 CSI and a bidi override.
    const std::string evil = "\x1b]0;pwned\x07\x1b[2J\xc2\x9b" "31m\xe2\x80\xae" "end";
    const std::string inbox = d.runner.url() + "/v1/inbox/" + nps::net::url_encode(kInbox);
    auto deposit = nps::test::http("POST", inbox, task_frame("cli-escape"));
    REQUIRE_MESSAGE(deposit.status == 201, deposit.raw);
    const std::string dedup = deposit.body["dedup_key"].get<std::string>();
    const std::string runner = "urn:nps:agent:example.test:escape-runner";
    auto claim = nps::test::http("POST", inbox + "/claims", Json{{"runner_nid", runner}, {"lease_seconds", 30}}.dump());
    REQUIRE_MESSAGE(claim.status == 200, claim.raw);
    auto report = nps::test::http("PATCH", d.runner.url() + "/v1/tasks/cli-escape/nodes/n0",
                                  Json{{"dedup_key", dedup}, {"runner_nid", runner}, {"state", "COMPLETED"},
                                       {"attempts", 1}, {"result", {{"says", evil}}}}
                                      .dump());
    REQUIRE_MESSAGE(report.status == 200, report.raw);
    auto done = nps::test::http("POST", d.runner.url() + "/v1/leases/cli-escape/complete",
                                Json{{"runner_nid", runner}, {"state", "FAILED"}, {"error_code", "NOP-DELEGATE-REJECTED"},
                                     {"error_message", evil}}
                                    .dump());
    REQUIRE_MESSAGE(done.status == 200, done.raw);

    auto no_control = [](const std::string& text) {
        for (unsigned char c : text)
            if ((c < 0x20 && c != '\n') || c == 0x7f)
                return false;
        return text.find("\xc2\x9b") == std::string::npos && text.find("\xe2\x80\xae") == std::string::npos;
    };
    for (const char* verb : {"show", "wait"}) {
        auto shown = run_command(d.with_server({"task", verb, "cli-escape"}));
        CHECK_MESSAGE(shown.exit_status == (std::string(verb) == "show" ? 0 : 1), shown.err);
        CHECK_MESSAGE(no_control(shown.out), shown.out);
        // The task's error message as text, the node's result as (ASCII) JSON.
        CHECK_MESSAGE(shown.out.find("\\x1b]0;pwned\\x07\\x1b[2J\\u009b31m\\u202eend") != std::string::npos, shown.out);
        CHECK_MESSAGE(shown.out.find("\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u202eend") != std::string::npos,
                      shown.out);

        auto raw = run_command(d.with_server({"task", verb, "cli-escape", "--raw"}));
        CHECK(raw.out.find(evil) != std::string::npos);

        auto json = run_command(d.with_server({"task", verb, "cli-escape", "--json"}));
        CHECK_MESSAGE(no_control(json.out), json.out);
        auto parsed = Json::parse(json.out);  // still valid JSON, with the same value
        CHECK(parsed["error_message"] == evil);
    }
    auto list = run_command(d.with_server({"task", "ls"}));
    CHECK(no_control(list.out));
    CHECK(list.out.find("cli-escape") != std::string::npos);
}

TEST_CASE("every verb that prints takes --json: cancel, rm, announce, announce rm, task logs, version")
{
    Daemon d;
    auto version = run_command({"version", "--json"});
    REQUIRE(version.exit_status == 0);
    const auto v = nlohmann::json::parse(version.out);
    CHECK(v["version"] == NPS_RUNNER_VERSION);
    CHECK(v["schema"].get<int>() >= 5);

    REQUIRE(run_command(d.with_server({"submit", "--to", kInbox, "-"}), task_frame("json-1")).exit_status == 0);
    auto cancel = run_command(d.with_server({"task", "cancel", "json-1", "--json"}));
    REQUIRE_MESSAGE(cancel.exit_status == 0, cancel.err);
    CHECK(nlohmann::json::parse(cancel.out)["state"] == "CANCELLED");

    auto logs = run_command(d.with_server({"task", "logs", "json-1", "n1", "--json"}));
    CHECK(logs.exit_status == 1);  // no worker ran here: the error, not JSON
    CHECK(logs.err.find("NOP-TASK-NOT-FOUND") != std::string::npos);
    CHECK(run_command(d.with_server({"task", "logs", "json-1", "n1", "-f", "--json"})).exit_status == 2);

    auto removed = run_command(d.with_server({"task", "rm", "json-1", "nope", "--json"}));
    CHECK(removed.exit_status == 1);  // one of two could not go
    const auto results = nlohmann::json::parse(removed.out);
    REQUIRE(results.size() == 2);
    CHECK(results[0] == nlohmann::json{{"id", "json-1"}, {"removed", true}});
    CHECK(results[1]["removed"] == false);
    CHECK(results[1]["error"] == "NOP-TASK-NOT-FOUND");

    auto put = run_command(
        d.with_server({"announce", "urn:nps:agent:example.test:json", "--spawn-spec", "spawnspec:e30", "--json"}));
    REQUIRE_MESSAGE(put.exit_status == 0, put.err);
    CHECK(nlohmann::json::parse(put.out).contains("status"));
    auto gone = run_command(d.with_server({"announce", "rm", "urn:nps:agent:example.test:json", "--json"}));
    CHECK(gone.exit_status == 0);
    CHECK(nlohmann::json::parse(gone.out)[0]["removed"] == true);
}
