"""The Python examples of the README and of docs/studies.md run as written."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", ROOT / "docs" / "studies.md")
BLOCKS = [(page, code) for page in PAGES for code in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]


@pytest.mark.parametrize("page, code", BLOCKS, ids=[f"{page.stem}{i}" for i, (page, _) in enumerate(BLOCKS)])
def test_python_block_runs(page, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(page), "exec"), {"__name__": "readme"})
