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


def conda_packages(path: Path = ROOT / "environment.yml") -> set[str]:
    names = set()
    text = path.read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        match = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+)", line)
        if match and not line.strip().startswith("- -e"):
            names.add(_name(match.group(1)))
    return names - CONDA_ONLY


def test_environment_yml_and_pyproject_declare_the_same_packages():
    assert conda_packages() == pyproject_packages()


def test_the_course_image_has_the_same_environment_and_only_packages_the_project_installs():
    """.binder/ (repo2docker reads only it once it exists): the same conda packages as the top-level
    environment.yml, wirelab installed by postBuild instead of `pip: -e .`, apt packages the Makefile's."""
    binder = ROOT / ".binder"
    assert conda_packages(binder / "environment.yml") == conda_packages()
    assert "-e ." not in (binder / "environment.yml").read_text().split("dependencies:", 1)[1]
    assert "pip install --no-deps --quiet -e ." in (binder / "postBuild").read_text()
    makefile = re.search(r"^APT_PACKAGES := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    apt = [line.strip() for line in (binder / "apt.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
    assert apt and set(apt) <= set(makefile)
    assert not (binder / "Dockerfile").exists() and not (ROOT / "Dockerfile").exists()   # repo2docker would use it


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


def test_the_grader_dockerfile_installs_what_the_project_installs_and_copies_what_exists():
    """.ci/grader/Dockerfile (no docker engine in CI: its parts are checked instead)."""
    text = (ROOT / ".ci" / "grader" / "Dockerfile").read_text()
    makefile = re.search(r"^APT_PACKAGES := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    install = re.search(r"apt-get install -y -qq --no-install-recommends ((?:[^\\&]|\\\n)+)", text).group(1)
    packages = set(install.replace("\\", " ").split()) - {"python3", "python3-venv"}
    assert packages and packages <= set(makefile) and {"bubblewrap", "iproute2"} <= packages
    for line in text.splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
