// SPDX-License-Identifier: Apache-2.0
// image import | pull | ls | rm | gc | inspect: the image store, used directly on
// the state directory (not through the daemon), so it works before the
// daemon runs and on air-gapped hosts without any API.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "announced_images.hpp"
#include "nps/base/time_format.hpp"
#include "nps/cli/import_progress.hpp"
#include "nps/cli/verb_runner.hpp"
#include "nps/cli/verbs.hpp"
#include "nps/config/config.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/summary_json.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

// Every image verb's: the store's location, and --json.
std::vector<OptionSpec> store_options(std::vector<OptionSpec> options)
{
    if (std::none_of(options.begin(), options.end(), [](const OptionSpec& o) { return std::string(o.name) == "--json"; }))
        options.push_back({"--json", nullptr, "print the outcome as JSON"});
    options.push_back({"--state-dir", "DIR", "state directory (default: runner.state_dir from config, else /var/lib/nps-runner)"});
    options.push_back({"--config", "FILE", "configuration file (default /etc/nps-runner/config.toml)"});
    return options;
}

struct StoreContext {
    config::Config config;
    std::unique_ptr<image::ImageStore> store;
};

Result<StoreContext> open_store(const ParsedArgs& args)
{
    auto config_path = args.value("--config");
    StoreContext ctx;
    ctx.config = NPS_TRY(config::load_config(config_path.value_or(config::kDefaultConfigPath), config_path.has_value()));
    if (auto dir = args.value("--state-dir"))
        ctx.config.state_dir = *dir;
    ctx.store = NPS_TRY(image::ImageStore::open({.state_dir = ctx.config.state_dir}));
    return ctx;
}

std::string age(std::int64_t at_ms)
{
    const std::int64_t seconds = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::time(nullptr)) - at_ms / 1000);
    if (seconds < 60)
        return std::to_string(seconds) + "s ago";
    if (seconds < 3600)
        return std::to_string(seconds / 60) + "m ago";
    if (seconds < 86400)
        return std::to_string(seconds / 3600) + "h ago";
    return std::to_string(seconds / 86400) + "d ago";
}

Json config_json(const image::ImageConfig& c)
{
    return {{"entrypoint", c.entrypoint}, {"cmd", c.cmd}, {"env", c.env}, {"working_dir", c.working_dir},
            {"user", c.user}};
}

// --platform, when given, into `platform`; false after a usage message.
bool read_platform_option(const ParsedArgs& args, std::optional<image::Platform>& platform)
{
    auto text = args.value("--platform");
    if (!text)
        return true;
    auto parsed = image::parse_platform(*text);
    if (!parsed) {
        std::fprintf(stderr, "nps-runner: %s\n", parsed.error().message.c_str());
        return false;
    }
    platform = *parsed;
    return true;
}

// "Imported NAME DIGEST (PLATFORM, SIZE)[, replacing OLD]"
Json stored_json(const image::ImportedImage& image)
{
    return {{"name", image.name},
            {"manifest_digest", image.manifest_digest},
            {"platform", image.platform.to_string()},
            {"size", image.size},
            {"replaced", image.replaced ? Json(*image.replaced) : Json(nullptr)}};
}

void print_stored(const char* what, const image::ImportedImage& image)
{
    std::printf("%s %s %s (%s, %s)", what, image.name.c_str(), image.manifest_digest.c_str(),
                image.platform.to_string().c_str(), format_bytes(image.size).c_str());
    if (image.replaced)
        std::printf(", replacing %s", image.replaced->c_str());
    std::printf("\n");
}

}  // namespace

