"""Calibration: durations, the est_time policy and shard predictions."""
