// SPDX-License-Identifier: Apache-2.0
// Registry authentication: the WWW-Authenticate challenges a registry (or
// its token service) answers 401 with, and the token service's answer
// (the distribution spec's token authentication, as Docker Hub, Harbor,
// GitLab and docker-registry's token mode implement it).
//
// Contract: every input is untrusted and bounded (base/limits.hpp, section
// "Registry pull"); any violation is an error saying what is wrong, never
// a guess.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::image {

// One challenge (RFC 9110 §11.6.1): a scheme and either auth-params or a
// token68.
struct AuthChallenge {
    std::string scheme;                         // lowercased: "bearer", "basic"
    std::map<std::string, std::string> params;  // names lowercased; quoted values unescaped
    std::string token68;                        // rarely used in challenges; empty when params are given
};

// Parses a WWW-Authenticate value, which may hold several challenges
// separated by commas (several header lines are joined with ", " first).
// Limits: limits::kMaxAuthChallengeChars, kMaxAuthChallenges,
// kMaxAuthParams; a parameter named twice in one challenge is an error.
// An empty or blank value gives no challenges.
Result<std::vector<AuthChallenge>> parse_www_authenticate(std::string_view value);

// The bearer token in a token service's JSON answer: "token", else
// "access_token" (OAuth2 spelling). At most limits::kMaxRegistryTokenBytes
// of visible ASCII (it goes into an Authorization header). `what` names the
// service in errors.
Result<std::string> parse_token_response(std::string_view body, std::string_view what);

}  // namespace nps::image
