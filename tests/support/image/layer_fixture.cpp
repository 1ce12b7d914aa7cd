// SPDX-License-Identifier: Apache-2.0
#include "layer_fixture.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

extern char** environ;

namespace nps::test {

int run_program(const std::vector<std::string>& argv, std::string* out)
{
    int pipe_fds[2] = {-1, -1};
    REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (out != nullptr)
        posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    int err = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    if (err != 0) {
        ::close(pipe_fds[0]);
        FAIL("cannot run " << argv[0]);
    }
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0)
        text.append(buf, static_cast<std::size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (out != nullptr)
        *out = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

CraftedLayer make_layer(const LayerRecipe& recipe, const std::string& out)
{
    std::vector<std::string> argv = {"python3", NPS_IMAGE_SUPPORT_DIR "/make_layer.py", recipe.scenario, out,
                                     "--compress", recipe.compression};
    if (!recipe.outside.empty())
        argv.insert(argv.end(), {"--outside", recipe.outside});
    if (recipe.count != 0)
        argv.insert(argv.end(), {"--count", std::to_string(recipe.count)});
    std::string printed;
    int status = run_program(argv, &printed);
    REQUIRE_MESSAGE(status == 0, "make_layer.py " << recipe.scenario << " failed");
    while (!printed.empty() && printed.back() == '\n')
        printed.pop_back();
    std::string media_type = "application/vnd.oci.image.layer.v1.tar";
    if (recipe.compression != "none")
        media_type += "+" + recipe.compression;
    return {out, printed, media_type};
}

std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_text(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

}  // namespace nps::test
