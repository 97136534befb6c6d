"""Fixes: argument edits, libcst codemods and calibration edits, every other byte kept."""
