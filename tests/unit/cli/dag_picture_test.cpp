// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/cli/dag_picture.hpp"

using nlohmann::json;
using namespace nps::cli;

namespace {

json saga_task()
{
    return json::parse(R"({
      "task_id": "saga", "state": "FAILED",
      "dag": {"nodes": [{"id": "reserve"}, {"id": "charge", "input_from": ["reserve"]},
                        {"id": "ship", "input_from": ["charge"]}, {"id": "notify"}],
              "edges": [{"from": "reserve", "to": "notify"}]},
      "nodes": {"reserve": {"state": "COMPENSATED"}, "charge": {"state": "COMPENSATED"}, "ship": {"state": "FAILED"}},
      "events": [{"event": "ship:failed"}, {"event": "charge:compensating"}, {"event": "charge:compensated"},
                 {"event": "reserve:compensating"}, {"event": "reserve:compensated"}]})");
}

}  // namespace

TEST_CASE("the picture has layers, edges from input_from and edges, states and the compensation order")
{
    const DagPicture p = dag_picture(saga_task());
    REQUIRE(p.nodes.size() == 4);
    CHECK(p.edges == 3);
    CHECK(p.nodes[0].id == "reserve");
    CHECK(p.nodes[0].layer == 0);
    CHECK(p.nodes[0].compensation_step == 2);
    CHECK(p.nodes[1].id == "charge");
    CHECK(p.nodes[1].layer == 1);
    CHECK(p.nodes[1].compensation_step == 1);
    CHECK(p.nodes[2].id == "notify");  // layer 1 too, after charge in the frame's order
    CHECK(p.nodes[2].state == "NOT RUN");
    CHECK(p.nodes[3].id == "ship");
    CHECK(p.nodes[3].layer == 2);
    CHECK(p.nodes[3].after == std::vector<std::string>{"charge"});
}

TEST_CASE("text: one line per node with its state and predecessors")
{
    const std::string text = render_text(dag_picture(saga_task()), Output{});
    CHECK(text.starts_with("task saga  FAILED  (4 nodes, 3 edges)\n"));
    CHECK(text.find("├─ 1  reserve  COMPENSATED") != std::string::npos);
    CHECK(text.find("(compensated 2)") != std::string::npos);
    CHECK(text.find("└─ 3  ship     FAILED") != std::string::npos);
    CHECK(text.find("◀─ charge") != std::string::npos);
}

TEST_CASE("DOT: quoted ids, a node per node, an edge per edge")
{
    json task = saga_task();
    task["dag"]["nodes"].push_back({{"id", "odd\"id\\"}, {"input_from", {"ship"}}});
    const std::string dot = render_dot(dag_picture(task));
    CHECK(dot.starts_with("digraph \"saga\" {\n"));
    CHECK(dot.find("\"reserve\" -> \"charge\";") != std::string::npos);
    CHECK(dot.find("\"reserve\" -> \"notify\";") != std::string::npos);
    CHECK(dot.find("\"ship\" -> \"odd\\\"id\\\\\";") != std::string::npos);
    CHECK(dot.find("\"ship\" [label=\"ship\\nFAILED\", fillcolor=\"#fdecec\"") != std::string::npos);
    CHECK(dot.ends_with("}\n"));
}

TEST_CASE("a task without a DAG, or a malformed one, draws no node")
{
    CHECK(dag_picture(json::object()).nodes.empty());
    CHECK(dag_picture(json{{"dag", nullptr}}).nodes.empty());
    CHECK(dag_picture(json{{"dag", {{"nodes", {1, "x", nullptr}}}}}).nodes.empty());
}

TEST_CASE("node ids with control characters are escaped in the text")
{
    json task = {{"task_id", "t"}, {"state", "RUNNING"}, {"dag", {{"nodes", {{{"id", "a\x1b[31m"}}}}}}};
    const std::string text = render_text(dag_picture(task), Output{});
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find("PENDING") != std::string::npos);
}
