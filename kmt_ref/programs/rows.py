"""A row of ``verify``'s tables: one construction against the algorithm it should equal, or one proof."""

from dataclasses import dataclass

__all__ = ["Row"]


@dataclass
class Row:
    """One comparison: a construction on a data set against the algorithm it should equal.

    ``expect`` is the row's kind: ``True`` a claim that must hold, ``False``
    a documented failure, ``None`` a measurement reported without a claim
    (``holds`` then says whether the stated condition is met, or is ``None``
    when the row only shows a difference).
    ``parameter``/``value`` name the construction's parameter (``gamma``,
    ``beta``, the trimming ``threshold``, ...).
    """

    construction: str
    data: str
    value: float
    claim: str
    max_center_dev: float
    log_obj_gap: float
    holds: bool | None
    expect: bool | None
    parameter: str = "gamma"
    #: ``"proof"`` for an identity proved by computer algebra (no deviation to show), else ``"run"``.
    kind: str = "run"

    @property
    def ok(self):
        """False only when a claim that should hold does not."""
        return self.holds or self.expect is not True
