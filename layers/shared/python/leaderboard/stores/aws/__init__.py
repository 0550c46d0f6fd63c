"""The AWS adapters (and their local stand-ins): the score queue, the event bus, the event
API publisher, the validation hook invoker, and the webhook sender."""
