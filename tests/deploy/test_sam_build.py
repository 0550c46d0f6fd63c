"""`sam build` without Docker: every resource is built by its Makefile for python3.13 on arm64.

The dependency layers are fetched by the running interpreter's pip with cross-platform options,
so this checks that nothing built for this machine (x86_64, another CPython) leaks into them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.sam_builds import shared_build

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EM_AARCH64 = 183


class _CfnLoader(yaml.SafeLoader):
    """Reads template.yaml without resolving CloudFormation tags (!Ref, !GetAtt, ...)."""


_CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _template_resources() -> dict[str, dict]:
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=_CfnLoader)
    return template["Resources"]


def _resources(kind: str) -> list[str]:
    return [
        name for name, r in _template_resources().items() if r["Type"] == f"AWS::Serverless::{kind}"
    ]


def _elf_machine(path: Path) -> int | None:
    """e_machine of a 64-bit little-endian ELF file, None when it is not one."""
    header = path.read_bytes()[:20]
    if len(header) < 20 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        return None
    return int.from_bytes(header[18:20], "little")


def _shared_objects(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and re.search(r"\.so(\.|$)", p.name)]


def _runtime_python() -> str:
    """What `make build` compiles the layers with (python3.13 on PATH or from pyenv), or ''."""
    found = subprocess.run(
        ["make", "-s", "--no-print-directory", "runtime-python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return found.stdout.strip()


RUNTIME_PYTHON = _runtime_python()


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make build`'s build (sam build, python3.13/arm64), shared with the sam local tests."""
    return shared_build(tmp_path_factory, "arm64").parent


def test_functions_ship_only_their_handlers(build_dir: Path) -> None:
    functions = _resources("Function")
    assert functions
    for name in functions:
        artifact = build_dir / name
        assert (artifact / "app.py").is_file(), name
        assert not (artifact / "Makefile").exists(), name
        assert {p.suffix for p in artifact.iterdir()} == {".py"}, sorted(artifact.iterdir())


def test_every_layer_ships_bytecode_for_the_runtime_only(build_dir: Path) -> None:
    """Lambda cannot write __pycache__ under /opt: without bytecode built for its CPython,
    every cold start compiles every module it imports."""
    layers = _resources("LayerVersion")
    assert {
        "SharedLayer",
        "DepsCoreLayer",
        "DepsAwsLayer",
        "DepsPostgresLayer",
        "DepsJwtLayer",
    } <= set(layers)
    for name in layers:
        artifact = build_dir / name
        assert (artifact / "python").is_dir(), name
        assert not (artifact / "Makefile").exists(), name
        bytecode = list(artifact.rglob("*.pyc"))
        if not RUNTIME_PYTHON:  # no python3.13 here: sources only, and nothing for another one
            assert not bytecode, name
            continue
        sources = list((artifact / "python").rglob("*.py"))
        assert sources, name
        for source in sources:
            compiled = source.parent / "__pycache__" / f"{source.stem}.cpython-313.pyc"
            assert compiled.is_file(), compiled
        for pyc in bytecode:
            assert pyc.name.endswith(".cpython-313.pyc"), pyc
            # PEP 552 flags: hash-based and unchecked, so valid whatever the mtimes in the zip
            assert int.from_bytes(pyc.read_bytes()[4:8], "little") == 0b01, pyc


def test_shared_layer_carries_the_package_data(build_dir: Path) -> None:
    package = build_dir / "SharedLayer" / "python" / "leaderboard"
    assert (package / "__init__.py").is_file()
    assert (package / "stores" / "redis" / "index" / "submit.lua").is_file()
    assert (package / "stores" / "postgres" / "migrations" / "0001_boards.sql").is_file()
    source = Path(__file__).resolve().parents[2] / "layers" / "shared" / "python" / "leaderboard"
    data = sorted(
        str(p.relative_to(source)) for p in source.rglob("*") if p.suffix in {".lua", ".sql"}
    )
    assert len(data) > 30
    assert [name for name in data if not (package / name).is_file()] == []


@pytest.mark.parametrize(
    "layer", ["DepsCoreLayer", "DepsAwsLayer", "DepsPostgresLayer", "DepsJwtLayer"]
)
def test_dependency_layer_holds_exactly_its_pins(build_dir: Path, layer: str) -> None:
    content_uri = _template_resources()[layer]["Properties"]["ContentUri"]
    pins = {}
    for line in (ROOT / content_uri / "requirements.txt").read_text().splitlines():
        if line.split("#")[0].strip():
            name, version = line.split("#")[0].strip().split("==")
            pins[re.sub(r"[-_.]+", "_", name).lower()] = version
    site = build_dir / layer / "python"
    installed = {}
    for info in site.glob("*.dist-info"):
        name, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        installed[re.sub(r"[-_.]+", "_", name).lower()] = version
    assert installed == pins


def test_core_layer_has_redis_and_powertools(build_dir: Path) -> None:
    site = build_dir / "DepsCoreLayer" / "python"
    assert (site / "redis" / "__init__.py").is_file()
    assert (site / "aws_lambda_powertools" / "__init__.py").is_file()


def test_postgres_layer_has_the_cp313_aarch64_binary(build_dir: Path) -> None:
    site = build_dir / "DepsPostgresLayer" / "python"
    modules = list((site / "psycopg_binary").glob("*.so"))
    assert any(_elf_machine(so) == EM_AARCH64 for so in modules), modules
    (wheel,) = site.glob("psycopg_binary-*.dist-info/WHEEL")
    tags = [
        line.split(":", 1)[1].strip()
        for line in wheel.read_text().splitlines()
        if line.startswith("Tag:")
    ]
    assert any(t.startswith("cp313-cp313-") and t.endswith("_aarch64") for t in tags) or any(
        "cpython-313" in so.name for so in modules
    ), (tags, modules)


def test_jwt_layer_has_pyjwt_and_the_aarch64_crypto_binding(build_dir: Path) -> None:
    """RS256 needs cryptography's compiled binding, built for Lambda's arm64 (abi3, so any
    CPython from 3.11 on), and cffi's for the runtime's CPython."""
    site = build_dir / "DepsJwtLayer" / "python"
    assert (site / "jwt" / "__init__.py").is_file()
    (binding,) = (site / "cryptography" / "hazmat" / "bindings").glob("_rust*.so")
    assert _elf_machine(binding) == EM_AARCH64, binding
    assert [so.name for so in site.glob("_cffi_backend*.so")] == [
        "_cffi_backend.cpython-313-aarch64-linux-gnu.so"
    ]


def test_no_foreign_binary_leaks_into_any_layer(build_dir: Path) -> None:
    shared_objects = [
        so for name in _resources("LayerVersion") for so in _shared_objects(build_dir / name)
    ]
    assert shared_objects  # wrapt and psycopg-binary are compiled
    wrong = [so for so in shared_objects if _elf_machine(so) != EM_AARCH64]
    assert not wrong, f"not aarch64 ELF: {wrong}"
    abi = [
        so
        for so in shared_objects
        if ".cpython-" in so.name and not so.name.endswith(".cpython-313-aarch64-linux-gnu.so")
    ]
    assert not abi, f"extension modules for another CPython or platform: {abi}"
