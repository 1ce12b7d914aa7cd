// SPDX-License-Identifier: Apache-2.0
#include "nps/executor/executor_metrics.hpp"

#include "nps/base/prometheus_text.hpp"
#include "nps/proto/states.hpp"

namespace nps::executor {

namespace {

using prometheus::Type;

template <class T>
T read(const std::atomic<T>& value)
{
    return value.load(std::memory_order_relaxed);
}

}  // namespace

void DurationHistogram::observe(std::uint64_t microseconds)
{
    std::size_t i = 0;
    while (i < bounds.size() && static_cast<double>(microseconds) > bounds[i] * 1e6)
        ++i;
    ++buckets[i];
    ++count;
    sum_us += microseconds;
}

void DurationHistogram::render(std::string& out, const char* name, const char* help) const
{
    prometheus::family(out, name, Type::histogram, help);
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
        cumulative += read(buckets[i]);
        const std::string bound = i < bounds.size() ? prometheus::value_text(bounds[i]) : "+Inf";
        prometheus::sample(out, bucket, prometheus::label("le", bound), cumulative);
    }
    prometheus::sample(out, std::string(name) + "_sum", {}, static_cast<double>(read(sum_us)) / 1e6);
    prometheus::sample(out, std::string(name) + "_count", {}, read(count));
}

void ExecutorMetrics::count_node(proto::NodeState state)
{
    using proto::NodeState;
    switch (state) {
    case NodeState::completed: ++nodes_completed; break;
    case NodeState::failed: ++nodes_failed; break;
    case NodeState::skipped: ++nodes_skipped; break;
    case NodeState::cancelled: ++nodes_cancelled; break;
    case NodeState::compensated: ++nodes_compensated; break;
    case NodeState::compensation_failed: ++nodes_compensation_failed; break;
    case NodeState::pending:
    case NodeState::running:
    case NodeState::compensating: break;  // not an end
    }
}

void ExecutorMetrics::count_task(proto::TaskState state)
{
    using proto::TaskState;
    switch (state) {
    case TaskState::completed: ++tasks_completed; break;
    case TaskState::failed: ++tasks_failed; break;
    case TaskState::cancelled: ++tasks_cancelled; break;
    case TaskState::pending:
    case TaskState::running: break;  // not an end
    }
}

std::string ExecutorMetrics::render() const
{
    using prometheus::label;
    std::string out;
    prometheus::family(out, "nps_executor_claims_total", Type::counter, "Tasks this runner claimed from its inboxes, by outcome.");
    prometheus::sample(out, "nps_executor_claims_total", label("outcome", "granted"), read(claims_granted));
    prometheus::sample(out, "nps_executor_claims_total", label("outcome", "reclaimed"), read(claims_reclaimed));
    prometheus::family(out, "nps_tasks_running", Type::gauge, "Tasks this runner is executing.");
    prometheus::sample(out, "nps_tasks_running", {}, read(tasks_running));
    prometheus::family(out, "nps_leases_live", Type::gauge, "Leases this runner holds.");
    prometheus::sample(out, "nps_leases_live", {}, read(leases_live));
    prometheus::family(out, "nps_workers_running", Type::gauge, "Workers starting or running.");
    prometheus::sample(out, "nps_workers_running", {}, read(workers_running));

    start.render(out, "nps_worker_start_seconds",
                 "From dispatch to the worker running: SpawnSpec, image, rootfs and sandbox.");
    task_duration.render(out, "nps_task_duration_seconds", "From a task's claim to its end, for the tasks this runner ended.");

    prometheus::family(out, "nps_worker_timeouts_total", Type::counter, "Workers killed for a lifecycle limit, by kind.");
    prometheus::sample(out, "nps_worker_timeouts_total", label("kind", "idle"), read(timeouts_idle));
    prometheus::sample(out, "nps_worker_timeouts_total", label("kind", "max_runtime"), read(timeouts_max_runtime));
    prometheus::family(out, "nps_worker_oom_kills_total", Type::counter, "Workers the kernel's OOM killer ended.");
    prometheus::sample(out, "nps_worker_oom_kills_total", {}, read(oom_kills));
    // Workers made before anyone asked for them, by what became of them.
    auto fates = [&](const char* name, const char* help, const std::atomic<std::uint64_t>& used,
                     const std::atomic<std::uint64_t>& unused, const std::atomic<std::uint64_t>& failed) {
        prometheus::family(out, name, Type::counter, help);
        prometheus::sample(out, name, label("fate", "used"), read(used));
        prometheus::sample(out, name, label("fate", "unused"), read(unused));
        prometheus::sample(out, name, label("fate", "failed"), read(failed));
    };
    fates("nps_worker_prepared_ahead_total",
          "Workers prepared while their node's dependencies ran: used by the node, released unused, or failed "
          "(the node then prepared its own).",
          workers_prepared_ahead_used, workers_prepared_ahead_unused, workers_prepared_ahead_failed);
    fates("nps_worker_warm_total",
          "Workers kept ready for the next task's first node: taken by it, dropped unused (stale, another agent, a "
          "reload, shutdown), or failed to prepare.",
          workers_warm_used, workers_warm_unused, workers_warm_failed);

    prometheus::family(out, "nps_node_outcomes_total", Type::counter, "Nodes that reached a terminal or saga state, by state.");
    prometheus::sample(out, "nps_node_outcomes_total", label("state", "completed"), read(nodes_completed));
    prometheus::sample(out, "nps_node_outcomes_total", label("state", "failed"), read(nodes_failed));
    prometheus::sample(out, "nps_node_outcomes_total", label("state", "skipped"), read(nodes_skipped));
    prometheus::sample(out, "nps_node_outcomes_total", label("state", "cancelled"), read(nodes_cancelled));
    prometheus::sample(out, "nps_node_outcomes_total", label("state", "compensated"), read(nodes_compensated));
    prometheus::sample(out, "nps_node_outcomes_total", label("state", "compensation_failed"), read(nodes_compensation_failed));
    prometheus::family(out, "nps_task_outcomes_total", Type::counter, "Tasks this runner ended, and tasks cancelled through its API, by state.");
    prometheus::sample(out, "nps_task_outcomes_total", label("state", "completed"), read(tasks_completed));
    prometheus::sample(out, "nps_task_outcomes_total", label("state", "failed"), read(tasks_failed));
    prometheus::sample(out, "nps_task_outcomes_total", label("state", "cancelled"), read(tasks_cancelled));
    return out;
}

}  // namespace nps::executor
