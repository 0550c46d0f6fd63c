"""One adapter per store, grouped by the service behind it: redis/ (the serving index and the
live publisher's state), postgres/ (the record, the archive, migrations), aws/ (the score
queue, the event bus, the event API publisher, the validation hook invoker, the webhook
sender). None of the three imports another."""
