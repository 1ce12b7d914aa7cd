// SPDX-License-Identifier: Apache-2.0
#include "announced_images.hpp"

#include "nps/base/clock.hpp"
#include "nps/base/limits.hpp"
#include "nps/spawn/spawn_spec.hpp"
#include "nps/spawn/spec_ref.hpp"
#include "nps/store/store.hpp"

namespace nps::cli {

Result<std::vector<ImageInUse>> images_in_use(const config::Config& config, image::ImageStore& images,
                                              const std::vector<std::string>& targets)
{
    auto store = NPS_TRY(store::Store::open(config.store_options(store::Synchronous::full), SystemClock::instance()));
    struct Used {
        std::string nid, image;
        image::ResolvedImage resolved;
    };
    std::vector<Used> used;
    for (const auto& announce : NPS_TRY(store->list_announces())) {
        auto kind = spawn::classify_spawn_spec_ref(announce.spawn_spec_ref);
        if (!kind || *kind != spawn::RefKind::inline_data)
            continue;
        auto json = spawn::decode_spawnspec_uri(announce.spawn_spec_ref, limits::kMaxSpawnSpecBytes);
        if (!json)
            continue;
        auto spec = spawn::parse_spawn_spec(*json, limits::kMaxSpawnSpecBytes);
        if (!spec || spec->image.empty())
            continue;
        if (auto resolved = images.resolve(spec->image))
            used.push_back({announce.nid, spec->image, std::move(*resolved)});
    }
    std::vector<ImageInUse> in_use;
    for (const auto& target : targets) {
        auto removed = images.resolve(target);
        if (!removed)
            continue;  // image rm reports it
        const bool by_digest = removed->name == removed->manifest_digest;
        for (const auto& u : used) {
            const bool hit = by_digest ? u.resolved.manifest_digest == removed->manifest_digest
                                       : u.resolved.name == removed->name;
            if (hit)
                in_use.push_back({target, u.nid, u.image});
        }
    }
    return in_use;
}

}  // namespace nps::cli
