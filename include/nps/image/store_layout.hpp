// SPDX-License-Identifier: Apache-2.0
// Where the image store lives under the state directory (DESIGN §3.4):
//
//   <state_dir>/runner.db                 refs and manifests (tables image_*)
//   <state_dir>/images/lock               the store lock (store_lock.hpp)
//   <state_dir>/images/blobs/sha256/<hex> content-addressed blobs, verified
//   <state_dir>/images/blobs/sha256/.tmp-* blobs being written (same dir: rename is atomic)
//   <state_dir>/images/layers/<hex>/      each layer unpacked once, by the hex of its diff_id
//   <state_dir>/images/pins/<id>.pin      images in use by running workers (pins.hpp)
//   <state_dir>/images/trash/             what gc moved out of the way, deleted after the lock is released
#pragma once

#include <string>
#include <string_view>

namespace nps::image {

struct StoreLayout {
    std::string state_dir;

    std::string database() const { return state_dir + "/runner.db"; }
    std::string images_dir() const { return state_dir + "/images"; }
    std::string lock_file() const { return images_dir() + "/lock"; }
    std::string blobs_dir() const { return images_dir() + "/blobs/sha256"; }
    std::string layers_dir() const { return images_dir() + "/layers"; }
    std::string pins_dir() const { return images_dir() + "/pins"; }
    std::string trash_dir() const { return images_dir() + "/trash"; }
    // The blob file of a valid "sha256:<hex>" digest.
    std::string blob_path(std::string_view digest) const;
    // The unpacked layer directory of a valid diff_id.
    std::string layer_dir(std::string_view diff_id) const;
};

}  // namespace nps::image
