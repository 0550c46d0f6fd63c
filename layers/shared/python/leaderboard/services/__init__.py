"""Use cases: each ties the domain rules to the stores for one kind of request."""
