// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nps/image/image_user.hpp"
#include "temp_dir.hpp"

using nps::image::resolve_image_user;

namespace {

void write_file(const std::string& path, const std::string& text)
{
    std::ofstream(path) << text;
}

struct Rootfs {
    nps::test::TempDir dir{"nps-image-user"};
    Rootfs()
    {
        std::filesystem::create_directories(dir.file("etc"));
        write_file(dir.file("etc/passwd"),
                              "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1001::/home/app:/bin/sh\n"
                              "broken:x:notanumber:1\n");
        write_file(dir.file("etc/group"), "root:x:0:\nstaff:x:50:\napp:x:1001:\n");
    }
};

}  // namespace

TEST_CASE("an image's User: numbers, names and groups from the image's own files")
{
    Rootfs r;
    auto ids = [&](const std::string& user) { return resolve_image_user(user, r.dir.path()); };
    CHECK(ids("")->uid == 0);
    CHECK(ids("")->gid == 0);
    CHECK(ids("1000")->gid == 1001);  // from the passwd entry
    CHECK(ids("4242")->uid == 4242);
    CHECK(ids("4242")->gid == 0);     // no entry: gid 0
    CHECK(ids("app")->uid == 1000);
    CHECK(ids("app")->gid == 1001);
    CHECK(ids("app:staff")->gid == 50);
    CHECK(ids("1000:7")->gid == 7);
    CHECK(ids("app:7")->uid == 1000);

    CHECK(ids("nobody-here").error().describe().find("'nobody-here' is not in its /etc/passwd") != std::string::npos);
    CHECK(ids("app:nogroup").error().describe().find("'nogroup' is not in its /etc/group") != std::string::npos);
    CHECK(ids("broken").error().describe().find("malformed entry") != std::string::npos);
    CHECK(!ids(":1"));
    CHECK(!ids("app:"));
}

TEST_CASE("an image's /etc/passwd symlink cannot reach the host's")
{
    nps::test::TempDir dir("nps-image-user-link");
    std::filesystem::create_directories(dir.file("etc"));
    // Absolute: resolved inside the rootfs, where it names itself (a loop).
    // The host's /etc/passwd has "root", which must not be found.
    std::filesystem::create_symlink("/etc/passwd", dir.file("etc/passwd"));
    auto root = resolve_image_user("root", dir.path());
    REQUIRE_FALSE(root);
    CHECK(root.error().describe().find("the image's /etc/passwd") != std::string::npos);
    // Relative with "..": clamped at the rootfs' root the same way.
    std::filesystem::remove(dir.file("etc/passwd"));
    std::filesystem::create_symlink("../../../../../../etc/passwd", dir.file("etc/passwd"));
    CHECK_FALSE(resolve_image_user("root", dir.path()));
}
