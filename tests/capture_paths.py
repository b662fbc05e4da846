"""The capture reader's two paths for tests: numpy (the reference) and compiled (numba).

``use_path(name, monkeypatch)`` makes every read that follows take that path, whatever the
file's size (the compiled path is otherwise used for windows of 8 MB or more only). The
``reader_path`` fixture runs a test once on each path.
"""
from __future__ import annotations

import pytest

import wirelab.capture.reader.jit as jit

PATHS = ["numpy", "compiled"]


def use_path(name: str, monkeypatch) -> None:
    if name == "numpy":
        monkeypatch.setenv(jit.ENV_OFF, "1")
        return
    pytest.importorskip("numba")
    monkeypatch.delenv(jit.ENV_OFF, raising=False)
    monkeypatch.setattr(jit, "MIN_BYTES", 0)
    assert jit.kernels(0) is not None, jit.status()


@pytest.fixture(params=PATHS)
def reader_path(request, monkeypatch) -> str:
    use_path(request.param, monkeypatch)
    return request.param
