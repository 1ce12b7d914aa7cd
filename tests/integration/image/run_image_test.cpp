// SPDX-License-Identifier: Apache-2.0
// `nps-runner run --image`: an imported image as the sandbox's root (an
// overlay of its layers), with the image config's Entrypoint, Cmd, Env,
// WorkingDir and User; nothing of the worker is left afterwards.
#include <doctest/doctest.h>

#include <filesystem>

#include "runner_process.hpp"
#include "test_images.hpp"

using nps::test::run_command;
namespace fs = std::filesystem;

namespace {

struct RunImageFixture {
    nps::test::TempDir dir{"nps-run-image"};
    std::string state = dir.path() + "/state";

    RunImageFixture()
    {
        auto imported = run_command({"image", "import", image_it::test_images().oci_dir, "--name", "bb:1",
                                     "--state-dir", state, "--quiet"});
        INFO(imported.err);
        REQUIRE(imported.exit_status == 0);
    }

    nps::test::CommandResult run(std::vector<std::string> extra, std::vector<std::string> command = {})
    {
        std::vector<std::string> args = {"run", "--image", "bb:1", "--state-dir", state};
        args.insert(args.end(), extra.begin(), extra.end());
        if (!command.empty()) {
            args.push_back("--");
            args.insert(args.end(), command.begin(), command.end());
        }
        return run_command(args);
    }

    // Worker directories and pins left behind.
    std::vector<std::string> leftovers() const
    {
        std::vector<std::string> found;
        for (const char* sub : {"/workers", "/images/pins"}) {
            std::error_code ec;
            for (auto it = fs::directory_iterator(state + sub, ec); !ec && it != fs::directory_iterator(); ++it)
                found.push_back(it->path().string());
        }
        return found;
    }
};

}  // namespace

TEST_CASE("run --image runs the image's Entrypoint and Cmd")
{
    RunImageFixture f;
    auto r = f.run({});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out == "hello from the image\n");
    for (const auto& left : f.leftovers())
        FAIL_CHECK("left behind: " << left);
}

TEST_CASE("run --image: arguments replace Cmd; Env, WorkingDir and User apply")
{
    RunImageFixture f;
    auto r = f.run({}, {"-c", "id -u; id -g; pwd; echo $GREETING; touch /written 2>/dev/null && echo root-writable; true"});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out.rfind("1000\n1000\n/tmp\nhello\n", 0) == 0);
    CHECK(r.out.find("root-writable") == std::string::npos);  // the root is read-only
    for (const auto& left : f.leftovers())
        FAIL_CHECK("left behind: " << left);
}

TEST_CASE("run --image: --env and --user override the image config")
{
    RunImageFixture f;
    auto r = f.run({"--env", "GREETING=hi", "--user", "0:0"}, {"-c", "id -u; echo $GREETING"});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(r.out == "0\nhi\n");
}

TEST_CASE("run --image: two runs share the unpacked layers; limits apply")
{
    RunImageFixture f;
    auto first = f.run({"--memory", "64Mi", "--pids", "16"}, {"-c", "exit 7"});
    CHECK(first.exit_status == 7);
    std::size_t layers = 0;
    for (const auto& e : fs::directory_iterator(f.state + "/images/layers"))
        layers += e.path().filename().string().size() == 64;
    CHECK(layers == 1);
    auto second = f.run({}, {"-c", "echo again"});
    CHECK(second.out == "again\n");
    for (const auto& left : f.leftovers())
        FAIL_CHECK("left behind: " << left);
}

TEST_CASE("run --image: an unknown image or a missing choice is a clear error")
{
    RunImageFixture f;
    auto unknown = run_command({"run", "--image", "nope:1", "--state-dir", f.state, "--", "true"});
    CHECK(unknown.exit_status == 125);
    CHECK(unknown.err.find("nope") != std::string::npos);

    auto both = run_command({"run", "--image", "bb:1", "--rootfs", "/", "--", "true"});
    CHECK(both.exit_status == 2);
    CHECK(both.err.find("either --image REF or --rootfs DIR") != std::string::npos);
}
