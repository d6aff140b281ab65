-- Tell other replicas when a task enters the queue, so an idle worker
-- anywhere picks it up at once instead of at its next poll. pg_notify in a
-- trigger is delivered when the transaction commits, and not at all if it
-- rolls back.
CREATE FUNCTION taskloom_task_ready() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('taskloom_tasks', NEW.number::text);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER tasks_ready
    AFTER INSERT OR UPDATE OF status ON tasks
    FOR EACH ROW
    WHEN (NEW.status = 'queued')
    EXECUTE FUNCTION taskloom_task_ready();
