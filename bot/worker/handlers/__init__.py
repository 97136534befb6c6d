"""Webhook handlers, one module per concern; each module owns a gidgethub Router named `router`."""
