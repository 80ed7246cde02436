"""`elastichub simulate`: JSON fields, table, outputs, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from elastichub.cli import main

from sim_helpers import write_csv

ISSUE_FIELDS = {"mode", "theta_out", "cloud_node_hours", "wait_mean_s", "wait_p95_s", "wait_max_s",
                "servers", "migrations", "scale_outs", "scale_ins", "simulated_s", "wall_s"}


def simulate(capsys, *argv):
    code = main(["simulate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_document_has_the_issue_fields(capsys):
    code, out, _ = simulate(capsys, "--json", "--policy", "paper", "--days", "0.25", "--theta-out", "70,80")
    assert code == 0
    doc = json.loads(out)
    runs = doc["runs"]
    assert [(r["mode"], r["theta_out"]) for r in runs] == [
        ("onprem-only", None), ("no-migration", 70), ("no-migration", 80), ("migration", 70), ("migration", 80)]
    for r in runs:
        assert ISSUE_FIELDS | {"policy"} <= set(r)
        assert r["policy"] == "paper" and r["simulated_s"] == 21_600
        assert isinstance(r["cloud_node_hours"], float) and r["wall_s"] > 0
    assert doc["workload"]["name"] == "paper" and doc["workload"]["seed"] == 1


def test_table_by_default(capsys):
    code, out, _ = simulate(capsys, "--policy", "paper", "--days", "0.1", "--mode", "migration", "--seed", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("workload paper") and "seed 3" in lines[0]
    assert lines[1].split()[:3] == ["policy", "mode", "theta_out"]
    assert lines[3].split()[:3] == ["paper", "migration", "80.0"]
    assert len(lines) == 5  # restart moves: which drain was simulated, and the orchestrator's line for it
    assert lines[4].startswith("note: each drain restarted up to 1 server at once (--drain-concurrency); a hub "
                               "drains so with c.ElasticOrchestrator.drain_concurrency = 1 (its default: 4)")


def test_trace_replay(capsys, tmp_path):
    trace = write_csv(tmp_path / "hub.csv", "arrival_s,duration_s,cpu,ram_gib\n0,600,1,2\n10,600,1,2\n")
    code, out, _ = simulate(capsys, "--json", "--policy", "paper", "--trace", str(trace), "--onprem-nodes", "1",
                            "--onprem-node-ru", "2", "--cloud-nodes", "0")
    assert code == 0
    onprem = json.loads(out)["runs"][0]
    assert onprem["workload"] == "trace:hub.csv" and onprem["servers"] == 2
    assert onprem["wait_max_s"] == 596  # the second waits for the first (start 6 s + 600 s) - 10


def test_out_writes_csv_series_and_plots(capsys, tmp_path):
    out_dir = tmp_path / "res"
    code, _, _ = simulate(capsys, "--policy", "paper", "--days", "0.05", "--theta-out", "60,90",
                          "--out", str(out_dir))
    assert code == 0
    names = {p.name for p in out_dir.iterdir()}
    assert names >= {
        "paper-onprem-only.csv", "paper-no-migration-theta60.csv", "paper-no-migration-theta90.csv",
        "paper-migration-theta60.csv", "paper-migration-theta90.csv", "runs.json", "runs.csv",
        "waiting.png", "cloud_nodes.png", "occupancy.png", "tradeoff.png"}
    assert len([n for n in names if n.endswith(".csv")]) == 5 + 1  # one per run, and runs.csv
    lines = (out_dir / "paper-migration-theta60.csv").read_text().splitlines()
    assert lines[0] == ("t_s,queue_len,max_wait_s,cloud_active,cloud_booting,ram_occupancy_pct,cpu_occupancy_pct,"
                        "onprem_ram_pct,moved_waiting")
    assert len(lines) == 1 + 4320  # one row per simulated second
    assert (out_dir / "tradeoff.png").read_bytes()[:4] == b"\x89PNG"
    assert len(json.loads((out_dir / "runs.json").read_text())["runs"]) == 5


@pytest.mark.parametrize("argv, message", [
    (["--tmon-s", "0"], "--tmon-s must be > 0"),
    (["--onprem-nodes", "-1"], "--onprem-nodes must not be negative"),
    (["--onprem-nodes", "2.5"], "--onprem-nodes: expected a whole number"),
    (["--onprem-nodes", "0", "--cloud-nodes", "0"], "both 0"),
    (["--migration-min-s", "30"], "--migration-min-s (30) is larger than --migration-max-s (22.2)"),
    (["--theta-out", "abc"], "--theta-out: expected a number, got 'abc'"),
    (["--theta-out", "80,,90"], "--theta-out: expected a comma-separated list"),
    (["--theta-out", "-5"], "--theta-out: theta_out must be above 0"),
    (["--theta-out", "0"], "--theta-out: theta_out must be above 0 (a percentage of RAM occupancy"),
    (["--lifetime-sd-min", "-1"], "--lifetime-sd-min must be a finite number >= 0, got -1"),  # minutes, as typed
    (["--cloud-nodes", "1000000"], "--cloud-nodes must be at most 10,000 (got 1,000,000)"),
    (["--option", "standing_reserv=0.5"], "--option standing_reserv: policy 'elastic' has no option "
                                          "'standing_reserv' (did you mean standing_reserve?)"),
    (["--option", "standing_reserve"], "--option: expected KEY=VALUE, got 'standing_reserve'"),
    (["--option", "standing_reserve=2"], "--option: standing_reserve is a share of the reserve cap, 0..1"),
    (["--option", "lifetime_aware=maybe"], "--option: lifetime_aware must be True or False, got 'maybe'"),
    (["--option", "theta_in=0.05"], "--option: theta_in is a percentage (5 means a gap of 5 % of on-prem below "
                                    "theta_out); 0.05 looks like a fraction and would keep a gap of 0.05 %: use 5"),
    (["--policy", "paper", "--option", "theta_in=3"], "--option theta_in: policy 'paper' has no option "
                                                      "'theta_in'; it takes none"),
    (["--theta-out", "80,800"], "--theta-out: theta_out is a percentage of RAM occupancy, at most 100; at 800"),
    (["--cloud-node-cpu", "8"], "--cloud-node-cpu and --cloud-node-ram-gib go together: give both or neither"),
    (["--onprem-node-ru", "40", "--onprem-node-cpu", "16", "--onprem-node-ram-gib", "64"],
     "--onprem-node-ru and --onprem-node-cpu/--onprem-node-ram-gib say the same: give one"),
    (["--cloud-node-cpu", "0", "--cloud-node-ram-gib", "32"], "--cloud-node-cpu must be > 0, got 0"),
    (["--theta-out", "80,0.95"], "--theta-out: theta_out is a percentage of RAM occupancy (80 means 80 %); 0.95 looks"),
    (["--cloud-boot-s", "inf"], "--cloud-boot-s: expected a finite number"),
    (["--days", "0"], "--days: must be > 0"),
    (["--seed", "x"], "--seed: expected a whole number"),
    (["--policy", "paper,nope"], "--policy: unknown policy 'nope'"),
    (["--mode", "cloud-only"], "--mode: unknown mode 'cloud-only'"),
    (["--workload", "nope"], "--workload: unknown workload 'nope'"),
    (["--lifetime-mean-min", "0"], "--lifetime-mean-min must be > 0"),
    (["--trace", "x.csv", "--workload", "paper"], "exclude each other"),
])
def test_bad_options_are_one_line_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        main(["simulate", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("word, value", [("no", False), ("Off", False), ("yes", True), ("true", True)])
def test_a_yes_or_no_option_reads_as_a_boolean(word, value):
    """'no' used to pass as text, which the strategy read as true."""
    from elastichub.simulator.cli import _options

    assert _options([f"lifetime_aware={word}"], ["elastic"]) == {"lifetime_aware": value}


def run_cli(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "elastichub", "simulate", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("text, argv, message", [
    ("arrival_s,cpu,ram_gib\n0,1,1\n", [], "line 1: missing column(s) duration_s"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,60,1,1\n9,-1,1,1\n", [], "line 3, column duration_s: negative value -1"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,60,1,80\n", [], "trace.csv: every row asks for more than any simulated "
     "node holds (the first: "),
    ("arrival_s,duration_s,cpu,ram_gib\n0,60,1,80\n", [], "trace.csv line 2, column ram_gib: 80 GiB is more than the "
     "largest node has (50 GiB)): nothing to replay; give the simulator your nodes' sizes"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,60,1,1\n0,60,1,80\n", ["--too-big", "error"],
     "line 3, column ram_gib: 80 GiB is more than the largest node"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,60,1,1\n", ["--too-big", "drop"],
     "--too-big: expected skip or error, got 'drop'"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,60,1,1\n", ["--cloud-nodes", "-2"], "--cloud-nodes must not be negative"),
    # CPU fits the on-prem node, RAM the cloud one, both together neither: it would wait for ever
    ("arrival_s,duration_s,cpu,ram_gib\n0,60,1,1\n0,60,16,48\n",
     ["--too-big", "error", "--onprem-node-cpu", "32", "--onprem-node-ram-gib", "32", "--cloud-node-cpu", "8",
      "--cloud-node-ram-gib", "64"],
     "trace.csv line 3: 16 cores and 48 GiB together fit no node (32 cores and 32 GiB or 8 cores and 64 GiB): it "
     "could never run; give the simulator your nodes' sizes (--onprem-node-cpu, --onprem-node-ram-gib, "
     "--cloud-node-cpu, --cloud-node-ram-gib)"),
])
def test_bad_input_in_a_real_process(tmp_path, text, argv, message):
    trace = write_csv(tmp_path / "trace.csv", text)
    result = run_cli("--trace", str(trace), *argv, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_a_session_bigger_than_every_node_is_left_out_and_said_in_every_output(tmp_path, capsys, monkeypatch):
    """One GPU profile's 64 GiB session in a term's history stopped the whole replay with an error."""
    import matplotlib.figure

    trace = write_csv(tmp_path / "h.csv", "arrival_s,duration_s,cpu,ram_gib\n0,600,1,2\n60,600,1,64\n120,600,1,2\n"
                                          "180,600,40,2\n")
    said = "2 session(s) of the trace asked for more than any simulated node holds and are left out of the replay " \
           f"(the first: {trace} line 3, column ram_gib: 64 GiB is more than the largest node has (50 GiB)); give " \
           "the simulator your nodes' sizes (--onprem-node-cpu"
    code, out, _ = simulate(capsys, "--trace", str(trace), "--policy", "paper", "--mode", "onprem-only", "--json")
    workload = json.loads(out)["workload"]
    assert code == 0 and workload["servers"] == 2 and workload["too_big"] == 2
    assert workload["too_big_note"].startswith(said) and "--too-big error" in workload["too_big_note"]
    captions = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, path, **kw: captions.append([t.get_text() for t in fig.texts]))
    code, out, _ = simulate(capsys, "--trace", str(trace), "--policy", "paper", "--mode", "onprem-only",
                            "--out", str(tmp_path / "out"))
    assert code == 0 and f"note: {said}" in out
    assert len(captions) == 3 and all(said in " ".join(" ".join(texts).split()) for texts in captions)
    assert json.loads((tmp_path / "out" / "runs.json").read_text())["workload"]["too_big"] == 2
    captions.clear()
    code, out, _ = simulate(capsys, "--trace", str(trace), "--tune", "--slo-p95-wait", "60", "--theta-out", "80",
                            "--out", str(tmp_path / "tune"), "--json")
    assert code == 0 and json.loads(out)["too_big_note"].startswith(said)
    assert len(captions) == 1 and said in " ".join(" ".join(captions[0]).split())
    with pytest.raises(SystemExit):
        main(["simulate", "--trace", str(trace), "--too-big", "error"])
    assert "line 3, column ram_gib: 64 GiB is more than the largest node" in capsys.readouterr().err


def test_progress_bar_appears_only_after_a_second(monkeypatch):
    import io

    from elastichub.simulator.cli import _Progress
    from elastichub.simulator.runner import RunSpec

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    bar = _Progress(True)
    spec = RunSpec("paper", "migration", 80.0)
    bar(0, 4, spec)
    assert stream.getvalue() == ""  # quick sweeps stay quiet
    bar.started -= 2.0
    bar(1, 4, spec)
    assert "1/4 paper-migration-theta80" in stream.getvalue() and "#######" in stream.getvalue()
    bar(4, 4, None)
    assert stream.getvalue().endswith("\r\033[K")  # the line is cleared at the end
    quiet = _Progress(False)
    quiet.started -= 2.0
    quiet(1, 4, spec)
    assert stream.getvalue().count("1/4") == 1


def test_the_move_method_is_read_in_any_case_as_the_orchestrator_reads_it(capsys):
    assert main(["simulate", "--days", "0.05", "--mode", "migration", "--move-method", "LIVE", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"]["move_method"] == "live"


def test_a_schedule_no_policy_of_the_run_uses_is_said_to_change_nothing(tmp_path, capsys):
    """--schedule with --policy elastic (or --tune, which never tunes calendar) was taken without a word."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,duration_s,cpu,ram_gib\n0,7200,1,2\n")
    timetable = tmp_path / "s.csv"
    timetable.write_text("start,users,cpu,ram_gib\n00:30,10,1,2\n")
    assert main(["simulate", "--trace", str(trace), "--schedule", str(timetable), "--mode", "migration"]) == 0
    assert ("warning: --schedule: only policy calendar decides with the timetable; elastic runs as without it"
            in capsys.readouterr().err)
    assert main(["simulate", "--trace", str(trace), "--schedule", str(timetable), "--mode", "migration",
                 "--policy", "calendar,elastic"]) == 0
    assert "--schedule" not in capsys.readouterr().err


