"""The serving index's commands, one module a capability (as redis-py groups its command
families), each with the Lua scripts it runs beside it; `serving_index.RedisIndex` composes them."""
