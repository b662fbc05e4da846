"""Shared fixtures: root detection and the project root."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI shares two cores with the link emulator: judge properties, not speed.
settings.register_profile("wirelab", deadline=None, max_examples=100)
settings.load_profile("wirelab")

ROOT = Path(__file__).resolve().parents[1]


def is_root() -> bool:
    return os.geteuid() == 0


@pytest.fixture
def project_root() -> Path:
    return ROOT


def pytest_collection_modifyitems(config, items):
    """Tests marked ``root`` are skipped, with the reason, when not root."""
    if is_root():
        return
    skip = pytest.mark.skip(reason="needs root (namespaces, qdiscs): run the suite with sudo")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
