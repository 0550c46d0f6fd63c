"""The local stack and development tools; not part of any deployed artifact."""