int image_import(int argc, char** argv, int first)
{
    const VerbSpec spec{
        "image import",
        "PATH [--name REF] [--platform OS/ARCH[/VARIANT]] [--quiet]",
        "Import an image from an OCI image layout directory, an oci-archive tar or a docker-archive tar.",
        "The blobs are verified against their digests and stored under STATE_DIR/images; the image's\n"
        "name is recorded in runner.db. From a multi-platform index the manifest for this host's\n"
        "platform is chosen (or --platform's). Without --name the names come from the source\n"
        "(RepoTags of a docker-archive, the io.containerd.image.name or a full\n"
        "org.opencontainers.image.ref.name annotation of an OCI layout); a source that names its\n"
        "image only by tag needs --name. With --name and a source holding several images, the name\n"
        "or its tag selects one. Progress is shown on a terminal.\n\n"
        "Example:\n  nps-runner image import busybox.tar --name busybox:1.36",
        store_options({{"--name", "REF", "name to record (REPOSITORY[:TAG], default tag 'latest')"},
                       {"--platform", "OS/ARCH[/VARIANT]", "platform to choose from an index (default: this host's)"},
                       {"--quiet", nullptr, "no progress display"}}),
        1,
        1,
    };
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    image::ImportRequest request{.path = args->positionals[0], .name = args->value("--name")};
    if (!read_platform_option(*args, request.platform))
        return kExitUsage;
    auto ctx = open_store(*args);
    if (!ctx)
        return report_error(ctx.error());
    ImportProgressDisplay display(stderr, ImportProgressDisplay::mode_for(STDERR_FILENO, args->flag("--quiet")));
    auto imported = ctx->store->import(request, [&](const image::ImportProgress& p) { display.update(p); });
    display.finish();
    if (!imported)
        return report_error(imported.error());
    if (args->flag("--json")) {
        Json list = Json::array();
        for (const auto& image : *imported)
            list.push_back(stored_json(image));
        std::printf("%s\n", list.dump(2).c_str());
        return kExitOk;
    }
    for (const auto& image : *imported)
        print_stored("Imported", image);
    return kExitOk;
}


int image_pull(int argc, char** argv, int first)
{
    const VerbSpec spec{
        "image pull",
        "REF [--name REF] [--platform OS/ARCH[/VARIANT]] [--quiet]",
        "Pull an image from an OCI distribution registry into the image store.",
        "REF is [REGISTRY[:PORT]/]REPOSITORY[:TAG][@sha256:DIGEST]. Without a registry, images.default_registry\n"
        "from the configuration is used (there is no implicit Docker Hub). Registries are reached over https,\n"
        "trusting the system CAs and images.ca_file; plain http only for images.insecure_registries.\n"
        "Credentials come from [images.auth.\"HOST:PORT\"] (basic, or for a token service). From an index,\n"
        "the manifest for this host's platform is chosen (or --platform's). Every blob is verified against\n"
        "its digest while it streams; blobs already in the store are verified and not fetched again.\n"
        "A pull by digest checks the manifest against it. The image is recorded under REF as written\n"
        "(default tag 'latest'; with only a digest, the tag 'sha256-HEX') unless --name says otherwise.\n"
        "Transient failures are retried with backoff. Progress is shown on a terminal.\n\n"
        "Examples:\n  nps-runner image pull registry.example.com/tools/busybox:1.36\n"
        "  nps-runner image pull 127.0.0.1:5000/app@sha256:0123… --name app:pinned",
        store_options({{"--name", "REF", "name to record (REPOSITORY[:TAG], default tag 'latest')"},
                       {"--platform", "OS/ARCH[/VARIANT]", "platform to choose from an index (default: this host's)"},
                       {"--quiet", nullptr, "no progress display and no retry notices"}}),
        1,
        1,
    };
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    const bool quiet = args->flag("--quiet");
    image::PullRequest request{.reference = args->positionals[0], .name = args->value("--name")};
    if (!read_platform_option(*args, request.platform))
        return kExitUsage;
    auto ctx = open_store(*args);
    if (!ctx)
        return report_error(ctx.error());
    request.settings = ctx->config.registries;
    ImportProgressDisplay display(stderr, ImportProgressDisplay::mode_for(STDERR_FILENO, quiet), {}, "Pulling");
    if (!quiet)
        request.notice = [&](const std::string& message) {
            display.finish();
            std::fprintf(stderr, "nps-runner: %s\n", message.c_str());
        };
    auto pulled = ctx->store->pull(request, [&](const image::ImportProgress& p) { display.update(p); });
    display.finish();
    if (!pulled)
        return report_error(pulled.error());
    if (args->flag("--json"))
        std::printf("%s\n", stored_json(*pulled).dump(2).c_str());
    else
        print_stored("Pulled", *pulled);
    return kExitOk;
}

