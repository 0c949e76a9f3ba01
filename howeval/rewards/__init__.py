"""Rewards (SPEC sections 2-3): PatternRL's gated verifier reward, CPR, PatternRM's format, the reward client."""
