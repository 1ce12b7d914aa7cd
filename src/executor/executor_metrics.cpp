// SPDX-License-Identifier: Apache-2.0
#include "nps/executor/executor_metrics.hpp"

#include <sstream>

#include "nps/proto/states.hpp"

namespace nps::executor {

namespace {

void header(std::ostringstream& out, const char* name, const char* type, const char* help)
{
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

template <class T>
void sample(std::ostringstream& out, const char* name, const char* labels, const std::atomic<T>& value)
{
    out << name << labels << ' ' << value.load(std::memory_order_relaxed) << '\n';
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

void DurationHistogram::render(std::ostringstream& out, const char* name, const char* help) const
{
    header(out, name, "histogram", help);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
        cumulative += buckets[i].load(std::memory_order_relaxed);
        out << name << "_bucket{le=\"";
        if (i < bounds.size())
            out << bounds[i];
        else
            out << "+Inf";
        out << "\"} " << cumulative << '\n';
    }
    out << name << "_sum " << static_cast<double>(sum_us.load()) / 1e6 << '\n';
    out << name << "_count " << count.load() << '\n';
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
    std::ostringstream out;
    header(out, "nps_executor_claims_total", "counter", "Tasks this runner claimed from its inboxes, by outcome.");
    sample(out, "nps_executor_claims_total", "{outcome=\"granted\"}", claims_granted);
    sample(out, "nps_executor_claims_total", "{outcome=\"reclaimed\"}", claims_reclaimed);
    header(out, "nps_tasks_running", "gauge", "Tasks this runner is executing.");
    sample(out, "nps_tasks_running", "", tasks_running);
    header(out, "nps_leases_live", "gauge", "Leases this runner holds.");
    sample(out, "nps_leases_live", "", leases_live);
    header(out, "nps_workers_running", "gauge", "Workers starting or running.");
    sample(out, "nps_workers_running", "", workers_running);

    start.render(out, "nps_worker_start_seconds",
                 "From dispatch to the worker running: SpawnSpec, image, rootfs and sandbox.");
    task_duration.render(out, "nps_task_duration_seconds", "From a task's claim to its end, for the tasks this runner ended.");

    header(out, "nps_worker_timeouts_total", "counter", "Workers killed for a lifecycle limit, by kind.");
    sample(out, "nps_worker_timeouts_total", "{kind=\"idle\"}", timeouts_idle);
    sample(out, "nps_worker_timeouts_total", "{kind=\"max_runtime\"}", timeouts_max_runtime);
    header(out, "nps_worker_oom_kills_total", "counter", "Workers the kernel's OOM killer ended.");
    sample(out, "nps_worker_oom_kills_total", "", oom_kills);
    header(out, "nps_worker_prepared_ahead_total", "counter",
           "Workers prepared while their node's dependencies ran: used by the node, released unused, or failed "
           "(the node then prepared its own).");
    sample(out, "nps_worker_prepared_ahead_total", "{fate=\"used\"}", workers_prepared_ahead_used);
    sample(out, "nps_worker_prepared_ahead_total", "{fate=\"unused\"}", workers_prepared_ahead_unused);
    sample(out, "nps_worker_prepared_ahead_total", "{fate=\"failed\"}", workers_prepared_ahead_failed);

    header(out, "nps_node_outcomes_total", "counter", "Nodes that reached a terminal or saga state, by state.");
    sample(out, "nps_node_outcomes_total", "{state=\"completed\"}", nodes_completed);
    sample(out, "nps_node_outcomes_total", "{state=\"failed\"}", nodes_failed);
    sample(out, "nps_node_outcomes_total", "{state=\"skipped\"}", nodes_skipped);
    sample(out, "nps_node_outcomes_total", "{state=\"cancelled\"}", nodes_cancelled);
    sample(out, "nps_node_outcomes_total", "{state=\"compensated\"}", nodes_compensated);
    sample(out, "nps_node_outcomes_total", "{state=\"compensation_failed\"}", nodes_compensation_failed);
    header(out, "nps_task_outcomes_total", "counter", "Tasks this runner ended, and tasks cancelled through its API, by state.");
    sample(out, "nps_task_outcomes_total", "{state=\"completed\"}", tasks_completed);
    sample(out, "nps_task_outcomes_total", "{state=\"failed\"}", tasks_failed);
    sample(out, "nps_task_outcomes_total", "{state=\"cancelled\"}", tasks_cancelled);
    return out.str();
}

}  // namespace nps::executor
