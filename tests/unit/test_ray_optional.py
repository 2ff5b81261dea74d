"""Ray stays optional: the one-machine path never imports it, and asking for it without it, or for a
cluster that is not there, or with a plan that cannot be placed, is a clear error (exit 2).

These run without Ray installed (no `ray` marker); the cluster tests are in tests/scale/.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rigbench.plan import PlanError, load_plan
from rigbench.plan._models import RigResources

# a meta-path hook that makes `import ray` fail as on a machine without the extra
_NO_RAY = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name == "ray" or name.startswith("ray."):
                raise ImportError("No module named 'ray'")
            return None
    sys.meta_path.insert(0, _Block())
""")


def _py(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def test_cli_and_a_normal_run_do_not_import_ray(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import sys
        import rigbench.cli
        assert "ray" not in sys.modules, "import rigbench.cli imported ray"
        from rigbench.cli import main
        sys.argv = ["rigbench", "run", "--endpoint", sys.argv[1], "--no-sanity", "--scenarios", "chat_short",
                    "--repetitions", "1", "--warmup", "0", "--allow-untrusted", "--out", {str(tmp_path)!r}]
        try:
            main()
        except SystemExit as e:
            assert not e.code, e.code
        assert "ray" not in sys.modules, "a normal run imported ray"
        print("NO-RAY-OK")
    """)
    from rigbench.testing import EmulatorProcess

    with EmulatorProcess() as emu:
        r = _py(code, emu.url)
    assert "NO-RAY-OK" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    assert any(tmp_path.iterdir())  # the run really ran


@pytest.mark.parametrize("args", [
    ["run", "--endpoint", "http://127.0.0.1:9/v1", "--clients", "2", "--ray", "local"],
    ["run", "PLAN", "--ray", "local"],
])
def test_no_ray_installed_says_how_to_install_the_extra(tmp_path: Path, args: list[str]) -> None:
    plan = tmp_path / "p.yaml"
    plan.write_text("name: p\nrigs:\n  - {name: a, endpoint: {base_url: 'http://127.0.0.1:9/v1'}}\n")
    argv = [str(plan) if a == "PLAN" else a for a in args]
    code = _NO_RAY + "from rigbench.cli import main\nsys.argv = ['rigbench', *sys.argv[1:]]\nmain()\n"
    r = _py(code, *argv, "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    err = " ".join(r.stderr.split())
    assert "pip install 'rigbench[ray]'" in err and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()  # nothing half-made


def test_unreachable_cluster_is_a_clear_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rigbench.cli._app import app

    r = CliRunner().invoke(app, ["run", "--endpoint", "http://127.0.0.1:9/v1", "--clients", "2",
                                 "--ray", "127.0.0.1:9", "--out", str(tmp_path)])
    assert r.exit_code != 0
    assert "cannot reach the Ray cluster at 127.0.0.1:9" in str(r.exception) + r.output


def test_client_options_need_ray_an_endpoint_and_the_speed_suite() -> None:
    from rigbench.errors import UsageError
    from rigbench.scale import check_client_options

    with pytest.raises(UsageError, match="add --ray"):
        check_client_options(ray=None, clients=4, endpoint="http://h/v1", suites="speed")
    with pytest.raises(UsageError, match="pass --endpoint URL"):
        check_client_options(ray="auto", clients=4, endpoint=None, suites="speed")
    with pytest.raises(UsageError, match="add speed"):
        check_client_options(ray="auto", clients=4, endpoint="http://h/v1", suites="agent")


def test_resources_field_is_validated_with_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent("""\
        name: p
        rigs:
          - name: a
            endpoint: {base_url: "http://h:1/v1"}
            resources:
              gpus: 1
              custom: {GPU: 1}
    """))
    with pytest.raises(PlanError, match=r"p\.yaml:7: rigs\.0\.resources\.custom: 'GPU' is one of Ray's own"):
        load_plan(p)
    p.write_text(p.read_text().replace("custom: {GPU: 1}", "gpu: 1"))
    with pytest.raises(PlanError, match=r"resources\.gpu: unknown key"):
        load_plan(p)
    p.write_text(p.read_text().replace("gpu: 1", "custom: {H200: 0}"))
    with pytest.raises(PlanError, match="must ask for a positive amount"):
        load_plan(p)
    p.write_text(p.read_text().replace("custom: {H200: 0}", "custom: {H200: 1}\n      labels: {zone: a}"))
    rig = load_plan(p).plan.rigs[0]
    assert rig.resources == RigResources(gpus=1, custom={"H200": 1}, labels={"zone": "a"})


def test_resources_do_not_change_the_plans_identity(tmp_path: Path) -> None:
    """Placement is not measurement: a plan may resume on a cluster shaped differently."""
    p = tmp_path / "p.yaml"
    p.write_text("name: p\nrigs:\n  - {name: a, endpoint: {base_url: 'http://h:1/v1'}}\n")
    before = load_plan(p).config_sha256
    p.write_text("name: p\nrigs:\n  - {name: a, endpoint: {base_url: 'http://h:1/v1'}, resources: {gpus: 2}}\n")
    assert load_plan(p).config_sha256 == before


def test_swept_rigs_all_carry_their_rigs_resources(tmp_path: Path) -> None:
    from rigbench.scale._placement import rig_resources, task_options

    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent("""\
        name: p
        rigs:
          - name: "d{draft_max}"
            embedded: {}
            sweep: {draft_max: [4, 8]}
            resources: {gpus: 1, cpus: 4, custom: {H200: 1}, labels: {zone: a}}
          - {name: e, endpoint: {base_url: "http://h:1/v1"}}
    """))
    res = rig_resources(load_plan(p))
    assert set(res) == {"d4", "d8", "e"}
    assert task_options(res["d8"]) == {"num_cpus": 4, "num_gpus": 1, "resources": {"H200": 1},
                                       "label_selector": {"zone": "a"}}
    assert task_options(res["e"]) == {"num_cpus": 1, "num_gpus": 0}


def test_a_rig_no_node_can_hold_is_named_with_what_the_cluster_has() -> None:
    from rigbench.errors import UsageError
    from rigbench.scale._placement import check_placeable

    class FakeRay:  # the shape of ray.nodes()
        @staticmethod
        def nodes() -> list[dict[str, object]]:
            return [{"Alive": True, "NodeManagerAddress": "10.0.0.1", "Resources": {"CPU": 8.0, "gpu_a": 1.0},
                     "Labels": {"zone": "a", "ray.io/node-id": "x"}},
                    {"Alive": False, "NodeManagerAddress": "10.0.0.2", "Resources": {"CPU": 8.0, "H200": 1.0}}]

    check_placeable(FakeRay, "ok", RigResources(custom={"gpu_a": 1}, labels={"zone": "a"}))
    with pytest.raises(UsageError) as e:
        check_placeable(FakeRay, "big", RigResources(custom={"H200": 1}))
    msg = str(e.value)
    assert "rig 'big' asks for H200 1, which no node of the Ray cluster has" in msg
    assert "10.0.0.1: CPU 8, gpu_a 1 (labels zone=a)" in msg and "10.0.0.2" not in msg  # dead nodes do not count
    with pytest.raises(UsageError, match="label zone=b"):
        check_placeable(FakeRay, "elsewhere", RigResources(labels={"zone": "b"}))
