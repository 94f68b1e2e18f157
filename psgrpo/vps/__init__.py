"""GRPO-VPS's process signal: entropy boundaries, confidence probes of the gold answer, and the signal stage."""
