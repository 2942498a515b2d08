"""Claim 4's post-norm failure screen, read by the rule registered before it ran
(docs/registrations/fourth-step.md, section 1): per recipe and depth, post- and pre-norm softmax's
final validation accuracy, whether post-norm *fails* (diverged, below 20 %, or at least 5 pp
below pre-norm) and pre-norm *trains* (not diverged, at least 50 %), and the *candidates*: the
recipes where both hold at depth 96, in the registered order (the preset's).

>>> post, pre = ScreenArm("completed", 0.101, 0.9), ScreenArm("completed", 0.62, 0.4)
>>> row = ScreenRow("w32-lr0.004-wu0-clip0", 96, post=post, pre=pre)
>>> row.post_fails, row.pre_trains, row.deficit_pp
(True, True, 51.9)
"""

from __future__ import annotations

from dataclasses import dataclass

from oversmooth.claims.presets import SCREEN_RECIPES
from oversmooth.study.results import CellResult
from oversmooth.utils.markdown import markdown_table

STUDY = "postnorm-screen"
CHANCE_BAR = 0.20  # below it a 10-class model is at chance
K_PP = 5.0  # post-norm fails at this deficit to pre-norm (pp of validation accuracy) or more
TRAINS_BAR = 0.50  # pre-norm trains at this validation accuracy or more
DEEP = 96  # the depth whose rows make a recipe a candidate


@dataclass(frozen=True)
class ScreenArm:
    """One finished cell: its status, final validation accuracy and last-layer cos_sim of the probe."""

    status: str  # completed | diverged
    val_accuracy: float | None  # None: diverged before its first evaluation
    cos_sim: float | None


@dataclass(frozen=True)
class ScreenRow:
    """One recipe at one depth; an arm is None until its cell has finished."""

    recipe: str
    depth: int
    post: ScreenArm | None
    pre: ScreenArm | None

    @property
    def deficit_pp(self) -> float | None:
        """Pre- minus post-norm validation accuracy in pp (None unless both have one)."""
        if self.post is None or self.pre is None or None in (self.post.val_accuracy, self.pre.val_accuracy):
            return None
        return round(100 * (self.pre.val_accuracy - self.post.val_accuracy), 2)

    @property
    def post_fails(self) -> bool | None:
        """Diverged, at chance, or ``K_PP`` below pre-norm; None while undecidable."""
        if self.post is None:
            return None
        if self.post.status == "diverged" or (self.post.val_accuracy or 0.0) < CHANCE_BAR:
            return True
        return None if self.deficit_pp is None else self.deficit_pp >= K_PP

    @property
    def pre_trains(self) -> bool | None:
        if self.pre is None:
            return None
        return self.pre.status != "diverged" and (self.pre.val_accuracy or 0.0) >= TRAINS_BAR


def arm_of(cell: CellResult) -> ScreenArm | None:
    """A finished cell (completed or diverged) as the screen reads it; None before it finishes."""
    if cell.status not in ("completed", "diverged"):
        return None
    val = cell.epochs[-1]["val"]["accuracy"] if cell.epochs else None
    layers = cell.final_layers
    return ScreenArm(cell.status, val, layers[-1]["cos_sim"] if layers else None)


def screen_rows(cells: list[CellResult]) -> list[ScreenRow]:
    """Every (recipe, depth) of the screen in the registered order, from the screen's softmax cells."""
    found = {(c.recipe, c.depth, c.norm): arm_of(c) for c in cells if c.study == STUDY}
    depths = sorted({depth for _, depth, _ in found} | {DEEP})
    return [
        ScreenRow(r.label, depth, found.get((r.label, depth, "post")), found.get((r.label, depth, "pre")))
        for r in SCREEN_RECIPES
        for depth in depths
    ]


def candidates(rows: list[ScreenRow]) -> list[str]:
    """The recipes where, at depth ``DEEP``, post-norm fails and pre-norm trains, in the registered order."""
    return [r.recipe for r in rows if r.depth == DEEP and r.post_fails and r.pre_trains]


def _cell(arm: ScreenArm | None) -> tuple[str, str]:
    if arm is None:
        return "not yet", ""
    accuracy = "–" if arm.val_accuracy is None else f"{100 * arm.val_accuracy:.2f} %"
    cos = "" if arm.cos_sim is None else f"{arm.cos_sim:.3f}"
    return (f"{accuracy} (diverged)" if arm.status == "diverged" else accuracy), cos


def _yes_no(value: bool | None) -> str:
    return "–" if value is None else ("**yes**" if value else "no")


def screen_table(rows: list[ScreenRow]) -> str:
    """The screen as a Markdown table, one row per recipe and depth."""
    header = ["recipe", "depth", "post-norm val acc", "pre-norm val acc", "pre − post (pp)", "post cos_sim"]
    header += ["pre cos_sim", "post fails", "pre trains"]
    return markdown_table(header, map(_screen_line, rows))


def _screen_line(r: ScreenRow) -> list[str]:
    """A recipe and depth's cells in ``screen_table``."""
    (post, post_cos), (pre, pre_cos) = _cell(r.post), _cell(r.pre)
    deficit = "" if r.deficit_pp is None else f"{r.deficit_pp:+.2f}"
    return [r.recipe, r.depth, post, pre, deficit, post_cos, pre_cos, _yes_no(r.post_fails), _yes_no(r.pre_trains)]


def screen_sentence(rows: list[ScreenRow]) -> str:
    """Where the screen stands, in a clause for the report's opening."""
    deep = [r for r in rows if r.depth == DEEP]
    found = candidates(rows)
    if found:
        return f"the registered screen found a recipe where it fails at depth {DEEP} while pre-norm trains ({found[0]})"
    finished = sum(arm is not None for r in rows for arm in (r.post, r.pre))
    if finished < 2 * len(rows):
        return f"the registered screen has finished {finished} of its {2 * len(rows)} cells, no candidate yet"
    neither = sum(bool(r.post_fails) and not r.pre_trains for r in deep)
    return (
        f"the registered screen found no recipe at depth {DEEP} where post-norm fails while pre-norm trains "
        f"(in {neither} of {len(deep)} recipes post-norm fails and pre-norm stays below {100 * TRAINS_BAR:g} % too)"
    )
