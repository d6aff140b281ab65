// Package cli is the `taskloom tasks …` client: list, show, create, pause,
// resume and cancel tasks, answer their questions, approve or deny the
// tool calls they wait to make, retry those that ended, and read or
// follow their events, over the HTTP API of a running Taskloom
// (TASKLOOM_URL, default http://127.0.0.1:8080, with TASKLOOM_API_TOKEN as
// the bearer token).
//
// It speaks only the documented wire format (docs/openapi.yaml): it
// imports no server package, so its tests check the API as a program sees
// it. Output is a human table by default and the API's JSON with --json.
// `events N --follow` draws the task's progress bar live from the
// /api/events stream until the task ends; a server with no room for
// another stream (503) is asked again after its Retry-After, a bounded
// number of times. `files N PATH` shows a file's control and
// bidirectional characters escaped when it writes to a terminal, and the
// bytes as they are with --raw or to a pipe or a file.
//
// The commands are github.com/spf13/cobra commands (Command), so each
// has its own --help, and `taskloom completion` covers them and their
// flags. `create --strategy` chooses how a task is worked; list has a
// strategy column, and show the strategy, the phase it stands in and the
// roles its steps were taken in.
//
// Exit codes: 0 done, 1 the API refused or could not be reached (its
// "error" sentence is printed), 2 bad usage.
package cli
