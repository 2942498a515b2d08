"""The claims of the source papers, decided on our studies' cells: how each is stated
(``statements``), the second protocol (its study presets, settings, gates, measures and tests),
the evidence that needs no training (the probes) or no study (claim 3's cost rounds, claim 8's
adaptations), the verdicts and the claims report (``oversmooth claims``).

Built on ``oversmooth.study`` (grids, executors, cells, results and the study report), which
knows nothing of it.
"""
