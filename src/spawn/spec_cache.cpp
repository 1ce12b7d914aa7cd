// SPDX-License-Identifier: Apache-2.0
#include "nps/spawn/spec_cache.hpp"

#include <algorithm>
#include <limits>

#include "nps/base/ascii.hpp"
#include "nps/base/limits.hpp"

namespace nps::spawn {

namespace {

std::string_view trim(std::string_view text)
{
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    return text;
}

// Delta-seconds (RFC 9111 §1.2.2): digits; too large saturates. A quoted
// value is tolerated, as many caches do.
std::optional<std::int64_t> delta_seconds(std::string_view text)
{
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
        text = text.substr(1, text.size() - 2);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    std::int64_t value = 0;
    for (char c : text) {
        if (value > (std::numeric_limits<std::int32_t>::max() - 9) / 10)
            return std::numeric_limits<std::int32_t>::max();
        value = value * 10 + (c - '0');
    }
    return value;
}

}  // namespace

Freshness freshness_from_headers(const std::map<std::string, std::string>& headers, bool has_validator,
                                 std::int64_t max_age_cap_seconds)
{
    bool no_store = false, no_cache = false;
    std::optional<std::int64_t> max_age;
    bool max_age_invalid = false;
    if (const auto it = headers.find("cache-control"); it != headers.end()) {
        std::string_view rest = it->second;
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            const std::string_view directive = trim(rest.substr(0, comma));
            rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            const auto eq = directive.find('=');
            const std::string name = ascii_lower(trim(directive.substr(0, eq)));
            const std::string_view value = eq == std::string_view::npos ? std::string_view{} : trim(directive.substr(eq + 1));
            if (name == "no-store") {
                no_store = true;
            } else if (name == "no-cache") {
                no_cache = true;
            } else if (name == "max-age") {
                const auto seconds = delta_seconds(value);
                if (!seconds)
                    max_age_invalid = true;  // RFC 9111 §4.2.1: treat as stale
                else
                    max_age = max_age ? std::min(*max_age, *seconds) : *seconds;
            }
        }
    }
    if (no_store)
        return {};
    std::int64_t fresh_seconds = 0;
    if (max_age && !no_cache && !max_age_invalid) {
        std::int64_t age = 0;
        if (const auto it = headers.find("age"); it != headers.end())
            age = delta_seconds(trim(it->second)).value_or(0);
        fresh_seconds = std::clamp<std::int64_t>(*max_age - age, 0, std::max<std::int64_t>(max_age_cap_seconds, 0));
    }
    if (fresh_seconds == 0 && !has_validator)
        return {};  // would be refetched in full on every use anyway
    return Freshness{.storable = true, .fresh_for_ms = fresh_seconds * 1000};
}

std::optional<std::string> usable_validator(std::string_view value)
{
    if (value.empty() || value.size() > limits::kMaxHttpValidatorChars)
        return std::nullopt;
    for (char c : value)
        if (c < 0x20 || c > 0x7e)
            return std::nullopt;
    return std::string(value);
}

SpawnSpecCache::SpawnSpecCache(std::size_t max_entries) : max_entries_(max_entries) {}

std::optional<CachedSpec> SpawnSpecCache::get(const std::string& key)
{
    std::lock_guard lock(mutex_);
    const auto it = index_.find(key);
    if (it == index_.end())
        return std::nullopt;
    entries_.splice(entries_.begin(), entries_, it->second);
    return it->second->second;
}

void SpawnSpecCache::put(const std::string& key, CachedSpec entry)
{
    if (max_entries_ == 0)
        return;
    std::lock_guard lock(mutex_);
    if (const auto it = index_.find(key); it != index_.end()) {
        it->second->second = std::move(entry);
        entries_.splice(entries_.begin(), entries_, it->second);
        return;
    }
    entries_.emplace_front(key, std::move(entry));
    index_[key] = entries_.begin();
    while (entries_.size() > max_entries_) {
        index_.erase(entries_.back().first);
        entries_.pop_back();
    }
}

void SpawnSpecCache::erase(const std::string& key)
{
    std::lock_guard lock(mutex_);
    if (const auto it = index_.find(key); it != index_.end()) {
        entries_.erase(it->second);
        index_.erase(it);
    }
}

std::size_t SpawnSpecCache::size() const
{
    std::lock_guard lock(mutex_);
    return entries_.size();
}

}  // namespace nps::spawn
