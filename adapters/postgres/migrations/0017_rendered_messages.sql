-- The message a send rendered, kept on one of its rows (the lowest id)
-- under its delivery key: every later attempt at that key sends exactly
-- these bytes, so a platform that recognises an earlier attempt by its
-- text (Discord's history, once its nonce is forgotten) finds it even
-- after the task has moved on. It goes with the rows when they are sent.
ALTER TABLE notifications ADD COLUMN rendered TEXT NOT NULL DEFAULT '';
