-- Custom periods (issue 24): a board's own schedule (a cron in a time zone) and seasons ended
-- by hand. Their ids are their starts (2026-11-22T170000Z); they archive like the fixed kinds.
ALTER TABLE archived_periods DROP CONSTRAINT archived_periods_kind_check,
  ADD CONSTRAINT archived_periods_kind_check
    CHECK (kind IN ('daily', 'weekly', 'monthly', 'custom'));
ALTER TABLE archive_entries DROP CONSTRAINT archive_entries_kind,
  ADD CONSTRAINT archive_entries_kind CHECK (kind IN ('daily', 'weekly', 'monthly', 'custom'));
