"""Talking to GitHub: App authentication, a retrying client, the retry policy."""
