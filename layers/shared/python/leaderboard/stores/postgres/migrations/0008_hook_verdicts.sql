-- Validation hooks (issue 23): the record keeps each event's verdict beside its payload.

-- accept / flag: what the board's hook answered; failed_open: it failed or timed out and the
-- board fails open. NULL: the board had no hook. A rejected submission is never an event.
ALTER TABLE score_events
  ADD COLUMN hook_verdict text
    CONSTRAINT score_events_hook_verdict CHECK (hook_verdict IN ('accept', 'flag', 'failed_open')),
  ADD COLUMN hook_reason text;

-- GET /boards/{id}/flags: a board's flagged (or failed-open) events, newest first, one
-- backward range scan per page. Event ids are UUIDv7, so their order is their time order.
-- Partial: accepted events and boards without a hook add nothing to it.
CREATE INDEX score_events_review ON score_events (board_id, hook_verdict, event_id)
  WHERE hook_verdict IN ('flag', 'failed_open');
