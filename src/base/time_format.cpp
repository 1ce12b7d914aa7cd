// SPDX-License-Identifier: Apache-2.0
#include "nps/base/time_format.hpp"

#include <sys/types.h>

#include <cstdio>
#include <ctime>

// Times and file offsets are 64 bits on every target: a 32-bit time_t ends
// in January 2038. 32-bit builds need _TIME_BITS=64 and _FILE_OFFSET_BITS=64
// (cross/armhf.ini; docs/platforms.md).
static_assert(sizeof(time_t) == 8, "nps-runner needs a 64-bit time_t: build with -D_TIME_BITS=64");
static_assert(sizeof(off_t) == 8, "nps-runner needs a 64-bit off_t: build with -D_FILE_OFFSET_BITS=64");

namespace nps {

std::string format_rfc3339_ms(std::int64_t unix_ms)
{
    std::int64_t secs = unix_ms / 1000;
    std::int64_t ms = unix_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        secs -= 1;
    }
    time_t t = static_cast<time_t>(secs);
    tm utc{};
    gmtime_r(&t, &utc);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                  static_cast<int>(ms));
    return buf;
}

namespace {

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out)
{
    if (pos + n > s.size())
        return false;
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

}  // namespace

std::optional<std::int64_t> parse_rfc3339_ms(std::string_view s)
{
    int year, mon, day, hour, min, sec;
    if (!digits(s, 0, 4, year) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, mon) ||
        s[7] != '-' || !digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, min) || s[16] != ':' ||
        !digits(s, 17, 2, sec))
        return std::nullopt;
    if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
        return std::nullopt;
    std::size_t pos = 19;
    int ms = 0;
    if (pos < s.size() && s[pos] == '.') {
        ++pos;
        int scale = 100;
        std::size_t start = pos;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
            ms += (s[pos] - '0') * scale;
            scale /= 10;
            ++pos;
        }
        if (pos == start)
            return std::nullopt;
    }
    int offset_min = 0;
    if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
        ++pos;
    } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
        int oh, om;
        if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
            !digits(s, pos + 4, 2, om))
            return std::nullopt;
        offset_min = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
        pos += 6;
    } else {
        return std::nullopt;
    }
    if (pos != s.size())
        return std::nullopt;
    tm t{};
    t.tm_year = year - 1900;
    t.tm_mon = mon - 1;
    t.tm_mday = day;
    t.tm_hour = hour;
    t.tm_min = min;
    t.tm_sec = sec;
    std::int64_t secs = timegm(&t);
    return (secs - offset_min * 60) * 1000 + ms;
}

std::optional<std::int64_t> parse_http_date(std::string_view text)
{
    // strptime reads day and month names in the C locale, which the runner
    // never leaves; a format must match the whole text.
    static constexpr const char* kForms[] = {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                                             "%a %b %e %H:%M:%S %Y"};
    if (text.size() > 64)
        return std::nullopt;
    const std::string owned(text);
    for (const char* form : kForms) {
        tm utc{};
        const char* end = ::strptime(owned.c_str(), form, &utc);
        if (end == nullptr || *end != '\0')
            continue;
        return static_cast<std::int64_t>(::timegm(&utc));
    }
    return std::nullopt;
}

}  // namespace nps
