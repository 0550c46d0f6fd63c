"""The Lambda functions (functions/*) through the template's routes and the local gateway:
the HTTP contract, authorization and bad input, held to docs/openapi.json."""
