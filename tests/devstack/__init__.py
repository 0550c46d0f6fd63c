"""The local stack's parts (devstack/): embedded servers, the HTTP/1.1 server, the gateway,
the SQS and event API stand-ins, and `sam local invoke` in Docker."""
