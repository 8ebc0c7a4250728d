import pytest

pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
from kmt_ref.plotting.tables import Table  # noqa: E402


def test_a_cell_that_rounds_to_zero_shows_no_minus():
    table = Table(["gap"], [[f"{-1e-9:+.3f}"], [f"{-1e-9:.2f}"], [f"{-2e-3:.3f}"], ["normal -0.000; cauchy +0.073"]])
    assert [row[0] for row in table.rows] == ["0.000", "0.00", "-0.002", "normal  0.000; cauchy +0.073"]
    assert "\u2011" not in table._repr_markdown_().split("\n")[2]  # no minus left to make non-breaking


def test_table_renders_markdown_and_text():
    t = Table(["a", "bb"], [[1, "x|y"], ["long cell", 2.5]])
    assert t._repr_markdown_().splitlines() == ["| a | bb |", "|---|---|", "| 1 | x\\|y |", "| long cell | 2.5 |"]
    assert str(t).splitlines() == ["a          bb", "1          x|y", "long cell  2.5"]


def test_table_refuses_ragged_rows():
    with pytest.raises(ValueError, match="rows=\\[1\\]"):
        Table(["a", "b"], [[1, 2], [3]])


def test_numbers_in_a_rendered_table_cannot_break_at_their_hyphens():
    from kmt_ref.plotting.tables import NON_BREAKING_HYPHEN as NB

    md = Table(["within 1e-3", "k-means"], [["-0.25 (seeds 0-9)", "data-block"]])._repr_markdown_()
    assert f"1e{NB}3" in md and f"{NB}0.25" in md and f"0{NB}9" in md
    assert "k-means" in md and "data-block" in md  # words keep their ordinary hyphens
    assert "1e-3" in str(Table(["within 1e-3"], [["x"]]))  # plain text is unchanged
