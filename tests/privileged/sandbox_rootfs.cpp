// SPDX-License-Identifier: Apache-2.0
#include "sandbox_rootfs.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "nps/config/config.hpp"
#include "nps/sandbox/userns.hpp"

namespace nps::test {

namespace {

constexpr const char* kBusybox = "/bin/busybox";

// Applet names from `busybox --list`.
std::vector<std::string> busybox_applets()
{
    std::vector<std::string> applets;
    FILE* list = ::popen("/bin/busybox --list", "re");
    if (!list)
        throw std::runtime_error("popen(busybox --list) failed");
    char line[256];
    while (std::fgets(line, sizeof line, list)) {
        std::string name(line);
        while (!name.empty() && (name.back() == '\n' || name.back() == '\r'))
            name.pop_back();
        if (!name.empty() && name.find('/') == std::string::npos)
            applets.push_back(name);
    }
    ::pclose(list);
    return applets;
}

}  // namespace

std::string sandbox_unavailable_reason()
{
    if (::geteuid() != 0)
        return "not running as root";
    if (::access(kBusybox, X_OK) != 0)
        return "no /bin/busybox (install busybox-static: scripts/install-deps)";
    pid_t pid = ::fork();
    if (pid < 0)
        return "fork failed";
    if (pid == 0)
        ::_exit(::unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP) == 0
                    ? 0
                    : 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return "cannot create pid/mount/net/uts/ipc/cgroup namespaces";
    return "";
}

std::string user_namespace_unavailable_reason()
{
    const config::Config defaults;
    return sandbox::user_namespace_unavailable_reason(
        sandbox::userns_slots_options(static_cast<std::uint32_t>(defaults.userns_first_host_id),
                                      static_cast<std::uint32_t>(defaults.userns_id_count), sandbox::kUsernsLockDir),
        sandbox::kUsernsLockDir, sandbox::RootfsKind::directory);
}

const std::string& busybox_rootfs()
{
    // `busybox --install -s` links to the busybox's absolute host path, which
    // does not exist inside the sandbox: make relative links instead.
    static const std::unique_ptr<TempDir> dir = [] {
        auto made = std::make_unique<TempDir>("nps-rootfs");
        namespace fs = std::filesystem;
        for (const char* sub : {"bin", "proc", "dev", "tmp", "sys", "etc", "root"})
            fs::create_directories(made->file(sub));
        fs::copy_file(kBusybox, made->file("bin/busybox"));
        for (const auto& applet : busybox_applets()) {
            std::error_code ec;
            fs::create_symlink("busybox", made->file("bin/" + applet), ec);
        }
        write_file(made->file("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
        ::chmod(made->path().c_str(), 0755);
        return made;
    }();
    return dir->path();
}

void install_in_rootfs(const std::string& source, const std::string& path, mode_t mode)
{
    namespace fs = std::filesystem;
    std::string target = busybox_rootfs() + "/" + path;
    fs::copy_file(source, target, fs::copy_options::overwrite_existing);
    // chmod after chown: chown clears the setuid bit.
    if (::chown(target.c_str(), 0, 0) != 0 || ::chmod(target.c_str(), mode) != 0)
        throw std::runtime_error("chown/chmod of " + target + " failed");
}

CommandResult run_sh(const std::string& script, const std::vector<std::string>& extra)
{
    std::vector<std::string> args = {"run", "--rootfs", busybox_rootfs()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return run_command(args);
}

}  // namespace nps::test
