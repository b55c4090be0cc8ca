"""PURE: aggregate releases under differential privacy (queries, budget arithmetic, the release).

An *aggregate release* answers statistical queries over a table (a count, counts by one or
more columns, the sum, mean or quantiles of a bounded numeric column) with noise calibrated so
that the answer hardly depends on any one row: a mechanism M is (epsilon, delta)-differentially
private when, for every two tables D and D' that differ by one row and every set S of answers,
``P[M(D) in S] <= exp(epsilon) P[M(D') in S] + delta`` (C. Dwork, F. McSherry, K. Nissim and
A. Smith, "Calibrating Noise to Sensitivity in Private Data Analysis", TCC 2006). Answers
compose: k releases of epsilon_1..epsilon_k together are (sum epsilon_i, sum delta_i)-private,
which is why the broker keeps a budget per dataset and destination.

- :mod:`broker.privacy.queries` parses and checks the queries a member asks (JSON);
- :mod:`broker.privacy.budget` is the budget arithmetic, in exact fractions;
- :mod:`broker.privacy.mechanisms` is the one module that calls the DP library (OpenDP):
  every sensitivity, privacy map, noise draw and accuracy figure comes from it;
- :mod:`broker.privacy.release` plans a release (how each query's share of epsilon becomes a
  noise scale and an accuracy) and computes it from an engine's count tables.

Nothing here imports web or database code (``tests/test_layering.py``).

Explained in ``docs/explanations/differential-privacy.md``,
``docs/explanations/aggregate-releases.md``.
"""
