-- Task files (docs/deploy.md), as adapters/postgres/migrations/0007. data
-- comes last, so a listing reads a row's other columns without the pages
-- that hold it.
CREATE TABLE task_files (
    task_number INTEGER NOT NULL REFERENCES tasks (number),
    path        TEXT NOT NULL CHECK (path <> '' AND length(CAST(path AS BLOB)) <= 1024),
    size        INTEGER NOT NULL CHECK (size BETWEEN 0 AND 1048576),
    sha256      TEXT NOT NULL CHECK (length(sha256) = 64),
    updated_at  INTEGER NOT NULL,
    data        BLOB NOT NULL,
    PRIMARY KEY (task_number, path),
    CONSTRAINT task_files_size_is_data CHECK (size = length(data))
) STRICT;
