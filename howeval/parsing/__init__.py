"""Response parsing: reasoning-channel split, final-answer extraction, step segmentation (pure strings)."""
