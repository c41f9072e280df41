"""The README's notebook map and the course list agree with the notebooks actually present."""
from __future__ import annotations

import re
from pathlib import Path

from trnsim.course.course_map import NOTEBOOKS, course_map_markdown, notebook_filename

REPO = Path(__file__).resolve().parents[1]


def _readme_rows() -> dict[str, str]:
    rows = {}
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| (\d\d[a-z]?) \| (.*) \| (ready|planned) \|$", line)
        if m:
            rows[m.group(1)] = m.group(3)
    return rows


def test_readme_lists_every_notebook_with_true_status():
    rows = _readme_rows()
    assert sorted(rows) == [n for n, _, _ in NOTEBOOKS]
    for number, slug, _ in NOTEBOOKS:
        present = (REPO / "notebooks" / notebook_filename(number, slug)).is_file()
        assert rows[number] == ("ready" if present else "planned"), number


def test_every_notebook_file_is_in_the_course_list():
    known = {notebook_filename(n, s) for n, s, _ in NOTEBOOKS}
    for nb in (REPO / "notebooks").glob("*.ipynb"):
        assert nb.name in known, nb.name


def test_course_map_links_only_present_notebooks(tmp_path):
    (tmp_path / "00_start_here.ipynb").write_text("{}")
    text = course_map_markdown(tmp_path)
    assert "[Start here: tour, environment check, widgets and checkers](00_start_here.ipynb) | ready" in text
    assert "| 13 | Sovereign deployment in ap-southeast-5 (Malaysia) | planned |" in text
