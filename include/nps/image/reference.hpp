// SPDX-License-Identifier: Apache-2.0
// Image names in the local store: "repository[:tag]", as a registry would
// spell them ("busybox", "registry.example.com:5000/team/app:1.2").
//
// repository: up to 255 characters of path components separated by '/'; each
// component is lowercase [a-z0-9] runs joined by '.', '_', '__' or '-'
// runs; the first component may instead be a host ("localhost:5000",
// "Registry.Example.com"). tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, default
// "latest". Names are stored as given plus the default tag — no "docker.io/
// library/" expansion: the store is local and shows what the operator typed.
#pragma once

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::image {

struct ImageName {
    std::string repository;
    std::string tag;
    std::string to_string() const { return repository + ":" + tag; }
};

// Parses a name; an error says what is wrong with it ("Invalid image name
// 'Busybox': repository components must be lowercase").
Result<ImageName> parse_image_name(std::string_view text);
bool is_valid_tag(std::string_view tag);

}  // namespace nps::image
