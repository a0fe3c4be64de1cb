"""Every tool the README names is an installed console script that loads."""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_tools_are_installed_console_scripts():
    named = set(re.findall(r"\bplayground-[a-z]+\b", README.read_text()))
    installed = {ep.name: ep for ep in entry_points(group="console_scripts")
                 if ep.name.startswith("playground-")}
    assert named and named <= set(installed), sorted(named - set(installed))
    for ep in installed.values():
        assert callable(ep.load()), ep.name
