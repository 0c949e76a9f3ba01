"""PatternRM: the pattern reward model as a judge (SPEC section 2, "PatternRM and PatternRL").

- ``format``: its text format (prompt, ``LABELS:`` line, parser, SFT records, consensus corpus);
- ``corpus``: the offline training corpus built from the shared samples;
- ``head``: the embedded form (MiniLM features + a multi-label head), trained by ``make patternrm``;
- ``model``: the loadable PatternRM (embedded head, rules stand-in, or a fine-tuned checkpoint);
- ``judge``: :class:`~howeval.judges.patternrm.judge.PatternRMJudge`, the ``kind: patternrm`` pattern judge.

The reward server and PatternRL import these; nothing here imports the rewards package.
"""
