"""Scanning: files read from a tree, registrations read out of them, the scan cache."""
