"""Every query command's output, in every --format, byte for byte against tests/golden/.

A difference is a change in what users and their scripts read. When it is meant,
regenerate with `.venv/bin/python -m tests.golden` and commit the reviewed diff.
"""

from __future__ import annotations

import difflib

import pytest

from tests import golden


@pytest.fixture(scope="module")
def golden_db(tmp_path_factory):
    return golden.build_store(tmp_path_factory.mktemp("golden") / "golden.duckdb")


def _same(expected: str, actual: str, name: str) -> None:
    if expected != actual:
        diff = "".join(
            list(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    actual.splitlines(keepends=True),
                    "golden",
                    "now",
                )
            )[:60]
        )
        pytest.fail(f"{name} differs from its golden file:\n{diff}", pytrace=False)


@pytest.mark.parametrize("fmt", golden.FORMATS)
@pytest.mark.parametrize("name", list(golden.COMMANDS))
def test_command_output_equals_its_golden_file(golden_db, name, fmt):
    path = golden.golden_path(name, fmt)
    _same(path.read_text(encoding="utf-8"), golden.output(golden_db, name, fmt), path.name)


def test_incident_context_equals_its_golden_file(golden_db):
    path = golden.GOLDEN / "incident-context.json"
    _same(path.read_text(encoding="utf-8"), golden.incident_context(golden_db), path.name)


def test_every_golden_file_belongs_to_a_command():
    wanted = {golden.golden_path(n, f) for n in golden.COMMANDS for f in golden.FORMATS}
    wanted.add(golden.GOLDEN / "incident-context.json")
    assert set(golden.GOLDEN.glob("*.*")) - {golden.GOLDEN / "README.md"} == wanted


def test_the_readme_field_table_is_generated_from_the_column_specs():
    text = golden.README.read_text(encoding="utf-8")
    _same(golden.readme_with_fields(text), text, "README.md's field table")