int image_ls(int argc, char** argv, int first)
{
    const VerbSpec spec{"image ls",
                        "[--json] [--blobs]",
                        "List the images in the image store.",
                        "--blobs lists every recorded blob with its reference count (names that reach it) and\n"
                        "the number of running workers pinning it.",
                        store_options({{"--json", nullptr, "print JSON"},
                                       {"--blobs", nullptr, "list blobs and their reference counts instead"}}),
                        0,
                        0};
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    auto ctx = open_store(*args);
    if (!ctx)
        return report_error(ctx.error());
    const bool json = args->flag("--json");
    if (args->flag("--blobs")) {
        auto blobs = ctx->store->blobs();
        if (!blobs)
            return report_error(blobs.error());
        Json out = Json::array();
        if (!json)
            std::printf("%-71s  %-8s  %10s  %4s  %4s\n", "DIGEST", "KIND", "SIZE", "REFS", "PINS");
        for (const auto& b : *blobs) {
            if (json)
                out.push_back({{"digest", b.digest}, {"kind", b.kind}, {"size", b.size}, {"refs", b.refs},
                               {"pins", b.pins}, {"present", b.present}});
            else
                std::printf("%-71s  %-8s  %10s  %4zu  %4zu%s\n", b.digest.c_str(), b.kind.c_str(),
                            format_bytes(b.size).c_str(), b.refs, b.pins, b.present ? "" : "  (missing)");
        }
        if (json)
            std::printf("%s\n", out.dump(2).c_str());
        return kExitOk;
    }
    auto images = ctx->store->list();
    if (!images)
        return report_error(images.error());
    if (json) {
        Json out = Json::array();
        for (const auto& i : *images)
            out.push_back(image::summary_json(i));
        std::printf("%s\n", out.dump(2).c_str());
        return kExitOk;
    }
    std::printf("%-40s  %-12s  %-14s  %6s  %10s  %s\n", "NAME", "DIGEST", "PLATFORM", "LAYERS", "SIZE", "IMPORTED");
    for (const auto& i : *images)
        std::printf("%-40s  %-12s  %-14s  %6zu  %10s  %s%s\n", i.name.empty() ? "<none>" : i.name.c_str(),
                    image::short_digest(i.manifest_digest).c_str(), i.platform.c_str(), i.layers,
                    format_bytes(i.size).c_str(), age(i.imported_at_ms).c_str(),
                    i.pins ? ("  (in use: " + std::to_string(i.pins) + ")").c_str() : "");
    return kExitOk;
}

namespace {

void print_report(const image::CollectReport& r, bool json)
{
    if (json) {
        const Json out = {{"untagged", r.untagged},
                          {"removed_manifests", r.removed_manifests},
                          {"removed_blobs", r.removed_blobs},
                          {"removed_layers", r.removed_layers},
                          {"evicted_layers", r.evicted_layers},
                          {"kept_pinned", r.kept_pinned},
                          {"stale_pins", r.stale_pins},
                          {"unfinished_blobs", r.temp_files},
                          {"freed_bytes", r.freed_bytes},
                          {"usage_bytes", r.usage_bytes},
                          {"over_threshold", r.over_threshold}};
        std::printf("%s\n", out.dump(2).c_str());
        return;
    }
    for (const auto& name : r.untagged)
        std::printf("Untagged %s\n", name.c_str());
    for (const auto& digest : r.removed_manifests)
        std::printf("Deleted image %s\n", digest.c_str());
    for (const auto& digest : r.kept_pinned)
        std::printf("Kept image %s: in use by a running worker (removed by 'image gc' once it is not)\n",
                    digest.c_str());
    std::printf("Removed %zu blob%s, %zu unpacked layer%s", r.removed_blobs.size(),
                r.removed_blobs.size() == 1 ? "" : "s", r.removed_layers.size(),
                r.removed_layers.size() == 1 ? "" : "s");
    if (!r.evicted_layers.empty())
        std::printf(", evicted %zu unpacked layer%s", r.evicted_layers.size(), r.evicted_layers.size() == 1 ? "" : "s");
    if (r.stale_pins)
        std::printf(", %zu stale pin%s", r.stale_pins, r.stale_pins == 1 ? "" : "s");
    if (r.temp_files)
        std::printf(", %zu unfinished blob%s", r.temp_files, r.temp_files == 1 ? "" : "s");
    std::printf("; freed %s\n", format_bytes(r.freed_bytes).c_str());
}

}  // namespace

