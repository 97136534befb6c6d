"""The worker: the job runtime, the queue, routing, the handlers, the analysis child and check-run writing."""
