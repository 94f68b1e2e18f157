"""PS-GRPO's process signal: steps (segmentation), step scores (scorers), group-normalised tensors (signal)."""
