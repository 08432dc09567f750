"""The local judge (``judge.LocalJudge``): claim extraction (``claims``, ``clauses``), the
evidence of each chunk (``evidence``), the support and claim models with their packaged weights
(``support``, ``claim_features``, ``claim_model``, ``weights/``), the question-type check, and the
verdict rules in ``rules/``. The LLM judge reuses its claim extraction and evidence."""
