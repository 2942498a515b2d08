"""The two writers every report shares: Markdown tables and strict JSON, against hand-written text."""

import json
import math

from oversmooth.utils.json_files import finite, json_text
from oversmooth.utils.markdown import markdown_table


def test_a_markdown_table_is_the_one_written_by_hand():
    table = markdown_table(["arm", "n", "score"], [["control", 3, "0.91 ± 0.01"], ["neutreno", 12, "–"]])
    assert table == ("| arm | n | score |\n|---|---|---|\n| control | 3 | 0.91 ± 0.01 |\n| neutreno | 12 | – |")


def test_a_table_without_rows_is_its_header_and_a_pipe_stays_in_its_cell():
    assert markdown_table(["a"], []) == "| a |\n|---|"
    assert markdown_table(["command"], [["`ls | wc`"]]) == "| command |\n|---|\n| `ls \\| wc` |"


def test_strict_json_writes_nan_and_infinities_as_null_at_any_depth():
    value = {"p": math.nan, "ci": (-math.inf, 0.5), "rows": [{"x": math.inf, "n": 2}], "name": "nan"}
    assert json_text(value) == '{"p": null, "ci": [null, 0.5], "rows": [{"x": null, "n": 2}], "name": "nan"}'
    assert json.loads(json_text(value, indent=1)) == finite(value)
    assert json_text([1.5, True, None], indent=1) == "[\n 1.5,\n true,\n null\n]"
