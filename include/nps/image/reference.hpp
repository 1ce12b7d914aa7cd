// SPDX-License-Identifier: Apache-2.0
// Image names in the local store: "repository[:tag]", as a registry would
// spell them ("busybox", "registry.example.com:5000/team/app:1.2").
//
// repository: up to 255 characters of path components separated by '/'; each
// component is lowercase [a-z0-9] runs joined by '.', '_', '__' or '-'
// runs; the first component may instead be a host ("localhost:5000",
// "Registry.Example.com"). tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, default
// "latest". Names on Docker Hub are kept in the short form Docker shows, so
// the spellings of one image are one name: "docker.io/library/alpine",
// "index.docker.io/library/alpine", "library/alpine" and "alpine" are all
// "alpine:latest"; "docker.io/ux/wc:3" is "ux/wc:3". Other names are kept
// as given plus the default tag.
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

// "host[:port]": DNS labels of [A-Za-z0-9-] joined by '.', an optional
// decimal port (IPv6 literals are not supported).
bool is_valid_registry_host(std::string_view text);
// Host names compare case-insensitively ("Reg.Local:5000" is "reg.local:5000").
bool same_registry(std::string_view a, std::string_view b);

// What `image pull` takes: [registry[:port]/]repository[:tag][@sha256:hex].
// The first path component is the registry when there are several and it
// has a '.' or ':', is "localhost", or has an uppercase letter (the rule
// Docker uses, so "team/app" is a repository and "reg.local/app" is not).
struct ImageReference {
    std::string registry;    // "host[:port]" as written; empty when the text names none
    std::string repository;  // without the registry: "team/app"
    std::string tag;         // empty when not written
    std::string digest;      // "sha256:<hex>", empty when not written

    // What the registry is asked for: the digest when given, else the tag
    // (default "latest").
    std::string manifest_reference() const;
    // The name `image pull` records by default (docs/images.md "Names of
    // pulled images"): "[registry/]repository:tag" as written; with only a
    // digest, the tag is "sha256-<hex>".
    std::string default_name() const;
};

// An error says what is wrong ("Invalid image reference '…': …").
Result<ImageReference> parse_image_reference(std::string_view text);

}  // namespace nps::image
