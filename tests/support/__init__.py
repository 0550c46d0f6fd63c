"""What tests share that is not a fixture: the reference model, the OpenAPI contract check,
test doubles, the in-process API and the `make run` stack. Fixtures live in conftest.py files."""
