"""Claim 4's post-norm failure screen read by its registered rule (docs/registrations/fourth-step.md,
section 1), on hand-made cells whose verdicts are worked out by hand below."""

from oversmooth.claims.postnorm_screen import STUDY, candidates, screen_rows, screen_table
from oversmooth.claims.presets import CLAIMS_PRESETS, SCREEN_RECIPES
from oversmooth.study.results import CellResult

FIRST, SECOND, THIRD = (r.label for r in SCREEN_RECIPES[:3])


def cell(recipe: str, norm: str, depth: int, val: float, status: str = "completed") -> CellResult:
    epoch = {"epoch": 2, "val": {"accuracy": val, "loss": 1.0}, "layers": [{"layer": 0, "cos_sim": 0.5}]}
    return CellResult(
        study=STUDY, name=f"{recipe}-{norm}-d{depth}", model="vit", task="fmnist", norm=norm, depth=depth,
        label=f"{recipe}:softmax", method="softmax", knobs={}, seed=0, status=status, epochs=[epoch], results=None,
        recipe=recipe,
    )  # fmt: skip


def test_the_rule_by_hand():
    cells = [
        # FIRST: post 6 pp below pre (>= 5: fails), pre at 55 % (>= 50: trains) -> a candidate
        cell(FIRST, "post", 96, 0.49), cell(FIRST, "pre", 96, 0.55),
        # SECOND: post 4.9 pp below (not failing), pre trains -> not a candidate
        cell(SECOND, "post", 96, 0.601), cell(SECOND, "pre", 96, 0.65),
        # THIRD: post diverged (fails), pre at 49 % (does not train) -> not a candidate
        cell(THIRD, "post", 96, 0.3, status="diverged"), cell(THIRD, "pre", 96, 0.49),
        # a depth-48 row never makes a candidate
        cell(SECOND, "post", 48, 0.10), cell(SECOND, "pre", 48, 0.70),
    ]  # fmt: skip
    rows = {(r.recipe, r.depth): r for r in screen_rows(cells)}
    assert (rows[FIRST, 96].post_fails, rows[FIRST, 96].pre_trains, rows[FIRST, 96].deficit_pp) == (True, True, 6.0)
    assert (rows[SECOND, 96].post_fails, rows[SECOND, 96].pre_trains) == (False, True)
    assert (rows[THIRD, 96].post_fails, rows[THIRD, 96].pre_trains) == (True, False)
    assert (rows[SECOND, 48].post_fails, rows[SECOND, 48].pre_trains) == (True, True)
    assert candidates(list(rows.values())) == [FIRST]
    assert rows[FIRST, 48].post is None and rows[FIRST, 48].post_fails is None


def test_at_chance_fails_without_a_pre_norm_cell_and_order_is_the_presets():
    rows = screen_rows([cell(THIRD, "post", 96, 0.19), cell(FIRST, "post", 96, 0.2)])
    by = {(r.recipe, r.depth): r for r in rows}
    assert by[THIRD, 96].post_fails is True  # below 20 %: at chance, whatever pre-norm does
    assert by[FIRST, 96].post_fails is None  # 20 % is not below the bar; no pre-norm cell to compare
    assert [r.recipe for r in rows if r.depth == 96] == [r.label for r in SCREEN_RECIPES]
    assert "| 19.00 % |" in screen_table(rows)


def test_the_preset_is_the_registered_grid():
    study = CLAIMS_PRESETS[STUDY]
    cells = study.cells()
    assert (
        len(cells) == 16 * 2 * 2 and {c.depth for c in cells} == {48, 96} and {c.norm for c in cells} == {"post", "pre"}
    )
    specs = {(c.spec().width, c.spec().lr, c.spec().warmup, c.spec().grad_clip) for c in cells}
    assert specs == {
        (w, lr, wu, clip) for w in (32, 64) for lr in (4e-3, 8e-3) for wu in (0.05, 0.0) for clip in (1.0, 0.0)
    }
    assert {c.spec().epochs for c in cells} == {2} and {c.spec().patch_size for c in cells} == {7}
    widths = [c.spec().width for c in cells]
    assert widths == sorted(widths)  # the registered order: cost first


def confirm_cell(norm: str, seed: int, vals: list[float], status: str = "completed") -> CellResult:
    """A ``postnorm-confirm`` cell whose validation accuracy runs through ``vals``, one per epoch."""
    epochs = [{"epoch": e + 1, "val": {"accuracy": v, "loss": 1.0 - 0.01 * e}} for e, v in enumerate(vals)]
    return CellResult(
        study="postnorm-confirm", name=f"{norm}-s{seed}", model="vit", task="fmnist", norm=norm, depth=96,
        label="softmax", method="softmax", knobs={}, seed=seed, status=status, epochs=epochs, results=None,
    )  # fmt: skip


PLATEAU = [0.80, 0.84, 0.85, 0.85, 0.851, 0.85]  # within 0.5 pp of the best of the last 5
DROPPED = [0.80, 0.84, 0.86, 0.87, 0.88, 0.86]  # ends 2 pp below the best of its last 5: gate (a) fails
CHANCE = [0.10] * 6


def test_the_confirmation_by_its_registered_rule():
    from oversmooth.claims.postnorm_confirm import confirm_section, confirm_seeds, confirmed

    def verdict(*cells):
        return confirmed(confirm_seeds(list(cells)))

    # seed 0 fails at chance, pre-norm plateaus above 78.89 % on both seeds -> confirmed
    assert verdict(*(confirm_cell("pre", s, PLATEAU) for s in (0, 1)), confirm_cell("post", 0, CHANCE),
                   confirm_cell("post", 1, PLATEAU)) is True  # fmt: skip
    # post-norm trains on both seeds -> not confirmed
    assert verdict(*(confirm_cell(n, s, PLATEAU) for n in ("pre", "post") for s in (0, 1))) is False
    # pre-norm below 78.89 % on seed 1 -> not confirmed, though post fails on both
    low = [v - 0.07 for v in PLATEAU]
    assert verdict(confirm_cell("pre", 0, PLATEAU), confirm_cell("pre", 1, low),
                   *(confirm_cell("post", s, CHANCE) for s in (0, 1))) is False  # fmt: skip
    # pre-norm ends 2 pp below its best with its loss still falling (gate (a) fails) -> not confirmed
    assert verdict(confirm_cell("pre", 0, PLATEAU), confirm_cell("pre", 1, DROPPED),
                   *(confirm_cell("post", s, CHANCE) for s in (0, 1))) is False  # fmt: skip
    # a pre-norm cell still running -> pending; the section says so
    cells = [confirm_cell("pre", 0, PLATEAU), confirm_cell("post", 0, CHANCE)]
    assert verdict(*cells) is None and "pending" in confirm_section(cells)[0]
