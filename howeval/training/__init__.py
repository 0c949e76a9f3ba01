"""GRPO training core (no Ray): the training config, prompt rows, the curriculum, in-process rewards."""
