#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The web dashboard in a real headless browser (Debian's chromium through
chromium-driver and python3-selenium) against a real daemon running real
sandboxed workers (docs/dashboard.md, issue 19):

 1. Access on TCP: without a session every /ui/ page, file and API route is
    refused (401); `nps-runner ui` prints a login URL whose code the browser
    exchanges once for an HttpOnly, SameSite=Strict cookie; the spent code
    does not log in again; a write without the anti-CSRF token is 403.
 2. The demo's 3-node DAG: the graph's node states and the timeline's
    attempts match GET /v1/tasks/{id}; edges drawn.
 3. A failed saga: the failed node, the compensated ones and the
    compensation order shown.
 4. A running task: live updates arrive without a reload, the running
    node's log appears while it runs, Cancel cancels it.
 5. A worker-supplied <script> stays text.
 6. Every page renders: overview, tasks (filtered), workers, images.

Screenshots of each page go to <build>/meson-logs/dashboard/ (or
$NPS_DASHBOARD_SCREENSHOTS); with --docs-images DIR the task pages' are also
written there (docs/images/ is made that way). Needs root, umoci, busybox,
chromium, chromedriver and python3-selenium (else 77)."""

import argparse
import base64
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checks import Checks  # noqa: E402
from serve_daemon import start_serve  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
INBOX = "urn:nps:agent:demo.local:pipeline"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class Api:
    def __init__(self, base, token=None):
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port, self.token = host, int(port), token

    def call(self, method, path, body=None, headers=None, auth=True):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        h = {"Content-Type": "application/json", **(headers or {})}
        if auth and self.token:
            h["Authorization"] = f"Bearer {self.token}"
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        try:
            parsed = json.loads(raw) if raw.strip() else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return response.status, parsed, response

    def wait_state(self, task_id, states, seconds=60):
        for _ in range(seconds * 20):
            status, body, _ = self.call("GET", f"/v1/tasks/{task_id}")
            if status == 200 and body["state"] in states:
                return body
            time.sleep(0.05)
        return None


def spec(*command):
    value = {"image": "nps-demo-worker:1", "command": ["/bin/worker", *command],
             "resource_limits": {"memory": "32Mi", "cpu": "500m"},
             "idle_timeout_seconds": 20, "max_runtime_seconds": 60}
    return "spawnspec:" + base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


AGENTS = {
    "fetch": spec("emit", '{"value":2}'),
    "double": spec("double"),
    "report": spec("report"),
    "fail": spec("fail", "NOP-DELEGATE-REJECTED"),
    "chatter": spec("chatter", "40"),
    "pause": spec("sleep", "3"),
    "evil": spec("emit", '{"text":"<script>window.__pwned=1</script><img src=x onerror=\\"window.__pwned=2\\">"}'),
}


def agent(name):
    return f"urn:nps:agent:demo.local:{name}"


def node(node_id, name, **extra):
    return {"id": node_id, "agent": agent(name), "action": f"nwp://demo.local/{name}/invoke", **extra}


def saga_frame():
    compensable = {"compensate_action": "nwp://demo.local/undo/compensate"}
    return {"task_id": "saga-task", "dag": {"nodes": [
        node("reserve", "fetch", **compensable),
        node("charge", "fetch", input_from=["reserve"], **compensable),
        node("ship", "fail", input_from=["charge"])]}}


def running_frame():
    return {"task_id": "running-task", "dag": {"nodes": [
        node("warmup", "pause"),
        node("talk", "chatter", input_from=["warmup"])]}}


def evil_frame():
    return {"task_id": "evil-task", "dag": {"nodes": [node("evil", "evil")]}}


class Browser:
    def __init__(self, shots):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1200", "--no-first-run", "--disable-background-networking"):
            options.add_argument(arg)
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.shots = shots

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def until(self, predicate, seconds=30):
        for _ in range(seconds * 10):
            try:
                value = predicate()
            except Exception:  # noqa: BLE001 — the DOM is being redrawn
                value = None
            if value:
                return value
            time.sleep(0.1)
        return None

    def open(self, url):
        self.driver.get(url)
        return self.until(lambda: self.js("return document.body.dataset.ready === '1'"), 20)

    def screenshot(self, name, extra_dir=None):
        height = self.js("return Math.max(document.body.scrollHeight, 900)")
        self.driver.set_window_size(1400, min(int(height) + 40, 4000))
        path = Path(self.shots, f"{name}.png")
        self.driver.save_screenshot(str(path))
        if extra_dir:
            shutil.copy(path, Path(extra_dir, f"{name}.png"))
        self.driver.set_window_size(1400, 1200)
        return path

    def graph_states(self):
        return self.js("return Object.fromEntries([...document.querySelectorAll('svg.dag g.node')]"
                       ".map(g => [g.dataset.node, g.dataset.state]))")

    def timeline_rows(self):
        return self.js("return [...document.querySelectorAll('svg.timeline g.attempt')]"
                       ".map(g => ({node: g.dataset.node, attempt: +g.dataset.attempt, kind: g.dataset.kind,"
                       " state: g.dataset.state, segments: [...g.querySelectorAll('rect')].map(r => r.dataset.segment)}))")

    def quit(self):
        self.driver.quit()


def login_url(args, base, token, task=None):
    command = [args.runner, "ui", "--server", base, "--token", token] + (["--task", task] if task else [])
    out = subprocess.run(command, capture_output=True, text=True, timeout=30)
    return out.returncode, out.stdout.strip(), out.stderr.strip()


def access(args, base, token, api, b, t):
    anonymous = Api(base)
    for path in ("/ui/", "/ui/tasks", "/ui/assets/js/app.js", "/ui/session"):
        status, body, response = anonymous.call("GET", path, auth=False)
        t.check(status == 401, f"without a session {path} is refused ({status})")
    status, body, response = anonymous.call("GET", "/ui/", auth=False)
    t.check("nps-runner ui" in str(body) and "<script" not in str(body),
            "the refusal page says how to log in, without script")
    status, body, _ = anonymous.call("GET", "/v1/tasks", auth=False)
    t.check(status == 401 and body["error"] == "NWP-HTTP-UNAUTHENTICATED", f"the API too ({status})")

    rc, url, err = login_url(args, base, token)
    t.check(rc == 0 and url.startswith(base + "/ui/login?code="), f"nps-runner ui prints a login URL ({rc} {url} {err})")
    code_path = url[len(base):]
    t.check(b.open(url) is not None, "the browser logs in and the overview renders")
    cookies = {c["name"]: c for c in b.driver.get_cookies()}
    cookie = cookies.get("nps_runner_session")
    t.check(cookie is not None and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict",
            f"the session cookie is HttpOnly, SameSite=Strict ({cookie})")
    t.check(b.driver.current_url == base + "/ui/", f"the login lands on the overview ({b.driver.current_url})")
    t.check(b.js("return document.cookie").find("nps_runner_session") < 0, "the page's script cannot read the cookie")
    status, body, response = anonymous.call("GET", code_path, auth=False)
    t.check(status == 401 and "spent or expired" in str(body), f"a spent code does not log in again ({status})")
    for header, value in (("Content-Security-Policy", "script-src 'self'"), ("X-Frame-Options", "DENY")):
        status, _, response = anonymous.call("GET", "/ui/", auth=False)
        t.check(value in (response.getheader(header) or ""), f"{header} is strict ({response.getheader(header)})")
    # A write without the anti-CSRF token, from the logged-in page itself.
    answer = b.js("return fetch('/v1/tasks/no-such/cancel', {method: 'POST'}).then(r => r.status)")
    t.check(answer == 403, f"a write with the cookie but without X-CSRF-Token is 403 ({answer})")
    answer = b.js("return fetch('/v1/ui/login-codes', {method: 'POST'}).then(r => r.status)")
    t.check(answer == 403, f"a session cannot mint login codes ({answer})")


def check_task_page(b, api, base, task_id, t, label):
    status, task, _ = api.call("GET", f"/v1/tasks/{task_id}")
    b.driver.get(f"{base}/ui/tasks/{task_id}")
    want = {n["id"]: task["nodes"].get(n["id"], {}).get("state", "PENDING") for n in task["dag"]["nodes"]}
    got = b.until(lambda: (s := b.graph_states()) == want and s)
    t.check(got == want, f"{label}: the graph's node states match GET /v1/tasks ({b.graph_states()} vs {want})")
    rows = b.timeline_rows()
    for node_id, record in task["nodes"].items():
        mine = [r for r in rows if r["node"] == node_id and r["kind"] == "run"]
        t.check(len(mine) == record["attempts"],
                f"{label}: the timeline has each attempt of {node_id} ({len(mine)} vs {record['attempts']})")
    t.check(b.js("return document.getElementById('task-state').textContent") == task["state"],
            f"{label}: the header shows {task['state']}")
    return task, rows


def demo_dag(args, api, base, b, t, docs):
    frame = json.loads((REPO / "demo" / "task.json").read_text())
    status, _, _ = api.call("POST", f"/v1/inbox/{INBOX}", frame)
    t.check(status == 201, f"the demo DAG is deposited ({status})")
    done = api.wait_state(frame["task_id"], {"COMPLETED", "FAILED"})
    t.check(done is not None and done["state"] == "COMPLETED", "the demo DAG COMPLETED")
    task, rows = check_task_page(b, api, base, frame["task_id"], t, "demo DAG")
    t.check(all(r["state"] == "COMPLETED" and r["segments"][:3] == ["seg-queued", "seg-spawn", "seg-run"] for r in rows),
            f"demo DAG: each attempt shows queued, spawn and run ({rows})")
    edges = b.js("return [...document.querySelectorAll('svg.dag path.edge')].map(p => p.dataset.from + '>' + p.dataset.to)")
    t.check(sorted(edges) == ["double>report", "fetch>double"], f"demo DAG: its edges are drawn ({edges})")
    b.screenshot("task-demo-dag", docs)


def terminal_pictures(args, base, token, t):
    """`task show --graph` and `--dot` through the real binary, on the saga."""
    show = [args.runner, "task", "show", "saga-task", "--server", base, "--token", token]
    out = subprocess.run(show + ["--graph"], capture_output=True, text=True, timeout=30)
    lines = out.stdout.splitlines()
    t.check(out.returncode == 0 and lines and lines[0].startswith("task saga-task  FAILED  (3 nodes, 2 edges)"),
            f"task show --graph names the task, its state and its size ({out.returncode} {lines[:1]} {out.stderr})")
    for node_id, state in (("reserve", "COMPENSATED"), ("charge", "COMPENSATED"), ("ship", "FAILED")):
        t.check(any(node_id in line and state in line for line in lines),
                f"task show --graph: {node_id} {state}")
    t.check("◀─ charge" in out.stdout, "task show --graph: ship's edge from charge")
    out = subprocess.run(show + ["--dot"], capture_output=True, text=True, timeout=30)
    t.check(out.returncode == 0 and out.stdout.startswith('digraph "saga-task" {') and out.stdout.endswith("}\n")
            and '"reserve" -> "charge";' in out.stdout and '"charge" -> "ship";' in out.stdout,
            f"task show --dot prints the DAG as Graphviz DOT ({out.stdout[:200]!r})")
    if shutil.which("dot"):
        rendered = subprocess.run(["dot", "-Tsvg"], input=out.stdout, capture_output=True, text=True, timeout=30)
        t.check(rendered.returncode == 0 and "<svg" in rendered.stdout, "Graphviz renders it")


def saga(api, base, b, t, docs):
    status, _, _ = api.call("POST", f"/v1/inbox/{INBOX}", saga_frame())
    t.check(status == 201, f"the saga is deposited ({status})")
    done = api.wait_state("saga-task", {"COMPLETED", "FAILED"})
    t.check(done is not None and done["state"] == "FAILED", "the saga FAILED")
    task, rows = check_task_page(b, api, base, "saga-task", t, "saga")
    t.check(task["nodes"]["reserve"]["state"] == "COMPENSATED" and task["nodes"]["ship"]["state"] == "FAILED",
            f"saga: reserve COMPENSATED, ship FAILED ({ {k: v['state'] for k, v in task['nodes'].items()} })")
    order = b.js("return document.getElementById('compensation-order')?.textContent")
    t.check(order == "Compensation order: 1. charge → 2. reserve", f"saga: the compensation order is shown ({order})")
    undo = [r["node"] for r in rows if r["kind"] == "compensation"]
    t.check(undo == ["charge", "reserve"], f"saga: the compensations are on the timeline, in order ({undo})")
    b.screenshot("task-saga", docs)
    b.driver.get(f"{base}/ui/tasks?state=FAILED")
    listed = b.until(lambda: b.js("return [...document.querySelectorAll('#task-table tr[data-task]')].map(r => r.dataset.task)"))
    t.check(listed == ["saga-task"], f"the task list filtered by state shows the failed saga only ({listed})")
    b.screenshot("tasks")


def running(api, base, b, t):
    status, _, _ = api.call("POST", f"/v1/inbox/{INBOX}", running_frame())
    t.check(status == 201, f"the running task is deposited ({status})")
    b.driver.get(f"{base}/ui/tasks/running-task")
    b.until(lambda: b.graph_states())
    b.js("window.__sameLoad = 'yes'")
    first = b.graph_states().get("warmup")
    t.check(first in ("PENDING", "RUNNING"), f"the page opened while warmup runs ({first})")
    later = b.until(lambda: b.graph_states().get("talk") == "RUNNING" and b.graph_states(), 40)
    t.check(later and later["warmup"] == "COMPLETED",
            f"live updates: warmup {first} → COMPLETED and talk RUNNING on the page ({b.graph_states()})")
    t.check(b.js("return window.__sameLoad") == "yes", "... without a reload")
    log = b.until(lambda: "tick 1" in (text := b.js("return document.getElementById('log').textContent")) and text, 40)
    status, task, _ = api.call("GET", "/v1/tasks/running-task")
    t.check(log and task["state"] == "RUNNING", f"the running node's log appears while it runs ({log!r}, {task['state']})")
    b.driver.get(f"{base}/ui/workers")
    row = b.until(lambda: b.js("return document.querySelector('#worker-table tr[data-task=\"running-task\"]')?.textContent"))
    t.check(row and "talk" in row and "MiB" in row, f"the workers page lists the running worker with its memory ({row})")
    b.screenshot("workers")
    b.driver.get(f"{base}/ui/tasks/running-task")
    button = b.until(lambda: b.driver.find_element("id", "cancel"))
    b.screenshot("task-running")
    button.click()
    button.click()  # the second click confirms
    done = api.wait_state("running-task", {"CANCELLED", "COMPLETED", "FAILED"}, 30)
    t.check(done is not None and done["state"] == "CANCELLED", f"Cancel cancels the task ({done and done['state']})")
    shown = b.until(lambda: b.js("return document.getElementById('task-state')?.textContent") == "CANCELLED")
    t.check(shown, "the page shows CANCELLED")


def worker_text_stays_text(api, base, b, t):
    status, _, _ = api.call("POST", f"/v1/inbox/{INBOX}", evil_frame())
    done = api.wait_state("evil-task", {"COMPLETED", "FAILED"})
    t.check(done is not None and done["state"] == "COMPLETED", "the task with a <script> result COMPLETED")
    b.driver.get(f"{base}/ui/tasks/evil-task")
    text = b.until(lambda: b.js("return document.getElementById('detail-result')?.textContent"))
    t.check(text and "<script>window.__pwned=1</script>" in text, f"the worker's <script> is shown as text ({text!r})")
    time.sleep(0.5)
    t.check(b.js("return window.__pwned === undefined"), "... and never ran")
    t.check(b.js("return document.querySelectorAll('main script, main img').length") == 0,
            "no element came from the worker's string")


def other_pages(base, b, t):
    b.driver.get(f"{base}/ui/")
    depth = b.until(lambda: b.js("return document.querySelector('#inboxes td[data-depth]')?.dataset.depth"))
    t.check(depth is not None, f"the overview shows the inbox depth ({depth})")
    counts = b.js("return Object.fromEntries([...document.querySelectorAll('#tasks-by-state li')]"
                  ".map(li => [li.dataset.state, +li.querySelector('.count').textContent]))")
    t.check(counts.get("COMPLETED", 0) >= 2 and counts.get("FAILED") == 1 and counts.get("CANCELLED") == 1,
            f"the overview counts tasks by state ({counts})")
    b.screenshot("overview")
    b.driver.get(f"{base}/ui/images")
    image = b.until(lambda: b.js("return document.querySelector('#images tr[data-image=\"nps-demo-worker:1\"]')?.textContent"))
    t.check(image is not None, f"the images page lists the demo image ({image})")
    announces = b.js("return document.querySelectorAll('#announces tr[data-nid]').length")
    t.check(announces == len(AGENTS), f"... and the announces ({announces})")
    b.screenshot("images")
    b.driver.delete_all_cookies()
    b.driver.get(f"{base}/ui/tasks")
    title = b.driver.title
    t.check("Log in" in title, f"after the cookie is gone the dashboard is refused ({title})")


def missing_tools():
    for tool in ("umoci", "busybox"):
        if not shutil.which(tool):
            return f"needs {tool} (scripts/install-deps)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"needs {path} (apt install chromium chromium-driver; scripts/install-deps)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs python3-selenium for /usr/bin/python3 (scripts/install-deps)"
    if os.geteuid() != 0:
        return "needs root (the daemon makes namespaces, cgroups and mounts)"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--shots", default=os.environ.get("NPS_DASHBOARD_SCREENSHOTS", "dashboard-screenshots"))
    parser.add_argument("--docs-images", help="also write the task pages' screenshots here")
    args = parser.parse_args()
    if (why := missing_tools()):
        print(f"skipped: {why}")
        return 77
    Path(args.shots).mkdir(parents=True, exist_ok=True)
    t = Checks()
    with tempfile.TemporaryDirectory(prefix="nps-dashboard-") as state:
        subprocess.run([str(REPO / "demo" / "make-image"), f"{state}/image"], check=True, capture_output=True)
        subprocess.run([args.runner, "image", "import", f"{state}/image/oci", "--name", "nps-demo-worker:1",
                        "--state-dir", state], check=True, capture_output=True)
        Path(state, "config.toml").write_text(f'[runner]\ninboxes = ["{INBOX}"]\n')
        daemon, base, token = start_serve(args.runner, state)
        browser = None
        try:
            api = Api(base, token)
            for name, ref in AGENTS.items():
                status, _, _ = api.call("PUT", f"/v1/ndp/announces/{agent(name)}", {"spawn_spec_ref": ref})
                t.check(status == 200, f"agent {name} announced ({status})")
            browser = Browser(args.shots)
            access(args, base, token, api, browser, t)
            demo_dag(args, api, base, browser, t, args.docs_images)
            saga(api, base, browser, t, args.docs_images)
            terminal_pictures(args, base, token, t)
            running(api, base, browser, t)
            worker_text_stays_text(api, base, browser, t)
            other_pages(base, browser, t)
            t.check(daemon.poll() is None, "the daemon is still running")
            print(f"screenshots in {Path(args.shots).resolve()}")
        finally:
            if browser:
                browser.quit()
            daemon.terminate()
            daemon.wait(timeout=30)
            if t.count:
                print(Path(state, "serve.log").read_text()[-6000:])
    return t.exit_status()


if __name__ == "__main__":
    sys.exit(main())
