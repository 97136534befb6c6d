"""Reporting: the text, JSON, GitHub and SARIF renderings of a report."""
