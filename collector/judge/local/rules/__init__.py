"""The local judge's verdict rules: contradictions (``conflicts`` and the checks it calls:
``denials``, ``swaps``, ``scope``, ``comparisons``), approximate numbers (``approximate``), and
claim segments no chunk mentions (``segments``). docs/judge-internals.md lists each rule with
its dev figures."""