def test_timezone_sets_the_clock_of_a_replay_and_of_the_command_that_replays_it(tmp_path, capsys):
    trace = write_csv(tmp_path / "h.csv", "arrival,duration_s,cpu,ram_gib\n2026-03-27T08:00:00Z,600,1,2\n"
                                          "2026-03-30T07:00:00Z,600,1,2\n")
    code, out, err = simulate(capsys, "--trace", str(trace), "--timezone", "Europe/Berlin", "--policy", "paper",
                              "--mode", "onprem-only", "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["workload"]["description"].endswith("from 2026-03-27 00:00+01:00)")
    code, out, _ = simulate(capsys, "--trace", str(trace), "--timezone", "Europe/Berlin", "--tune", "--slo-p95-wait",
                            "60", "--theta-out", "80", "--option", "standing_reserve=0", "--out", str(tmp_path),
                            "--json")
    assert code == 0 and " --timezone Europe/Berlin " in json.loads(out)["replay"]


@pytest.mark.parametrize("offset, midnight", [("+01:00", "+01:00"), ("UTC+1", "+01:00"), ("-0530", "-05:30"),
                                              ("GMT-03", "-03:00")])
def test_a_fixed_utc_offset_sets_the_clock_of_a_replay(tmp_path, capsys, offset, midnight):
    """`--timezone +01:00`, as many admins write a zone, was 'unknown time zone'."""
    trace = write_csv(tmp_path / "h.csv", "arrival,duration_s,cpu,ram_gib\n2026-03-27T08:00:00Z,600,1,2\n")
    code, out, err = simulate(capsys, "--trace", str(trace), "--timezone", offset, "--policy", "paper",
                              "--mode", "onprem-only", "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["workload"]["description"].endswith(f"from 2026-03-27 00:00{midnight})")


