"""The Sphinx/MyST docs build without a warning (broken links, missing pages), and what they list
(settings, JSON keys, pod metadata, the kernel install) is what the code has."""

import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_docs_build_cleanly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for page in ("index", "tutorial", "deploy", "reference", "migration", "orchestrator", "spawner", "policy", "strategies", "simulator", "localcluster", "kernel"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), page


def test_the_example_config_installs_the_kernel_as_the_deploy_how_to_does():
    # The example config's comment installed it as "elastic-python": course notebooks, which name
    # `python3`, then opened in the stock kernel, and their servers could not move.
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    command = re.search(r"python -m elastichub_kernel install [^\n]*", deploy).group(0).strip()
    assert "--name python3" in command
    assert command in (ROOT / "jupyterhub_config_example.py").read_text()


def documented_keys(page: str, opening: str, end: str = "\n\n") -> dict:
    """The JSON keys a page lists between `opening` and `end`, by the key they are nested
    under (None: the top level): a backticked name inside a parenthesis belongs to the key before it."""
    text = (ROOT / "docs" / page).read_text()
    paragraph = text.split(opening, 1)[1].split(end, 1)[0]
    keys: dict = {}
    parents, last = [None], None
    for token in re.finditer(r"`([^`]+)`|\(|\)", paragraph):
        if token.group(0) == "(":
            parents.append(last)
        elif token.group(0) == ")":
            last = parents.pop()
        else:
            last = token.group(1)
            keys.setdefault(parents[-1], set()).add(last)
    return keys


async def test_the_status_api_answers_the_keys_the_orchestrator_page_lists(cluster_factory, wire):
    # `time`, a decision's `dry_run` and a move's `started_at` were answered and not listed.
    from podtools import cluster_config, node_of, server_pod, until

    from elastichub.orchestrator.drain import MoveReport
    from elastichub.policy import PolicyConfig, make_strategy

    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1))
    cluster.store.create("pods", server_pod("ann", "1Gi"))
    await until(lambda: node_of(cluster.store, "jupyter-ann"), what="the pod bound")
    ctl = await wire(cluster, make_strategy("elastic", PolicyConfig(tmon=0.2)), tmon=0.2)
    await ctl.cycle()
    status = ctl.status()
    documented = documented_keys("orchestrator.md", "`api/status` answers one object:")
    assert set(status) == documented[None]
    assert set(status["nodes"][0]) == documented["nodes"]
    assert set(status["decisions"][0]) | {"taken"} == documented["decisions"]  # `taken`: with an action
    assert set(MoveReport("default/jupyter-ann", "cloud-1").to_json()) == documented["migrations"] - {
        "in_flight", "recent"}


