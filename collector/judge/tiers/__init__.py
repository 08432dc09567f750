"""Judges in tiers: the tiered judge (``tiered``: the local judge on every trace, the LLM judge
on a sample and on borderline verdicts) and the local judge's optional model second tier
(``second_tier``: MiniLM sentence states, ``minilm`` and its onnxruntime graph ``bert_onnx``)."""
