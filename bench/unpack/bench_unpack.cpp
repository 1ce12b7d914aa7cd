// SPDX-License-Identifier: Apache-2.0
// bench-unpack: the same gzip layer unpacked by unpack_layer() and by its
// peers in the same run, interleaved, each from a warm page cache and after
// a sync() so no contender pays for another's writeback; nothing is
// deleted until the end.
//
//   bench-unpack --image DIR/oci:TAG [--rounds N] [--work DIR]
//
// Contenders: ours (Durability::sync, as the layer cache runs it), ours
// without the final syncfs, `umoci unpack` (the DESIGN §5 anchor; it also
// writes a runtime config, negligible here), and `tar -xzf` as a floor.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/image/layer_unpack.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& message)
{
    std::fprintf(stderr, "bench-unpack: %s\n", message.c_str());
    std::exit(1);
}

nlohmann::json read_json(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        die("cannot read " + path);
    return nlohmann::json::parse(in);
}

std::string blob_path(const std::string& layout, const std::string& digest)
{
    return layout + "/blobs/sha256/" + digest.substr(digest.find(':') + 1);
}

struct Layer {
    std::string blob;
    std::string media_type;
    std::string diff_id;
};

// The single layer of tag `tag` in an OCI layout (what make-image.sh makes).
Layer find_layer(const std::string& layout, const std::string& tag)
{
    nlohmann::json index = read_json(layout + "/index.json");
    for (const auto& m : index.at("manifests")) {
        if (m.value("annotations", nlohmann::json::object()).value("org.opencontainers.image.ref.name", "") != tag)
            continue;
        nlohmann::json manifest = read_json(blob_path(layout, m.at("digest")));
        nlohmann::json config = read_json(blob_path(layout, manifest.at("config").at("digest")));
        const auto& layers = manifest.at("layers");
        if (layers.size() != 1)
            die("expected an image with exactly one layer, found " + std::to_string(layers.size()));
        return {blob_path(layout, layers[0].at("digest")), layers[0].at("mediaType"),
                config.at("rootfs").at("diff_ids")[0]};
    }
    die("no tag '" + tag + "' in " + layout);
}

