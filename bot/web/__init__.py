"""The web process: the webhook intake, sign-in, set-up, the pages and the probes."""
