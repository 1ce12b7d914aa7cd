// SPDX-License-Identifier: Apache-2.0
#include "nps/image/reference.hpp"

#include <algorithm>
#include <vector>

#include "nps/base/ascii.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"

namespace nps::image {

namespace {

bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

// alnum+ ( ('.' | '_' | '__' | '-'+) alnum+ )*
bool valid_path_component(std::string_view s)
{
    if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back()))
        return false;
    for (std::size_t i = 0; i < s.size();) {
        if (is_lower_alnum(s[i])) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < s.size() && !is_lower_alnum(s[j]))
            ++j;
        const std::string_view sep = s.substr(i, j - i);
        const bool dashes = sep.find_first_not_of('-') == std::string_view::npos;
        if (!(sep == "." || sep == "_" || sep == "__" || dashes))
            return false;
        i = j;
    }
    return true;
}

// host[:port], host = labels of [A-Za-z0-9-] joined by '.', no leading/trailing '-'.
bool valid_domain(std::string_view s)
{
    const auto colon = s.find(':');
    std::string_view host = s.substr(0, colon);
    if (colon != std::string_view::npos) {
        const std::string_view port = s.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos)
            return false;
    }
    if (host.empty())
        return false;
    std::size_t start = 0;
    while (start <= host.size()) {
        const auto dot = host.find('.', start);
        const std::string_view label = host.substr(start, dot == std::string_view::npos ? dot : dot - start);
        if (label.empty() || !is_alnum(label.front()) || !is_alnum(label.back()))
            return false;
        for (char c : label)
            if (!is_alnum(c) && c != '-')
                return false;
        if (dot == std::string_view::npos)
            break;
        start = dot + 1;
    }
    return true;
}

// Docker's rule: the first of several components is a registry when it
// looks like a host (a '.' or ':', "localhost", an uppercase letter).
bool looks_like_registry(std::string_view component)
{
    return component.find_first_of(".:") != std::string_view::npos || component == "localhost" ||
           component.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string_view::npos;
}

// Docker's short form of a repository on Docker Hub: "docker.io/ux/wc" and
// "index.docker.io/ux/wc" are "ux/wc"; "docker.io/library/alpine" and
// "library/alpine" are "alpine" (what `docker images` shows).
std::string familiar_repository(std::string_view repository)
{
    for (std::string_view hub : {std::string_view("docker.io/"), std::string_view("index.docker.io/")}) {
        if (repository.size() > hub.size() && same_registry(repository.substr(0, hub.size()), hub)) {
            repository.remove_prefix(hub.size());
            break;
        }
    }
    constexpr std::string_view kLibrary = "library/";
    if (repository.size() > kLibrary.size() && repository.compare(0, kLibrary.size(), kLibrary) == 0 &&
        repository.find('/', kLibrary.size()) == std::string_view::npos)
        repository.remove_prefix(kLibrary.size());
    return std::string(repository);
}

Error invalid(std::string_view text, const std::string& why)
{
    return internal_error("Invalid image name '" + std::string(text.substr(0, limits::kMaxImageRefChars)) + "': " + why);
}

}  // namespace

bool is_valid_tag(std::string_view tag)
{
    if (tag.empty() || tag.size() > 128)
        return false;
    const auto word = [](char c) { return is_alnum(c) || c == '_'; };
    if (!word(tag.front()))
        return false;
    for (char c : tag)
        if (!word(c) && c != '.' && c != '-')
            return false;
    return true;
}

