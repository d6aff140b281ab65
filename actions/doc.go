// Package actions holds Taskloom's actions, one file each: the chat
// commands (create, list, status, pause, resume, cancel, search, answer,
// help) and the tools an agent task can call (post_message, write_file,
// read_file, list_files, http_get, ask_user, create_subtask, run_command).
// Every action declares its parameters as a JSON Schema, so the same code
// answers a chat command and serves as a model's tool.
//
// The file tools work on the calling task's files through the iteration's
// domain.Files view (plugin.Call.Files): the files live in the store, and
// what a tool writes is committed with the iteration's result, under its
// lease (docs/deploy.md). run_command lays the files out in a temporary
// directory for its sandbox and writes back what the command changed.
// Workspaces.Import moves the workspace directories an earlier version
// kept on disk (TASKLOOM_DATA_DIR/workspaces/task-N) into the store.
package actions
