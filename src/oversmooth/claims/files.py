"""The file names of the claims protocol's archives that are no studies, by which
``oversmooth.claims.evidence`` tells them apart (the study folders' own: ``oversmooth.study.files``)."""

PROBES_FILE = "probes.json"  # results/probes/: the claims that need no training (oversmooth.claims.probes)
ROUNDS_FILE = "rounds.json"  # results/claim3/: claim 3's cost rounds (benchmarks/bench_claim3.py)