double cpu_seconds(const rusage& ru)
{
    auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// Runs argv to completion; returns its CPU time (user + system, all threads,
// and the descendants it reaped).
double run(const std::vector<std::string>& argv)
{
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    if (::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0)
        die("cannot run " + argv[0]);
    int status = 0;
    rusage ru {};
    ::wait4(pid, &status, 0, &ru);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die(argv[0] + " failed");
    return cpu_seconds(ru);
}

// CPU time of the calling thread so far.
double thread_cpu_seconds()
{
    rusage ru {};
    ::getrusage(RUSAGE_THREAD, &ru);
    return cpu_seconds(ru);
}

struct Timing {
    double wall = 0;
    double cpu = 0;
};

// `work` returns the CPU time it used.
Timing time_of(const std::function<double()>& work)
{
    ::sync();
    auto start = Clock::now();
    double cpu = work();
    return {std::chrono::duration<double>(Clock::now() - start).count(), cpu};
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string image;
    std::string work = "/tmp/nps-bench-unpack-work";
    int rounds = 3;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--image" && i + 1 < argc)
            image = argv[++i];
        else if (arg == "--rounds" && i + 1 < argc)
            rounds = std::max(1, std::atoi(argv[++i]));
        else if (arg == "--work" && i + 1 < argc)
            work = argv[++i];
        else {
            std::printf("usage: bench-unpack --image DIR/oci:TAG [--rounds N] [--work DIR]\n"
                        "  make the image with bench/unpack/make-image.sh DIR\n");
            return arg == "--help" ? 0 : 2;
        }
    }
    std::size_t colon = image.rfind(':');
    if (colon == std::string::npos)
        die("--image DIR/oci:TAG is required");
    std::string layout = image.substr(0, colon);
    Layer layer = find_layer(layout, image.substr(colon + 1));
    if (::geteuid() != 0)
        die("run as root: both contenders keep owners and device nodes");

    fs::remove_all(work);
    fs::create_directories(work);
    // Every run writes a directory of its own, all removed at the end: on
    // ext4, creating inodes right after tens of thousands were deleted is
    // slow (the allocator skips recently deleted inodes, scanning inode
    // bitmaps), which would charge one contender for another's cleanup.
    std::string target;

    std::map<std::string, std::vector<double>> walls;
    std::map<std::string, std::vector<double>> cpus;
    nps::image::UnpackStats stats;
    auto ours = [&](nps::image::Durability durability) {
        double cpu_before = thread_cpu_seconds();
        auto r = nps::image::unpack_layer({.blob_path = layer.blob,
                                           .media_type = layer.media_type,
                                           .diff_id = layer.diff_id,
                                           .target_dir = target,
                                           .durability = durability});
        if (!r)
            die(r.error().describe());
        stats = *r;
        return thread_cpu_seconds() - cpu_before;
    };
    const std::vector<std::pair<std::string, std::function<double()>>> contenders = {
        {"ours", [&] { return ours(nps::image::Durability::sync); }},
        {"ours-nosync", [&] { return ours(nps::image::Durability::none); }},
        {"umoci", [&] { return run({"umoci", "--log", "error", "unpack", "--image", image, target}); }},
        {"tar", [&] {
             fs::create_directories(target);
             // wait4() counts tar and the gzip it runs and reaps.
             return run({"tar", "--numeric-owner", "-xzf", layer.blob, "-C", target});
         }},
    };

    std::printf("layer %s\n  blob %s (%.1f MB, %s)\n", layer.diff_id.c_str(), layer.blob.c_str(),
                static_cast<double>(fs::file_size(layer.blob)) / 1e6, layer.media_type.c_str());
    for (int round = 1; round <= rounds; ++round) {
        std::printf("round %d:", round);
        // Rotate the order each round so no contender always runs first.
        for (std::size_t k = 0; k < contenders.size(); ++k) {
            const auto& [name, work_fn] = contenders[(k + static_cast<std::size_t>(round - 1)) % contenders.size()];
            target = work + "/" + name + "-" + std::to_string(round);
            Timing t = time_of(work_fn);
            walls[name].push_back(t.wall);
            cpus[name].push_back(t.cpu);
            std::printf("  %s %.2f s (cpu %.2f)", name.c_str(), t.wall, t.cpu);
            std::fflush(stdout);
        }
        std::printf("\n");
    }
    std::printf("  uncompressed tar %.1f MB, %llu entries (%llu files, %llu dirs, %llu symlinks, %llu hard links)\n",
                static_cast<double>(stats.tar_bytes) / 1e6, static_cast<unsigned long long>(stats.entries),
                static_cast<unsigned long long>(stats.regular_files), static_cast<unsigned long long>(stats.directories),
                static_cast<unsigned long long>(stats.symlinks), static_cast<unsigned long long>(stats.hard_links));

    auto m = [&](const char* name) { return median(walls[name]); };
    auto c = [&](const char* name) { return median(cpus[name]); };
    std::printf("median of %d, wall (cpu): ours %.2f s (%.2f), ours without syncfs %.2f s (%.2f), "
                "umoci unpack %.2f s (%.2f), tar -xzf %.2f s (%.2f)\n",
                rounds, m("ours"), c("ours"), m("ours-nosync"), c("ours-nosync"), m("umoci"), c("umoci"), m("tar"),
                c("tar"));
    std::printf("umoci / ours: wall %.2fx (target >= 2x), cpu %.2fx; umoci / ours-nosync: wall %.2fx; "
                "tar / ours: wall %.2fx\n",
                m("umoci") / m("ours"), c("umoci") / c("ours"), m("umoci") / m("ours-nosync"), m("tar") / m("ours"));
    fs::remove_all(work);
    return 0;
}
