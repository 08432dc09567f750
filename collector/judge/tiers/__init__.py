"""Judges in tiers: the tiered judge (``tiered``: the local judge on every trace, the LLM judge
on a sample and on borderline verdicts) and the local judge's optional model second tiers, which
re-score the claims in a band of tier-1 probabilities (``band``, shared by both): ``entailment``
(the entailment cross-encoder the package ships) and ``second_tier`` (MiniLM sentence states,
``minilm`` and its onnxruntime graph ``bert_onnx``)."""
