import pytest

from kmt_ref.plotting.tables import Table


def test_table_renders_markdown_and_text():
    t = Table(["a", "bb"], [[1, "x|y"], ["long cell", 2.5]])
    assert t._repr_markdown_().splitlines() == ["| a | bb |", "|---|---|", "| 1 | x\\|y |", "| long cell | 2.5 |"]
    assert str(t).splitlines() == ["a          bb", "1          x|y", "long cell  2.5"]


def test_table_refuses_ragged_rows():
    with pytest.raises(ValueError, match="rows=\\[1\\]"):
        Table(["a", "b"], [[1, 2], [3]])
