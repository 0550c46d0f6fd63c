"""End to end over real HTTP and WebSocket: the stack as `make run` starts it, the demo page
in a real browser, and the fuzzer driven from docs/openapi.json."""
