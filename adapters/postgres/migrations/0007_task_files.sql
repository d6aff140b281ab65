-- Task files (docs/deploy.md): each task's files live here, so any replica
-- can run any iteration of any task. An iteration's changes are written in
-- its fenced commit. The limits (1 MiB a file, 20 MiB and 1,000 files a
-- task) are checked by the store logic, which knows the whole change; the
-- file's own are checked here too. data is TOASTed out of line, so a
-- listing does not read it.
CREATE TABLE task_files (
    task_number BIGINT NOT NULL REFERENCES tasks (number),
    path        TEXT NOT NULL CHECK (path <> '' AND octet_length(path) <= 1024),
    size        BIGINT NOT NULL CHECK (size BETWEEN 0 AND 1048576),
    sha256      TEXT NOT NULL CHECK (length(sha256) = 64),
    updated_at  TIMESTAMPTZ NOT NULL,
    data        BYTEA NOT NULL,
    PRIMARY KEY (task_number, path),
    CONSTRAINT task_files_size_is_data CHECK (size = octet_length(data))
);
