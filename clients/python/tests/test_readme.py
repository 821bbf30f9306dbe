"""The READMEs' Python examples run as written.

Each README's ```python blocks run in order, in one namespace, as a reader
would in one Python session, against a fresh server: the address
``127.0.0.1:8474`` they name becomes the test server's. Nothing else is
added: the examples define what they call. From the top-level README only
the "## Python" section is taken.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import Server

HERE = Path(__file__).resolve().parent
CLIENT_README = HERE.parent / "README.md"
TOP_README = HERE.parents[2] / "README.md"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every ```python block."""
    blocks, lines = [], text.splitlines()
    start: int | None = None
    for n, line in enumerate(lines, 1):
        if start is None and line.strip() == "```python":
            start = n
        elif start is not None and line.strip() == "```":
            blocks.append((start + 1, "\n".join(lines[start:n - 1])))
            start = None
    return blocks


def section(text: str, heading: str) -> tuple[int, str]:
    """The section under ``heading`` (to the next ``## ``), and its first line."""
    match = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^## )", text, re.M | re.S)
    assert match, f"no {heading!r} section"
    return text[: match.start()].count("\n"), match.group(0)


def run_blocks(path: Path, text: str, offset: int, server: Server) -> int:
    namespace: dict[str, object] = {"__name__": "__readme__"}
    blocks = python_blocks(text)
    for line, code in blocks:
        code = code.replace("127.0.0.1:8474", f"127.0.0.1:{server.port}")
        # Line numbers in tracebacks are the README's own.
        compiled = compile("\n" * (offset + line - 1) + code, str(path), "exec")
        exec(compiled, namespace)
    return len(blocks)


def test_the_client_readme_examples_run_as_written(own_server: Server) -> None:
    assert run_blocks(CLIENT_README, CLIENT_README.read_text(), 0, own_server) >= 9


def test_the_python_section_of_the_top_readme_runs_as_written(own_server: Server) -> None:
    if not TOP_README.exists():
        pytest.skip("the package is tested outside its repository")
    offset, text = section(TOP_README.read_text(), "## Python")
    assert run_blocks(TOP_README, text, offset, own_server) == 2