int image_rm(int argc, char** argv, int first)
{
    const VerbSpec spec{"image rm",
                        "REF...",
                        "Remove image names, and the content no other name and no running worker uses.",
                        "REF is a name (REPOSITORY[:TAG]), a manifest digest (sha256:HEX, removing all its names)\n"
                        "or a unique prefix of at least 12 hex digits. Blobs and unpacked layers shared with\n"
                        "other images stay; an image in use by a running worker keeps its content until\n"
                        "'image gc' runs after the worker ended. An image that an announced agent's SpawnSpec\n"
                        "names is refused (nothing is removed) unless --force is given.",
                        store_options({{"--force", nullptr, "remove images that announced agents use"}}),
                        1,
                        static_cast<std::size_t>(-1)};
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    auto ctx = open_store(*args);
    if (!ctx)
        return report_error(ctx.error());
    if (!args->flag("--force")) {
        auto in_use = images_in_use(ctx->config, *ctx->store, args->positionals);
        if (!in_use)
            return report_error(in_use.error());
        for (const auto& use : *in_use)
            std::fprintf(stderr, "nps-runner: image '%s' is used by agent %s (SpawnSpec image '%s')\n",
                         use.target.c_str(), use.nid.c_str(), use.image.c_str());
        if (!in_use->empty()) {
            std::fprintf(stderr, "nps-runner: nothing removed: 'nps-runner announce rm NID' first, or --force\n");
            return kExitFailure;
        }
    }
    auto report = ctx->store->remove(args->positionals);
    if (!report)
        return report_error(report.error());
    print_report(*report, args->flag("--json"));
    return kExitOk;
}

int image_gc(int argc, char** argv, int first)
{
    const VerbSpec spec{"image gc",
                        "",
                        "Remove unreferenced images, blobs and unpacked layers; apply the disk thresholds.",
                        "Everything no name and no running worker uses is removed, as are unfinished blobs of\n"
                        "dead imports and pins of dead processes. Then, while the store is above\n"
                        "images.gc_max_bytes or its filesystem above images.gc_max_disk_percent, unpacked\n"
                        "layers of images not in use are evicted, least recently used first (their blobs stay;\n"
                        "they are unpacked again when next used). Named images are never removed by gc.",
                        store_options({}),
                        0,
                        0};
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    auto ctx = open_store(*args);
    if (!ctx)
        return report_error(ctx.error());
    const image::GcPolicy policy{.max_bytes = ctx->config.images_gc_max_bytes,
                                 .max_disk_percent = ctx->config.images_gc_max_disk_percent};
    auto report = ctx->store->gc(policy);
    if (!report)
        return report_error(report.error());
    print_report(*report, args->flag("--json"));
    if (!args->flag("--json"))
        std::printf("Image store: %s\n", format_bytes(report->usage_bytes).c_str());
    if (report->over_threshold)
        std::fprintf(stderr,
                     "nps-runner: warning: the image store is still above its thresholds; what remains is named "
                     "or in use (remove images with 'nps-runner image rm')\n");
    return kExitOk;
}

int image_inspect(int argc, char** argv, int first)
{
    const VerbSpec spec{"image inspect", "REF", "Print an image's manifest digest, layers and runtime config as JSON.",
                        "", store_options({{"--json", nullptr, "accepted for symmetry: the output is JSON"}}), 1, 1};
    auto [args, exit_status] = start_verb(spec, argc, argv, first);
    if (!args)
        return exit_status;
    auto ctx = open_store(*args);
    if (!ctx)
        return report_error(ctx.error());
    auto image = ctx->store->resolve(args->positionals[0]);
    if (!image)
        return report_error(image.error());
    Json layers = Json::array();
    for (const auto& l : image->layers)
        layers.push_back({{"digest", l.digest}, {"media_type", l.media_type}, {"size", l.size}, {"diff_id", l.diff_id}});
    const Json out = {{"name", image->name},
                      {"manifest_digest", image->manifest_digest},
                      {"config_digest", image->config_digest},
                      {"layers", std::move(layers)},
                      {"config", config_json(image->config)}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
}

}  // namespace nps::cli
