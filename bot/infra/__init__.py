"""Shared infrastructure of both processes: settings, logging, metrics and webhook payloads."""
