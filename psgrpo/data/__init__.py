"""Datasets: GSM8K (hub or local JSONL) and the synthetic ``arith`` task, plus validation."""
