"""Offline evaluation (``ragpulse eval``): an eval set with gold claims becomes a regression gate.

:func:`~.evaluate.evaluate` scores a run of judge input records (or a replayed
RAG function, :mod:`.replay`) against the eval set's gold claims, forbidden
claims and evidence spans with a ragpulse judge deciding entailment
(:mod:`.entail`), aggregates per slice with the holdout split apart, and
compares paired with a baseline run by bootstrap (:mod:`.bootstrap`);
:mod:`.gate` turns the result into an exit status, :mod:`.report_text` and
:mod:`.report_html` into reports. docs/eval.md has every formula.
"""
