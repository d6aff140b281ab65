// Package actions holds Taskloom's actions, one file each: the chat
// commands (create, list, status, pause, resume, cancel, search, answer,
// help) and the tools an agent task can call (post_message, write_file,
// read_file, list_files, http_get, ask_user, create_subtask, run_command).
// Every action declares its parameters as a JSON Schema, so the same code
// answers a chat command and serves as a model's tool.
package actions
