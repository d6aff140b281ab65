-- The message a send rendered, as adapters/postgres/migrations/0017.
ALTER TABLE notifications ADD COLUMN rendered TEXT NOT NULL DEFAULT '';
