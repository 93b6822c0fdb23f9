"""dpcore.experiments.report: the one way the three harnesses write metrics.json and report.md."""

from __future__ import annotations

import json
import math

import numpy as np

from dpcore.experiments.report import jsonable, write_report


def test_jsonable_makes_strict_json_of_what_the_harnesses_compute():
    value = {1: (np.float64(0.5), np.int64(3)), "nan": math.nan, "inf": [-math.inf, 2.0],
             "nested": {"x": np.float32(np.inf)}}
    out = jsonable(value)
    assert out == {"1": [0.5, 3], "nan": None, "inf": [None, 2.0], "nested": {"x": None}}
    assert type(out["1"][0]) is float and type(out["1"][1]) is int
    json.dumps(out, allow_nan=False)  # raises on NaN/Infinity


def test_write_report_writes_both_files(tmp_path):
    write_report(tmp_path, {"f": math.nan, "runs": np.int64(2)}, "# Report\n\nε = 1\n")
    assert json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8")) == {
        "f": None, "runs": 2}
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "# Report\n\nε = 1\n"
