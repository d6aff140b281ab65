-- The files of a task within the limits of docs/deploy.md, checked in the
-- database after a commit's file writes (adapters/sqlstore's FileChecker):
-- the commit then need not read the task's files before it writes, and an
-- iteration that writes a file stays one round trip with the claim of the
-- worker's next task. A breach fails the statement, and so the whole
-- commit: SQLSTATE TL001 for a limit (too many files, too many bytes in
-- all), TL002 for a file where a folder of a written path would be, or a
-- written path that is a folder. Each file's own size is checked before
-- the writes.
CREATE FUNCTION taskloom_check_files(task BIGINT, written TEXT[], max_files INTEGER, max_bytes BIGINT)
RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    n     INTEGER;
    total BIGINT;
    p     TEXT;
    other TEXT;
BEGIN
    SELECT count(*), COALESCE(sum(size), 0) INTO n, total FROM task_files WHERE task_number = task;
    IF n > max_files THEN
        RAISE EXCEPTION USING ERRCODE = 'TL001',
            MESSAGE = format('the task would have %s files; a task may keep at most %s', n, max_files);
    END IF;
    IF total > max_bytes THEN
        RAISE EXCEPTION USING ERRCODE = 'TL001',
            MESSAGE = format('the task''s files would come to %s bytes; a task may keep at most %s (20 MiB) in all', total, max_bytes);
    END IF;
    FOREACH p IN ARRAY written LOOP
        SELECT path INTO other FROM task_files
        WHERE task_number = task AND starts_with(p, path || '/') LIMIT 1;
        IF other IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'TL002',
                MESSAGE = format('%s is a file, so %s cannot be written inside it', other, p);
        END IF;
        IF EXISTS (SELECT 1 FROM task_files WHERE task_number = task AND starts_with(path, p || '/')) THEN
            RAISE EXCEPTION USING ERRCODE = 'TL002', MESSAGE = format('%s is a folder', p);
        END IF;
    END LOOP;
END
$$;