namespace {

// `short_form`: Docker Hub's names as Docker shows them (parse_image_name);
// else as written (parse_image_reference, which needs the registry).
Result<ImageName> parse_name(std::string_view text, bool short_form)
{
    if (text.empty())
        return invalid(text, "empty");
    if (text.size() > limits::kMaxImageRefChars)
        return invalid(text, "longer than " + std::to_string(limits::kMaxImageRefChars) + " characters");
    if (text.find('@') != std::string_view::npos)
        return invalid(text, "a name cannot carry a digest (@sha256:…); use the digest itself where one is accepted");

    ImageName name;
    std::string_view repository = text;
    const auto last_slash = text.rfind('/');
    const auto last_colon = text.rfind(':');
    if (last_colon != std::string_view::npos && (last_slash == std::string_view::npos || last_colon > last_slash)) {
        repository = text.substr(0, last_colon);
        const std::string_view tag = text.substr(last_colon + 1);
        if (!is_valid_tag(tag))
            return invalid(text, "tag '" + std::string(tag) + "' must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
        name.tag = tag;
    } else {
        name.tag = "latest";
    }
    if (repository.empty() || repository.size() > 255)
        return invalid(text, "the repository must have 1 to 255 characters");

    std::vector<std::string_view> components;
    for (std::size_t start = 0;;) {
        const auto slash = repository.find('/', start);
        components.push_back(repository.substr(start, slash == std::string_view::npos ? slash : slash - start));
        if (slash == std::string_view::npos)
            break;
        start = slash + 1;
    }
    for (std::size_t i = 0; i < components.size(); ++i) {
        const std::string_view c = components[i];
        const bool may_be_domain = i == 0 && components.size() > 1;
        if (may_be_domain && looks_like_registry(c)) {
            if (!valid_domain(c))
                return invalid(text, "'" + std::string(c) + "' is not a registry host[:port]");
            continue;
        }
        if (!valid_path_component(c))
            return invalid(text, "component '" + std::string(c) +
                                     "' must be lowercase letters and digits, separated by '.', '_', '__' or '-'");
    }
    name.repository = short_form ? familiar_repository(repository) : std::string(repository);
    return name;
}

}  // namespace

Result<ImageName> parse_image_name(std::string_view text)
{
    return parse_name(text, true);
}

bool is_valid_registry_host(std::string_view text)
{
    return text.size() <= 255 && valid_domain(text);
}

bool same_registry(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    }
    return true;
}

std::string ImageReference::manifest_reference() const
{
    if (!digest.empty())
        return digest;
    return tag.empty() ? std::string("latest") : tag;
}

std::string ImageReference::default_name() const
{
    std::string name = registry.empty() ? repository : registry + "/" + repository;
    if (!tag.empty())
        return name + ":" + tag;
    if (!digest.empty())
        return name + ":sha256-" + std::string(digest_hex(digest));
    return name + ":latest";
}

Result<ImageReference> parse_image_reference(std::string_view text)
{
    const auto fail = [&](const std::string& why) -> Error {
        return internal_error("Invalid image reference '" +
                              std::string(text.substr(0, limits::kMaxImageRefChars + 80)) + "': " + why);
    };
    ImageReference ref;
    std::string_view name_part = text;
    if (const auto at = text.find('@'); at != std::string_view::npos) {
        const std::string_view digest = text.substr(at + 1);
        if (digest.find('@') != std::string_view::npos)
            return fail("more than one '@'");
        if (!is_sha256_digest(digest)) {
            const auto colon = digest.find(':');
            if (colon != std::string_view::npos && colon > 0 && digest.substr(0, colon) != "sha256")
                return fail("unsupported digest algorithm '" + std::string(digest.substr(0, std::min<std::size_t>(colon, 32))) +
                            "' (only sha256 is supported)");
            return fail("the digest must be sha256: and 64 lowercase hex digits");
        }
        ref.digest = digest;
        name_part = text.substr(0, at);
    }
    auto name = parse_name(name_part, false);
    if (!name) {
        // "Invalid image name 'x': why" → why
        const std::string& message = name.error().message;
        const auto why = message.find("': ");
        return fail(why == std::string::npos ? message : message.substr(why + 3));
    }
    const auto last_slash = name_part.rfind('/');
    const auto last_colon = name_part.rfind(':');
    if (last_colon != std::string_view::npos && (last_slash == std::string_view::npos || last_colon > last_slash))
        ref.tag = name->tag;
    const std::string& repository = name->repository;
    const auto slash = repository.find('/');
    if (slash != std::string::npos && looks_like_registry(std::string_view(repository).substr(0, slash))) {
        ref.registry = repository.substr(0, slash);
        ref.repository = repository.substr(slash + 1);
    } else {
        ref.repository = repository;
    }
    return ref;
}

}  // namespace nps::image
