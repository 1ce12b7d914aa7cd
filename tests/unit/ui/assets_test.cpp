// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <string>

#include "nps/base/digest.hpp"
#include "nps/ui/assets.hpp"

TEST_CASE("the dashboard's files are embedded with their types and ETags")
{
    const auto* index = nps::ui::find_asset("index.html");
    REQUIRE(index != nullptr);
    CHECK(index->content_type == "text/html; charset=utf-8");
    CHECK(index->body.find("<script type=\"module\" src=\"/ui/assets/js/app.js\"></script>") != std::string_view::npos);
    const auto* app = nps::ui::find_asset("js/app.js");
    REQUIRE(app != nullptr);
    CHECK(app->content_type == "text/javascript; charset=utf-8");
    CHECK(nps::ui::find_asset("dashboard.css")->content_type == "text/css; charset=utf-8");
    CHECK(nps::ui::find_asset("../meson.build") == nullptr);
    CHECK(nps::ui::find_asset("") == nullptr);
    for (const auto& asset : nps::ui::assets()) {
        INFO(std::string(asset.path));
        CHECK(asset.etag == "\"" + nps::sha256_hex(asset.body).substr(0, 16) + "\"");
        // No inline script or style anywhere: the CSP forbids both.
        if (asset.path.ends_with(".html")) {
            CHECK(asset.body.find("<script>") == std::string_view::npos);
            CHECK(asset.body.find("style=") == std::string_view::npos);
            CHECK(asset.body.find("<style") == std::string_view::npos);
        }
    }
}

TEST_CASE("the whole dashboard stays small")
{
    std::size_t total = 0;
    for (const auto& asset : nps::ui::assets())
        total += asset.body.size();
    CHECK(total > 10'000);
    CHECK(total < 512 * 1024);
}
