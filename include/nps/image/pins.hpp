// SPDX-License-Identifier: Apache-2.0
// Pins: "this image is in use by a running worker" — the hook the worker
// side uses so that gc and rm never remove what a worker runs from.
//
// A pin is a file <images>/pins/<random>.pin holding the manifest digest
// and a description of the holder, created under the shared store lock and
// flock()ed by its holder for as long as the ImagePin object lives. The
// lock is the liveness test: gc (under the exclusive store lock) treats a
// pin file it can lock as left behind by a dead process and removes it, so
// a crashed runner never pins anything forever, and pid reuse cannot fake
// a live holder.
//
// Protocol for the worker side: ImageStore::pin(ref) (resolve + pin in one
// step under the shared lock), then unpack/mount the layers, run the worker,
// unmount, and only then drop the ImagePin. While any pin names a manifest,
// gc and rm keep the manifest, its blobs and its unpacked layer directories,
// even when no ref names it any more.
#pragma once

#include <set>
#include <string>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image {

class ImagePin {
public:
    ImagePin(ImagePin&& other) noexcept;
    ImagePin& operator=(ImagePin&& other) noexcept;
    ImagePin(const ImagePin&) = delete;
    ImagePin& operator=(const ImagePin&) = delete;
    // Removes the pin file and drops the lock.
    ~ImagePin();

    const std::string& manifest_digest() const { return digest_; }
    const std::string& path() const { return path_; }

    // Internal to the image store: creates a pin in `pins_dir` (the caller
    // holds the shared store lock). `holder` is free text for operators
    // ("pid 1234 worker w-17").
    static Result<ImagePin> create(const std::string& pins_dir, const std::string& manifest_digest,
                                   const std::string& holder);

private:
    ImagePin(std::string path, std::string digest, UniqueFd fd)
        : path_(std::move(path)), digest_(std::move(digest)), fd_(std::move(fd)) {}
    void release() noexcept;

    std::string path_;
    std::string digest_;
    UniqueFd fd_;
};

struct PinScan {
    std::multiset<std::string> live;  // manifest digests of live pins (one entry per pin)
    std::size_t stale_removed = 0;    // pin files of dead holders removed (only with PinCleanup::remove_stale)
};

enum class PinCleanup { keep_stale, remove_stale };

// The live pins in `pins_dir`. remove_stale must only be used under the
// exclusive store lock.
Result<PinScan> scan_pins(const std::string& pins_dir, PinCleanup cleanup);

}  // namespace nps::image
