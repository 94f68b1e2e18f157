"""Evaluation: batched generation (transformers or vLLM), per-sample metrics, the held-out training callback."""