@pytest.mark.parametrize("argv, message", [
    (["--timezone", "Mars/Olympus"], "--timezone: unknown time zone 'Mars/Olympus': give a zone name (UTC, "
                                     "Europe/Berlin) or a fixed UTC offset (+01:00, -0500, UTC+1, GMT-05:30)"),
    (["--timezone", "UTC+1:75"], "--timezone: 'UTC+1:75' is no UTC offset (they reach from -12:00 to +14:00)"),
    (["--timezone", "UTC", "--workload", "paper"], "--timezone: only a --trace of timestamps has a clock to set"),
])
def test_a_bad_timezone_is_one_line(tmp_path, capsys, argv, message):
    trace = write_csv(tmp_path / "h.csv", "arrival,duration_s,cpu,ram_gib\n2026-03-27T08:00:00Z,600,1,2\n")
    if "--workload" not in argv:
        argv = ["--trace", str(trace), *argv]
    with pytest.raises(SystemExit) as info:
        main(["simulate", *argv])
    assert info.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")


def test_a_trace_is_drained_as_the_orchestrator_does_a_built_in_workload_as_the_paper(capsys, tmp_path):
    from elastichub.orchestrator.app import ElasticOrchestrator
    from elastichub.simulator.params import MAX_DRAIN_CONCURRENCY, ORCHESTRATOR_DRAIN_CONCURRENCY

    trait = ElasticOrchestrator.class_traits()["drain_concurrency"]
    assert (ORCHESTRATOR_DRAIN_CONCURRENCY, MAX_DRAIN_CONCURRENCY) == (trait.default_value, trait.max)
    trace = write_csv(tmp_path / "hub.csv", "arrival_s,duration_s,cpu,ram_gib\n0,600,1,2\n10,600,1,2\n")

    def concurrency(*argv):
        assert main(["simulate", "--json", "--mode", "migration", *argv]) == 0
        return json.loads(capsys.readouterr().out)["parameters"]["drain_concurrency"]

    assert concurrency("--days", "0.05") == 1  # the paper's evaluation
    assert concurrency("--trace", str(trace)) == 4  # your hub, as your orchestrator drains it
    assert concurrency("--trace", str(trace), "--drain-concurrency", "2") == 2
    assert concurrency("--days", "0.05", "--drain-concurrency", "16") == 16
    code, out, _ = simulate(capsys, "--trace", str(trace), "--mode", "migration")
    assert code == 0 and out.splitlines()[-1].startswith("note: each drain restarted up to 4 servers at once")


@pytest.mark.parametrize("value, message", [
    ("0", "--drain-concurrency must be a whole number from 1 to 16 (the range of "
          "ElasticOrchestrator.drain_concurrency), got 0"),
    ("17", "--drain-concurrency must be a whole number from 1 to 16"),
    ("2.5", "--drain-concurrency: expected a whole number, got '2.5'"),
])
def test_a_bad_drain_concurrency_is_one_line(capsys, value, message):
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--drain-concurrency", value])
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and len(err.strip().splitlines()) == 1
