"""dpcore.synthesis.prefill: the owner-only guess of a labelled table's declaration."""

from __future__ import annotations

import pandas as pd
import pytest

from dpcore.data.table.schema import schema_from_dict
from dpcore.errors import DataError
from dpcore.synthesis.prefill import prefill_table


def test_prefill_table_guesses_bounds_levels_classes_and_notes_stray_texts():
    frame = pd.DataFrame({"y": ["a", "b", "a", "b"], "x": ["1", "2", "3", "oops"],
                          "n": ["1.5", "2", "3", "4"], "c": ["u", "v", "u", "u"]})
    guess = prefill_table(frame, "y", name="t", file="t.csv")
    assert guess.classes == ("a", "b")
    assert guess.features == ({"name": "n", "type": "numeric", "bounds": [1.0, 4.0]},
                              {"name": "c", "type": "categorical", "levels": ["u", "v"]})
    assert [n.column for n in guess.notes] == ["x"] and "'oops'" in guess.notes[0].reason
    assert guess.proposed == ({"name": "x", "type": "categorical",
                               "levels": ["1", "2", "3", "oops"]},)
    with pytest.raises(DataError, match="label column is not in the table"):
        prefill_table(frame, "label", name="t", file="t.csv")



def test_the_guess_is_a_valid_declaration_once_named():
    frame = pd.DataFrame({"y": ["0", "1", "1"], "age": ["21", "35", "70"],
                          "sex": ["F", "M", "F"]})
    guess = prefill_table(frame, "y", name="t")
    schema = schema_from_dict({"name": "t", "label": {"name": "y", "classes":
                                                       list(guess.classes)},
                               "features": list(guess.features)})
    assert schema.feature_names == ("age", "sex")
    assert guess.features[0]["bounds"][0] <= 21 and guess.features[0]["bounds"][1] >= 70
    assert guess.features[0]["decimals"] == 0


@pytest.mark.parametrize("frame, needle", [
    (pd.DataFrame({"y": []}), "no data rows"),
    (pd.DataFrame({"y": ["a", "b"]}), "no column besides the label"),
    (pd.DataFrame({"y": ["a", ""], "x": ["1", "2"]}), "row 2: missing label value"),
])
def test_bad_tables_are_refused(frame, needle):
    with pytest.raises(DataError, match=needle):
        prefill_table(frame, "y", name="t", file="t.csv")


def test_a_feature_with_an_empty_cell_is_left_out_naming_its_line(tmp_path):
    from dpcore.data.loading import read_table

    path = tmp_path / "t.csv"
    path.write_bytes(b"age,city,score,label\n30,Oslo,1,y\n,Bergen,2,n\n41,,3,y\n")
    guess = prefill_table(read_table(path, label="t.csv"), "label", name="t", file="t.csv")
    assert [f["name"] for f in guess.features] == ["score"]
    reasons = {n.column: n.reason for n in guess.notes}
    assert reasons["age"].startswith("empty cell at line 3 (1 in all)")
    assert reasons["city"].startswith("empty cell at line 4")
    assert all(n.proposal is None for n in guess.notes if n.column in ("age", "city"))
    assert guess.proposed == ()
