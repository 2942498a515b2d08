"""Theory simulation against the spectral prediction and closed forms."""

import math
from collections import Counter

import pytest
import torch

from oversmooth.cli import main
from oversmooth.metrics import t_div, t_sim
from oversmooth.spectra import predict_dynamics
from oversmooth.theory import (
    LayerConfig,
    Setup,
    fitted_rate,
    matrix_with_spectrum,
    observe,
    random_attention,
    run_preset,
    simulate,
)


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny matrices: intra-op threads cost ~30x on a loaded 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_simulated_verdict_matches_prediction_on_random_draws():
    g = torch.Generator().manual_seed(0)
    draws, n, d, depth = 500, 6, 4, 300
    temperature = 0.5 + 3.5 * torch.rand(draws, generator=g, dtype=torch.float64)
    a = random_attention(n, g, batch=draws, temperature=temperature)
    hs = []
    for b in range(draws):  # generic, all-positive and all-negative spectra in turn
        if b % 3 == 0:
            hs.append(1.5 * torch.randn(d, d, generator=g, dtype=torch.float64) / d**0.5)
        else:
            lam = 0.05 + 0.95 * torch.rand(d, generator=g, dtype=torch.float64)
            hs.append(matrix_with_spectrum(lam if b % 3 == 1 else -lam, g))
    h = torch.stack(hs)
    states = simulate(torch.randn(draws, n, d, generator=g, dtype=torch.float64), h, depth, attention=a).states
    outcome = observe(states)
    agree, kinds = [], Counter()
    for b in range(draws):
        p = predict_dynamics(a[b], torch.linalg.eigvals(h[b]))
        turn = abs(math.atan2(p.dominant.imag, p.dominant.real))
        if p.separation > 0.95 or (p.rotates and min(turn, math.pi - turn) < 0.1):
            continue  # spectrum not well separated within this depth
        kinds[(p.mode, "rotation" if p.rotates else "angle", p.limit_rank)] += 1
        agree.append(
            p.mode == outcome.mode[b]
            and p.angle_converges == bool(outcome.angle_converges[b])
            and p.rank_collapse == bool(outcome.rank_collapse[b])
        )
    rate = sum(agree) / len(agree)
    print(f"prediction matches simulation in {rate:.1%} of {len(agree)} well-separated draws; {dict(kinds)}")
    assert len(agree) >= 200 and len({k[0] for k in kinds}) == 2 and len({k[1] for k in kinds}) == 2
    assert rate >= 0.99


def test_pure_attention_escalation_rate_is_minus_two_log_lambda2():
    # A = (1 - s) I + s/n 11^T keeps the mean token and scales the centred part by 1 - s, so the
    # odds t_div / t_sim shrink by exactly (1 - s)^2 per layer.
    n, s = 5, 0.4
    a = (1 - s) * torch.eye(n, dtype=torch.float64) + s / n
    x0 = torch.randn(2, n, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    states = simulate(x0, torch.eye(3, dtype=torch.float64), 20, LayerConfig(residual=False), attention=a).states
    curve = torch.stack([t_div(x) for x in states])
    odds = curve / torch.stack([t_sim(x) for x in states])
    assert torch.allclose(odds[1:] / odds[:-1], torch.full_like(odds[1:], (1 - s) ** 2), rtol=1e-6)
    assert torch.allclose(fitted_rate(curve), torch.full((2,), -2 * math.log(1 - s), dtype=torch.float64), rtol=0.05)


def test_full_deescalation_keeps_the_mean_token_at_zero():
    g = torch.Generator().manual_seed(2)
    a = random_attention(6, g, temperature=2.0)[0]
    x0 = torch.randn(3, 6, 4, generator=g, dtype=torch.float64)
    escalated = simulate(x0, torch.eye(4, dtype=torch.float64), 30, LayerConfig(residual=False), attention=a)
    held = simulate(x0, torch.eye(4, dtype=torch.float64), 30, LayerConfig(residual=False, tau=1.0), attention=a)
    assert bool((t_sim(escalated.states[-1]) > 0.999).all())
    assert float(t_sim(torch.cat(held.states[1:])).max()) < 1e-20


def test_presets_agree_and_lnflip_flips():
    results = {
        r.case.label: r
        for name in ("smoothing", "sharpening", "rotating", "lnflip")
        for r in run_preset(name, Setup(depth=64, tokens=6, dim=5, sequences=2))
    }
    assert all(all(r.agreement()) for r in results.values())
    assert results["pre-LN, gamma=+1"].predictions[0].mode == "smoothing"
    assert results["pre-LN, gamma=-1"].predictions[0].mode == "sharpening"
    assert results["complex dominant pair"].predictions[0].rotates


def test_cli_writes_table_plots_and_csv(tmp_path, capsys):
    out = tmp_path / "theory"
    assert main(["theory", "lnflip", "--depth", "16", "--tokens", "5", "--dim", "4", "--out", str(out)]) == 0
    assert {"lnflip.png", "predictions.csv", "trajectories.csv"} <= {p.name for p in out.iterdir()}
    assert "pre-LN, gamma=-1" in capsys.readouterr().out
    assert main(["theory", "smoothing", "--dim", "1", "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()
    capsys.readouterr()
    assert main(["theory", "escalation", "--dim", "0", "--out", str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err == "oversmooth theory: error: --dim must be at least 1, got 0\n"
    assert not (tmp_path / "bad").exists()
