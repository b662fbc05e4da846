"""The kit's shape: same dependencies for pip and conda, a small public API, layers respected."""
import ast
import re
from pathlib import Path

import wirelab

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names that differ from PyPI's, and conda-only entries.
CONDA_ONLY = {"python", "pip", "wireshark", "iperf", "bubblewrap"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def pyproject_packages() -> set[str]:
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        deps += extra
    return {_name(d) for d in deps}


def conda_packages() -> set[str]:
    names = set()
    text = (ROOT / "environment.yml").read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        match = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+)", line)
        if match and not line.strip().startswith("- -e"):
            names.add(_name(match.group(1)))
    return names - CONDA_ONLY


def test_environment_yml_and_pyproject_declare_the_same_packages():
    assert conda_packages() == pyproject_packages()


def test_public_api_is_exported():
    for name in wirelab.__all__:
        assert hasattr(wirelab, name), name


LAYERS = ["model", "transfer", "link", "capture", "experiment", "grade", "viz", "cli"]


def test_imports_only_point_down_the_layers():
    """model → transfer → link → capture → experiment → grade → viz → cli (style.md)."""
    lib = ROOT / "lib" / "wirelab"
    for layer_index, layer in enumerate(LAYERS):
        paths = list((lib / layer).rglob("*.py")) if (lib / layer).is_dir() else \
            [p for p in [lib / f"{layer}.py"] if p.exists()]
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.level:
                    target = node.module.split(".")[0] if node.level >= 2 or path.parent == lib else None
                    if node.level >= 2 or (path.parent == lib and node.level == 1):
                        if target in LAYERS:
                            assert LAYERS.index(target) <= layer_index, f"{path} imports {target}"


def test_model_does_no_io():
    for path in (ROOT / "lib" / "wirelab" / "model").rglob("*.py"):
        text = path.read_text()
        for banned in ("import socket", "import subprocess", "open(", "import os"):
            assert banned not in text, f"{path} uses {banned}"
