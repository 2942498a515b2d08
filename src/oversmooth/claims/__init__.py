"""The claims of the source papers, decided on our studies' cells: the second protocol (its
settings, gates, measures and tests), the evidence that needs no training (the probes) or no
study (claim 3's cost rounds, claim 8's adaptations), the verdicts and the claims report
(``oversmooth claims``).

Built on ``oversmooth.study`` (grids, executors, cells, results and the study report), which
knows nothing of it.
"""
