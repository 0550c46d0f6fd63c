"""Deployment helpers that run against a deployed stack (`make console-deploy`)."""