def test_simulate_and_tune_answer_the_json_keys_the_simulator_page_lists(tmp_path, capsys):
    # --tune --json answered "processes", which the page did not list.
    from elastichub.cli import main

    args = ["simulate", "--workload", "weekend", "--days", "0.25", "--theta-out", "80", "--json", "--no-progress"]
    assert main(args) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert set(run) == documented_keys("simulator.md", "each run has")[None]
    assert main([*args, "--tune", "--slo-p95-wait", "600", "--out", str(tmp_path)]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert set(tuned) == documented_keys("simulator.md", "`--json` prints the same as one document",
                                         ". When no setting")[None]


def test_the_reference_names_every_label_annotation_and_taint_elastichub_writes():
    # The live-move and moved-pod annotations (asked, started, move-of, route) were on pods and nowhere
    # in the reference table an admin reads after `kubectl describe pod`.
    from elastichub import podmeta

    table = (ROOT / "docs" / "reference.md").read_text().split("## Pod and node metadata", 1)[1]
    names = {value for name, value in vars(podmeta).items() if isinstance(value, str) and name.isupper()
             and value.startswith(podmeta.PREFIX) and value != podmeta.PREFIX}
    assert names and not {name for name in names if f"`{name}`" not in table}


def settings_added(cls: str, base: str) -> set[str]:
    import importlib

    def traits(path):
        module, name = path.rsplit(".", 1)
        return set(getattr(importlib.import_module(module), name).class_trait_names(config=True))
    return traits(cls) - traits(base)


@pytest.mark.parametrize("page, cls, base", [
    ("spawner.md", "elastichub.spawner.ElasticSpawner", "kubespawner.KubeSpawner"),
    ("kernel.md", "elastichub_kernel.kernel.ElasticKernel", "ipykernel.ipkernel.IPythonKernel"),
    ("kernel.md", "elastichub_kernel.serverext.ElasticHubExtension",
     "jupyter_server.extension.application.ExtensionApp"),
])
def test_the_pages_table_every_setting_elastichub_adds(page, cls, base):
    # route_switch_interval (spawner) and live_default_lease / live_max_lease (kernel) were missing.
    text = (ROOT / "docs" / page).read_text()
    rows = re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?", text, re.M)  # a row may name two: `onprem_tier`, `cloud_tier`
    table = {name for row in rows for name in row if name}
    added = settings_added(cls, base)
    assert added and added <= table, added - table


def test_the_local_cluster_page_names_every_option_of_its_command():
    # --log-level was an option of `elastichub localcluster` and not on the page's list.
    import argparse

    from elastichub.localcluster import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    options = {o for action in parser._actions for o in action.option_strings if o.startswith("--")} - {"--help"}
    listed = set(re.findall(r"^- \*\*`(--[\w-]+)", (ROOT / "docs" / "localcluster.md").read_text(), re.M))
    assert options and options == listed, options ^ listed


async def test_the_adopt_section_quotes_what_the_orchestrator_says_of_a_server_it_cannot_move():
    # It quoted the checkpoint's `unsupported` and `is not an Elastic Python kernel`, and had such a move rolled
    # back: the drain asks each server what it runs before the cordon, and names these servers by that check.
    from elastichub.orchestrator.hub import HubError, HubServer
    from elastichub.orchestrator.movable import Movability, Unmovable
    from elastichub.orchestrator.records import PodRecord

    class CarolsServer:
        """A python3 kernel, in an image with the kernel package (stock kernel) or without it (404)."""

        def __init__(self, extension):
            self.extension = extension

        async def server(self, user, name):
            return HubServer(user, name, True, None, f"/user/{user}/", {}, None, None)

        def proxy_base(self, server):
            return f"http://proxy{server.url}"

        async def kernels(self, server):
            return [{"id": "k1", "name": "python3", "execution_state": "idle"}]

        async def server_call(self, base, method, path, body=None, *, owner=None, timeout=None):
            if not self.extension:
                raise HubError(f"{method} {path}: 404 Not Found", 404)
            return {"kernels": [{"kernel_id": "k1", "kernel_name": "python3", "elastic": False}]}

    pod = PodRecord("jhub/jupyter-carol", "cloud-1", "Running", 0.5, 2**30, False, True, True, user="carol",
                    server="carol", uid="u1")
    said = []
    for extension in (False, True):
        with pytest.raises(Unmovable) as refused:
            await Movability(CarolsServer(extension)).check("cloud-1", [pod])
        said.append(f"drain of cloud-1: not started ({refused.value})")  # the controller's event
    text = (ROOT / "docs" / "deploy.md").read_text()
    bullet = text.split("- A profile whose image lacks the kernel package", 1)[1].split("\n\n", 1)[0]
    quotes = [" ".join(q.split()) for q in re.findall(r"`([^`]+)`", bullet) if "..." in q]
    assert quotes
    for quote in quotes:
        pattern = ".*".join(map(re.escape, quote.split("...")))
        assert any(re.search(pattern, line) for line in said), (quote, said)


def test_the_metrics_list_every_stage_a_failed_step_is_counted_under():
    # A failed re-read of the unmovable servers' kernels (task "movable") was counted as
    # elastichub_cycle_errors_total{stage="movable"}: a series neither made at 0 nor listed on the page.
    import ast

    from elastichub.orchestrator import controller, metrics

    stages = set()
    for node in ast.walk(ast.parse(pathlib.Path(controller.__file__).read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            continue
        task = node.func.attr == "_spawn"  # a background step: its failure counts under its key's stage
        if task or node.func.attr == "labels" and ast.unparse(node.func.value).endswith("cycle_errors"):
            key = node.args[0]
            key = key.values[0] if isinstance(key, ast.JoinedStr) else key  # f"drain:{node}"
            if isinstance(key, ast.Constant):
                stages.add(key.value.split(":")[0])
    assert {"cycle", "cloud", "tell", "drain", "boot"} <= stages
    assert stages <= set(metrics.CYCLE_STAGES), stages - set(metrics.CYCLE_STAGES)
    text = (ROOT / "docs" / "orchestrator.md").read_text()
    listed = re.search(r"`stage` ([\w, ]+)[:)]", " ".join(text.split())).group(1)
    assert set(listed.replace(",", " ").split()) == set(metrics.CYCLE_STAGES)


@pytest.mark.parametrize("command, page", [
    ("demo", "tutorial.md"), ("simulate", "simulator.md"), ("trace", "simulator.md"), ("rbac", "deploy.md")])
def test_each_option_of_a_command_is_named_on_its_page(command, page):
    # `elastichub rbac --service-account` (outside zero-to-jupyterhub, the hub's own account) was named
    # nowhere, nor `simulate --workload` on the page its help points at, nor the demo's --stay and --boot-delay.
    import argparse
    import importlib

    from elastichub.cli import SUBCOMMANDS

    parser = argparse.ArgumentParser()
    importlib.import_module(SUBCOMMANDS[command][0]).add_arguments(parser)
    options = {o for action in parser._actions for o in action.option_strings if o.startswith("--")} - {"--help"}
    text = (ROOT / "docs" / page).read_text()
    missing = {o for o in options if not re.search(re.escape(o) + r"(?![\w-])", text)}
    assert options and not missing, missing


def test_the_kernel_page_names_every_query_argument_of_the_endpoints():
    # The status endpoint's ask_kernels=0 (what each kernel is, read from its kernelspec: no kernel asked)
    # was in the handler and the module's docstring, not in the page's endpoint API.
    from elastichub_kernel import serverhandlers

    source = pathlib.Path(serverhandlers.__file__).read_text()
    arguments = set(re.findall(r"get_(?:query_)?argument\(\"(\w+)\"", source))
    endpoints = "\n".join(re.findall(r"^### `(?:GET|POST) [^\n]+", (ROOT / "docs" / "kernel.md").read_text(), re.M))
    missing = {a for a in arguments if not re.search(rf"[?&]{a}=", endpoints)}
    assert arguments and not missing, missing


def test_the_sections_that_messages_point_at_are_headings_of_their_pages():
    # A restore's first cell said: see "Not carried" in ElasticHub's docs/kernel.md; that was a phrase
    # inside a 570-line section, in no heading or table of contents a student could find it by.
    folders = (ROOT / "elastichub", ROOT / "kernel" / "elastichub_kernel")
    sources = [re.sub(r"\"\s*\n\s*f?\"", "", path.read_text())  # a message's literals joined across lines
               for folder in folders for path in folder.rglob("*.py")]
    pointers = set()
    for source in sources:
        pointers |= {(page, section) for section, page in
                     re.findall(r"\\\"([A-Z][^\"\\]+)\\\" in ElasticHub's (docs/\w+\.md)", source)}
        pointers |= set(re.findall(r"(docs/\w+\.md), '([A-Z][^']+)'", source))
    assert pointers, pointers
    for page, section in pointers:
        headings = re.findall(r"^#+ (.+)$", (ROOT / page).read_text(), re.M)
        assert any(h.startswith(section) for h in headings), (page, section)


# strategies.md is for those who write a strategy: it points into the policy's code and its property tests.
@pytest.mark.parametrize("page", sorted({p.name for p in (ROOT / "docs").glob("*.md")} - {"strategies.md"}))
def test_a_page_sends_its_readers_to_no_source_or_test_file(page):
    # The kernel page pointed at forward.py, userhooks.py, loader.py, tests/e2e/test_lab_widgets.py..., the
    # spawner's at podspec.py and an e2e test: files that neither a student in a notebook nor an admin reading
    # the docs has in front of them (the benchmarks/ scripts are commands to run, and stay).
    from elastichub_kernel import kernel

    own = {p.name for p in pathlib.Path(kernel.__file__).parent.glob("*.py")} - {"__init__.py", "__main__.py"}
    named = set(re.findall(r"[\w./-]+\.py\b", (ROOT / "docs" / page).read_text()))
    internal = {n for n in named if n.rsplit("/", 1)[-1] in own or "shared/" in n
                or re.search(r"(^|/)(tests|e2e|elastichub\w*|orchestrator|policy|simulator|localcluster)/", n)}
    assert not internal, internal


def test_the_status_endpoints_example_holds_every_key_of_a_kernels_status():
    # session_key, session_name, checkpoint_root and live were in every reply and not in the example.
    import ast

    from elastichub_kernel import kernel

    tree = ast.parse(pathlib.Path(kernel.__file__).read_text())
    status = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "status")
    keys = {k.value for n in ast.walk(status) if isinstance(n, ast.Dict) for k in n.keys
            if isinstance(k, ast.Constant)} - {"write_bps", "read_bps", "source"}  # disk_speed's own
    text = (ROOT / "docs" / "kernel.md").read_text()
    section = text.split("### `GET /api/elastichub/status", 1)[1].split("\n### ", 1)[0]
    example = json.loads(re.search(r"```json\n(.+?)```", section, re.S).group(1))
    assert keys and keys == set(example["kernels"][0]["status"]), keys ^ set(example["kernels"][0]["status"])


def test_the_kernel_page_names_every_magic_and_each_of_its_options():
    # `%elastic_status --json` (the raw status, for the course staff) came with the student's summary: a
    # magic or an option the page does not name is one nobody finds.
    from elastichub_kernel import magics

    source = pathlib.Path(magics.__file__).read_text()
    names = re.findall(r"@line_magic\s+def (\w+)", source)
    options = {(name, option) for name, usage in re.findall(r"usage: %(\w+) ([^\"]+)", source)
               for option in re.findall(r"--[\w-]+", usage)}
    text = " ".join((ROOT / "docs" / "kernel.md").read_text().split())
    assert names and options
    assert not [n for n in names if f"`%{n}`" not in text]
    assert not [o for o in options if f"`%{o[0]} {o[1]}`" not in text], options


def test_the_spawner_page_names_every_field_of_its_state():
    # `moved` (the last stop was a drain's: the next start says "Moving your server") came into the state
    # this session and the State section went on listing three fields, not by their names.
    import ast

    from elastichub import spawner

    tree = ast.parse(pathlib.Path(spawner.__file__).read_text())
    get_state = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_state")
    keys = {k.value for n in ast.walk(get_state) if isinstance(n, ast.Dict) for k in n.keys}
    section = (ROOT / "docs" / "spawner.md").read_text().split("### State\n", 1)[1].split("\n#", 1)[0]
    assert keys and not {k for k in keys if f"`{k}`" not in section}, keys
