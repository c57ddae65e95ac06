"""The monitoring that ships in `k8s/monitoring/`: a real Prometheus server scraping a real `tablehall
serve` on loopback answers `tablehall_matches_active` with the number of running matches; the alert
rules pass their `promtool test rules` unit tests; the dashboard and the alerts name only series the
service exports."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tablehall.client import Client
from tablehall.ports import free_port
from tests.metrics_support import MONITORING, Served, binary, exported_names, serve_with_metrics
from tests.processes import stop_process

DASHBOARD = MONITORING / "tablehall-dashboard.json"
ALERTS = MONITORING / "alerts.yaml"
ALERTS_TEST = MONITORING / "alerts_test.yaml"
METRIC = re.compile(r"\btablehall_[a-z0-9_]+\b")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_with_metrics(tmp_path_factory.mktemp("monitoring")) as service:
        yield service


@pytest.fixture(scope="module")
def exported(served: Served) -> set[str]:
    return exported_names(served.scrape())


def _query(base: str, expr: str) -> list[dict[str, object]]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=5) as reply:
        body = json.load(reply)
    assert body["status"] == "success", body
    return list(body["data"]["result"])


@pytest.fixture
def prometheus(served: Served, tmp_path: Path) -> Iterator[str]:
    """A Prometheus server on loopback scraping the service every second; stopped after the test."""
    server = binary("prometheus")
    port = free_port()
    target = urllib.parse.urlparse(served.metrics_url).netloc
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files: ['{ALERTS}']\n"
        f"scrape_configs:\n  - job_name: tablehall\n    static_configs:\n      - targets: ['{target}']\n"
    )
    command = [
        server, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process)
        log.close()
        assert process.returncode is not None


def test_prometheus_scrapes_the_service_and_counts_active_matches(served: Served, prometheus: str) -> None:
    async def create() -> None:
        async with Client(served.address) as client:
            for players in (["a", "b", "c"], ["d", "e", "f", "g"]):
                await client.create_match("501", players)

    asyncio.run(create())
    expr = 'sum(tablehall_matches_active{job="tablehall", game="501"})'
    deadline = time.monotonic() + 45
    seen: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        try:
            seen = _query(prometheus, expr)
        except OSError:  # not listening yet
            seen = []
        if seen and float(seen[0]["value"][1]) == 2:  # type: ignore[index]
            break
        time.sleep(0.5)
    assert seen and float(seen[0]["value"][1]) == 2, f"{expr} → {seen}"  # type: ignore[index]
    up = _query(prometheus, 'up{job="tablehall"}')
    assert [float(r["value"][1]) for r in up] == [1.0]  # type: ignore[index]
    # the alert rules load and evaluate against the live series
    rules = json.load(urllib.request.urlopen(f"{prometheus}/api/v1/rules", timeout=5))
    names = {r["name"] for g in rules["data"]["groups"] for r in g["rules"]}
    assert names == {
        "TablehallVoidsRising", "TablehallTimerLate", "TablehallNoSweep", "TablehallRatingLagHigh",
        "TablehallHandoffSlow", "TablehallLeaseLosses", "TablehallLobbyWaitHigh",
    }  # fmt: skip


def test_the_alert_rules_pass_their_promtool_unit_tests(tmp_path: Path) -> None:
    promtool = binary("promtool")
    checked = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, "test", "rules", str(ALERTS_TEST)], capture_output=True, text=True, timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # every alert has unit tests that expect it to fire
    firing = set(re.findall(r"alertname: (\w+)\n\s+exp_alerts:\n\s+- exp_labels:", ALERTS_TEST.read_text()))
    quiet = set(re.findall(r"alertname: (\w+)\n\s+exp_alerts: \[\]", ALERTS_TEST.read_text()))
    alerts = set(re.findall(r"- alert: (\w+)", ALERTS.read_text()))
    assert len(alerts) == 7 and firing == alerts and quiet == alerts
    # and the tests can fail: the same tests against rules with a threshold moved do fail
    broken = tmp_path / "alerts.yaml"
    (tmp_path / "alerts_test.yaml").write_text(ALERTS_TEST.read_text())
    broken.write_text(ALERTS.read_text().replace("> 0.5", "> 5"))
    failed = subprocess.run(
        [promtool, "test", "rules", str(tmp_path / "alerts_test.yaml")], capture_output=True, text=True, timeout=60
    )
    assert failed.returncode != 0 and "TablehallTimerLate" in failed.stdout + failed.stderr
    # ...and a slow-hand-off alert on the p99 (held for a few minutes) misses the single slow hand-off
    rules = yaml.safe_load(ALERTS.read_text())
    (slow,) = [r for g in rules["groups"] for r in g["rules"] if r["alert"] == "TablehallHandoffSlow"]
    slow["expr"] = "histogram_quantile(0.99, sum by (le, kind) (rate(tablehall_handoff_seconds_bucket[5m]))) > 1"
    slow["for"] = "2m"
    broken.write_text(yaml.safe_dump(rules, allow_unicode=True))
    failed = subprocess.run(
        [promtool, "test", "rules", str(tmp_path / "alerts_test.yaml")], capture_output=True, text=True, timeout=60
    )
    out = failed.stdout + failed.stderr
    assert failed.returncode != 0 and "alertname: TablehallHandoffSlow, time: 22m" in out, out


def test_the_dashboard_names_only_exported_series(exported: set[str]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    titles = [panel["title"] for panel in dashboard["panels"]]
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert exprs and all(METRIC.search(e) for e in exprs)
    used = {name for e in exprs for name in METRIC.findall(e)}
    assert used <= exported, used - exported
    wanted = (
        "timer_lateness", "matches_voided", "command_duration", "matches_active", "service_faults",
        "partitions_owned", "handoffs_total", "handoff_seconds", "lease_losses",
        "lobby_queue_length", "lobby_oldest_wait_seconds", "lobby_wait_seconds", "lobby_pairings_total",
        "lobby_rating_gap",
    )  # fmt: skip
    for metric in wanted:  # the panels an operator needs first
        assert any(f"tablehall_{metric}" in e for e in exprs), metric
    assert len(set(titles)) == len(titles)


def test_the_alerts_name_only_exported_series(served: Served, exported: set[str]) -> None:
    exprs = [rule["expr"] for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]
    assert len(exprs) == 7
    used = {name for e in exprs for name in METRIC.findall(e)}
    assert used and used <= exported, used - exported
    # a bucket an alert picks (le="1.0": the tolerance) is one the histogram has, spelt as exported
    scraped = served.samples()
    buckets = {(name, le) for e in exprs for name, le in re.findall(r'(tablehall_\w+_bucket)\{le="([^"]+)"\}', e)}
    assert buckets
    for name, le in buckets:
        assert any(n == name and dict(labels).get("le") == le for n, labels in scraped), (name, le)


def test_the_name_check_can_fail(exported: set[str]) -> None:
    assert "tablehall_matches_active" in exported
    assert "tablehall_command_duration_seconds_bucket" in exported
    assert "tablehall_matches_activ" not in exported and "tablehall_commands_total" not in exported


BORN_LATE = {  # counter panels → their counter, the labels of a series born at 6 and of one that stays flat
    "Matches voided by reason (per 5m)": (
        "tablehall_matches_voided_total", 'reason="worker_down"', 'reason="abandoned"'
    ),
    "Service faults by kind (per 5m)": ("tablehall_service_faults_total", 'kind="worker_down"', 'kind="timer_late"'),
    "Matches finished by game and reason (per 5m)": (
        "tablehall_matches_finished_total", 'game="501", reason="score"', 'game="501", reason="time"'
    ),
    "Partition hand-offs by kind (per 5m)": ("tablehall_handoffs_total", 'kind="rebalance"', 'kind="crash"'),
    "Lease losses by reason (per 5m)": ("tablehall_lease_losses_total", 'reason="expired"', 'reason="down"'),
    "Lobby tables made by game and source (per 5m)": (
        "tablehall_lobby_pairings_total", 'game="501", source="queue"', 'game="spectacular-bid", source="bot"'
    ),
}


def test_the_counter_panels_count_a_series_born_non_zero(tmp_path: Path) -> None:
    """A new pod that voided 6 matches before its first scrape: its series is born at 6. The panels show
    6 for it (increase() alone shows 0), and 0 for a series that existed and did not move."""
    promtool = binary("promtool")
    panels = {panel["title"]: panel["targets"][0]["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"]}
    tests = []
    for title, (metric, born, flat) in BORN_LATE.items():
        tests.append({
            "interval": "1m",
            "input_series": [
                {"series": f'{metric}{{{born}, instance="new"}}', "values": "_x5 6x20"},
                {"series": f'{metric}{{{flat}, instance="old"}}', "values": "3x25"},
            ],
            "promql_expr_test": [{
                "expr": panels[title],
                "eval_time": "7m",
                "exp_samples": [{"labels": f"{{{born}}}", "value": 6}, {"labels": f"{{{flat}}}", "value": 0}],
            }],
        })
    (tmp_path / "panels_test.yaml").write_text(yaml.safe_dump({"evaluation_interval": "1m", "tests": tests}))
    tested = subprocess.run(
        [promtool, "test", "rules", str(tmp_path / "panels_test.yaml")], capture_output=True, text=True, timeout=60
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
