// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/dag_picture.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "nps/proto/states.hpp"

namespace nps::cli {

namespace {

using Json = nlohmann::json;

std::string string_of(const Json& value)
{
    return value.is_string() ? value.get<std::string>() : value.dump();
}

bool is_task_terminal(const std::string& state)
{
    const auto parsed = proto::parse_task_state(state);
    return parsed && proto::is_terminal(*parsed);
}

// "fill colour", "line colour" of a node state, as the dashboard draws it.
std::pair<const char*, const char*> colours(const std::string& state)
{
    using proto::NodeState;
    const auto parsed = proto::parse_node_state(state);
    if (!parsed)
        return {"#ffffff", "#9aa3b2"};  // NOT RUN
    switch (*parsed) {
    case NodeState::running: return {"#eaf2fd", "#2f7de1"};
    case NodeState::completed: return {"#eaf7ef", "#2e9d5b"};
    case NodeState::failed: return {"#fdecec", "#d33b3b"};
    case NodeState::cancelled: return {"#eceef1", "#59606b"};
    case NodeState::compensating: return {"#fdf3e6", "#e8912d"};
    case NodeState::compensated: return {"#f3edfb", "#8b5cc7"};
    case NodeState::compensation_failed: return {"#f6e3e3", "#8f1d1d"};
    case NodeState::pending:
    case NodeState::skipped: break;
    }
    return {"#ffffff", "#9aa3b2"};
}

// The label of a node of an ended task that never started (not a state).
constexpr const char* kNotRun = "NOT RUN";

// Nodes that did not run forward (skipped, not run, in the saga) are dashed.
bool drawn_dashed(const std::string& state)
{
    using proto::NodeState;
    if (state == kNotRun)
        return true;
    const auto parsed = proto::parse_node_state(state);
    return parsed == NodeState::skipped || parsed == NodeState::compensating || parsed == NodeState::compensated ||
           parsed == NodeState::compensation_failed;
}

// A DOT double-quoted string.
std::string dot_string(std::string_view text)
{
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else if (static_cast<unsigned char>(c) >= 0x20)
            out += c;
    }
    return out + "\"";
}

}  // namespace

DagPicture dag_picture(const Json& task)
{
    DagPicture picture{.task_id = string_of(task.value("task_id", Json(""))),
                       .task_state = string_of(task.value("state", Json("")))};
    const Json& dag = task.contains("dag") && task["dag"].is_object() ? task["dag"] : Json::object();
    const Json nodes = dag.value("nodes", Json::array());
    std::vector<std::string> order;
    std::map<std::string, std::set<std::string>> preds;
    for (const auto& n : nodes) {
        if (!n.is_object() || !n.contains("id"))
            continue;
        const std::string id = string_of(n["id"]);
        order.push_back(id);
        preds[id];
        for (const auto& from : n.value("input_from", Json::array()))
            preds[id].insert(string_of(from));
    }
    for (const auto& e : dag.value("edges", Json::array()))
        if (e.is_object() && e.contains("from") && e.contains("to") && preds.count(string_of(e["to"])))
            preds[string_of(e["to"])].insert(string_of(e["from"]));

    std::map<std::string, std::size_t> layer;
    std::set<std::string> visiting;
    const std::function<std::size_t(const std::string&)> depth = [&](const std::string& id) -> std::size_t {
        if (auto it = layer.find(id); it != layer.end())
            return it->second;
        if (!preds.count(id) || !visiting.insert(id).second)
            return 0;  // unknown predecessor, or a cycle (cannot be deposited)
        std::size_t d = 0;
        for (const auto& p : preds[id])
            if (preds.count(p))
                d = std::max(d, depth(p) + 1);
        visiting.erase(id);
        return layer[id] = d;
    };

    std::vector<std::string> compensated;
    for (const auto& e : task.value("events", Json::array())) {
        const std::string name = string_of(e.value("event", Json("")));
        constexpr std::string_view kSuffix = ":compensating";
        if (name.size() > kSuffix.size() && name.ends_with(kSuffix)) {
            const std::string id = name.substr(0, name.size() - kSuffix.size());
            if (std::find(compensated.begin(), compensated.end(), id) == compensated.end())
                compensated.push_back(id);
        }
    }
    const Json records = task.value("nodes", Json::object());
    for (const auto& id : order) {
        DagPictureNode node{.id = id, .layer = depth(id)};
        if (records.contains(id) && records[id].is_object() && records[id].contains("state"))
            node.state = string_of(records[id]["state"]);
        else
            node.state = is_task_terminal(picture.task_state)
                             ? std::string(kNotRun)
                             : std::string(proto::to_string(proto::NodeState::pending));
        for (const auto& p : preds[id])
            node.after.push_back(p);
        picture.edges += node.after.size();
        if (auto it = std::find(compensated.begin(), compensated.end(), id); it != compensated.end())
            node.compensation_step = static_cast<std::size_t>(it - compensated.begin()) + 1;
        picture.nodes.push_back(std::move(node));
    }
    std::stable_sort(picture.nodes.begin(), picture.nodes.end(),
                     [](const DagPictureNode& a, const DagPictureNode& b) { return a.layer < b.layer; });
    return picture;
}

std::string render_text(const DagPicture& picture, const Output& out)
{
    std::size_t width = 4;
    for (const auto& n : picture.nodes)
        width = std::max(width, out.text(n.id).size());
    std::string text = "task " + out.text(picture.task_id) + "  " + out.text(picture.task_state) + "  (" +
                       std::to_string(picture.nodes.size()) + " nodes, " + std::to_string(picture.edges) + " edges)\n";
    for (std::size_t i = 0; i < picture.nodes.size(); ++i) {
        const auto& n = picture.nodes[i];
        const bool last = i + 1 == picture.nodes.size();
        std::string line = std::string(last ? "└─ " : "├─ ") + std::to_string(n.layer + 1) + "  " + out.text(n.id);
        line += std::string(width + 2 - out.text(n.id).size(), ' ') + out.text(n.state);
        if (!n.after.empty()) {
            line += std::string(n.state.size() < 20 ? 20 - n.state.size() : 1, ' ') + "◀─ ";
            for (std::size_t j = 0; j < n.after.size(); ++j)
                line += (j ? ", " : "") + out.text(n.after[j]);
        }
        if (n.compensation_step)
            line += "   (compensated " + std::to_string(n.compensation_step) + ")";
        text += line + "\n";
    }
    return text;
}

std::string render_dot(const DagPicture& picture)
{
    std::string dot = "digraph " + dot_string(picture.task_id) + " {\n";
    dot += "  label=" + dot_string("task " + picture.task_id + " " + picture.task_state) + ";\n";
    dot += "  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n";
    for (const auto& n : picture.nodes) {
        const auto [fill, line] = colours(n.state);
        std::string label = n.id + "\n" + n.state;
        if (n.compensation_step)
            label += " (" + std::to_string(n.compensation_step) + ")";
        const bool dashed = drawn_dashed(n.state);
        dot += "  " + dot_string(n.id) + " [label=" + dot_string(label) + ", fillcolor=\"" + fill + "\", color=\"" + line +
               "\"" + (dashed ? ", style=\"rounded,filled,dashed\"" : "") + "];\n";
    }
    for (const auto& n : picture.nodes)
        for (const auto& from : n.after)
            dot += "  " + dot_string(from) + " -> " + dot_string(n.id) + ";\n";
    return dot + "}\n";
}

}  // namespace nps::cli
