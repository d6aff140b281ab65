package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitAPI   = 1 // the API refused, or could not be reached
	ExitUsage = 2
)

// DefaultURL is where the client looks for Taskloom when neither
// TASKLOOM_URL nor TASKLOOM_HTTP_ADDR says otherwise.
const DefaultURL = "http://127.0.0.1:8080"

const usage = `Usage: taskloom tasks <command> [arguments] [flags]

Commands:
  list                  the tasks with their progress
                          --status S[,S...]  --search TEXT  --order number|recent|queue
                          --limit N  --after N (the next page)
  show N                one task with its steps
  create "GOAL"         create a task
                          --name NAME  --room PLATFORM:CHANNEL  --max-iterations N  --max-stale N
                          --max-tokens N (0: no limit)
  pause N               stop serving a task until it is resumed
  resume N              put a paused task back in the queue
  cancel N              end a task for good
  answer N TEXT...      answer the question a waiting task asked
  approve N             let a task run the tool call it waits to make
                          --call ID  only if that is still the call it waits on
                          (the id "show N" prints); without it, the call pending now
  deny N [REASON...]    refuse that call; the task decides anew
                          --call ID  as for approve
  retry N [CONTEXT...]  continue an ended task in a new one, with its files
  files N [PATH]        a task's files, or one file's bytes; on a terminal the
                        file's control and bidirectional characters are shown
                        escaped (\x1b, \u202e), elsewhere it is written as it is
                          --raw  write the bytes as they are, even on a terminal
  events N              a task's event log
                          --follow  draw its progress live until it ends

Every command takes --json (print the API's JSON, for scripts) and --url URL.

Environment:
  TASKLOOM_URL          where Taskloom serves HTTP (default http://127.0.0.1:8080,
                        or http://$TASKLOOM_HTTP_ADDR when that is set)
  TASKLOOM_API_TOKEN    the bearer token, when the server requires one

Exit status: 0 done, 1 the API refused (its reason is printed) or could not be
reached, 2 bad usage.
`

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// Run runs `taskloom tasks <args>` (args without "tasks") and returns the
// exit code. getenv reads TASKLOOM_URL and TASKLOOM_API_TOKEN.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	r := &runner{ctx: ctx, getenv: getenv, out: stdout, errOut: stderr}
	err := r.run(args[0], args[1:])
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "taskloom tasks: %s\nRun `taskloom tasks help` for the commands.\n", ue.msg)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "taskloom tasks: %s\n", err)
		return ExitAPI
	}
}

type runner struct {
	ctx    context.Context
	getenv func(string) string
	out    io.Writer
	errOut io.Writer

	json bool
	url  string
	c    *client
}

// flags returns the flag set of a command, with the common flags.
func (r *runner) flags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet("taskloom tasks "+cmd, flag.ContinueOnError)
	fs.SetOutput(r.errOut)
	fs.Usage = func() { fmt.Fprint(r.errOut, usage) }
	fs.BoolVar(&r.json, "json", false, "print the API's JSON")
	fs.StringVar(&r.url, "url", "", "where Taskloom serves HTTP (TASKLOOM_URL)")
	return fs
}

// parse parses flags wherever they stand among the arguments and returns
// the arguments. After "--" every word is an argument, even one that
// starts with "-" (an answer such as "-1 is fine").
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func (r *runner) connect() error {
	base := r.url
	if base == "" {
		base = strings.TrimSpace(r.getenv("TASKLOOM_URL"))
	}
	if base == "" {
		base = DefaultURL
		if addr := strings.TrimSpace(r.getenv("TASKLOOM_HTTP_ADDR")); addr != "" {
			base = "http://" + localAddr(addr)
		}
	}
	c, err := newClient(base, strings.TrimSpace(r.getenv("TASKLOOM_API_TOKEN")))
	if err != nil {
		return usageError{err.Error()}
	}
	r.c = c
	return nil
}

// localAddr turns a listen address into one to dial: a wildcard host
// (":8080", "0.0.0.0:8080") is this machine.
func localAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func (r *runner) run(cmd string, args []string) error {
	switch cmd {
	case "list", "ls":
		return r.list(args)
	case "show", "status", "get":
		return r.show(args)
	case "create", "new":
		return r.create(args)
	case "pause", "resume", "cancel":
		return r.control(cmd, args)
	case "approve":
		return r.approve(args)
	case "answer":
		return r.answer(args)
	case "deny":
		return r.deny(args)
	case "retry":
		return r.retry(args)
	case "events", "log":
		return r.events(args)
	case "files":
		return r.files(args)
	}
	return usagef("unknown command %q", cmd)
}

// number reads a task number: "3" or "#3".
func number(args []string, cmd string) (int64, error) {
	if len(args) != 1 {
		return 0, usagef("%s takes one task number, e.g. `taskloom tasks %s 3`", cmd, cmd)
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(args[0], "#"), 10, 64)
	if err != nil || n <= 0 {
		return 0, usagef("%q is not a task number", args[0])
	}
	return n, nil
}

// numberAndText reads a task number and the words after it, joined. The
// words are what (e.g. "an answer"), needed unless optional; example
// shows some.
func numberAndText(args []string, cmd, what, example string, optional bool) (int64, string, error) {
	if len(args) == 0 || (!optional && len(args) < 2) {
		also := "and " + what
		if optional {
			also = "and, if you like, " + what
		}
		return 0, "", usagef("%s takes a task number %s, e.g. `taskloom tasks %s 3 %s`", cmd, also, cmd, example)
	}
	n, err := number(args[:1], cmd)
	if err != nil {
		return 0, "", err
	}
	return n, strings.Join(args[1:], " "), nil
}

// printJSON writes an API answer indented.
func (r *runner) printJSON(raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		_, err = r.out.Write(raw)
		return err
	}
	b.WriteByte('\n')
	_, err := r.out.Write(b.Bytes())
	return err
}

func (r *runner) list(args []string) error {
	fs := r.flags("list")
	status := fs.String("status", "", "statuses to keep, comma-separated")
	search := fs.String("search", "", "keep tasks whose name or goal contains this")
	order := fs.String("order", "number", "number, recent or queue")
	limit := fs.Int("limit", 0, "how many tasks (default the server's, 100)")
	after := fs.Int64("after", 0, "the next page: the number the previous page ended at")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("list takes no arguments (got %q); filter with --status or --search", pos[0])
	}
	if err := r.connect(); err != nil {
		return err
	}
	q := url.Values{}
	if *status != "" {
		q.Set("status", *status)
	}
	if *search != "" {
		q.Set("q", *search)
	}
	if *order != "" && *order != "number" {
		q.Set("order", *order)
	}
	if *limit != 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	if *after != 0 {
		q.Set("after", strconv.FormatInt(*after, 10))
	}
	path := "/api/tasks"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l taskList
	raw, err := r.c.call(r.ctx, "GET", path, nil, &l)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	writeList(r.out, l, *status != "" || *search != "")
	return nil
}

func (r *runner) show(args []string) error {
	fs := r.flags("show")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	n, err := number(pos, "show")
	if err != nil {
		return err
	}
	if err := r.connect(); err != nil {
		return err
	}
	var t task
	raw, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/tasks/%d", n), nil, &t)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	writeTask(r.out, t)
	return nil
}

func (r *runner) create(args []string) error {
	fs := r.flags("create")
	name := fs.String("name", "", "the task's name (default: from the goal)")
	room := fs.String("room", "", "a chat room for its notifications, e.g. discord:123")
	maxIter := fs.Int("max-iterations", 0, "iterations before it is stopped (default the server's)")
	maxStale := fs.Int("max-stale", 0, "iterations without progress before it is stopped (default the server's)")
	maxTokens := fs.Int64("max-tokens", -1, "its token budget, 0 for no limit (default the server's)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(`create needs a goal, e.g. taskloom tasks create "Summarise the open issues"`)
	}
	body := map[string]any{"goal": strings.Join(pos, " ")}
	if *name != "" {
		body["name"] = *name
	}
	if *room != "" {
		body["room"] = *room
	}
	if *maxIter != 0 {
		body["max_iterations"] = *maxIter
	}
	if *maxStale != 0 {
		body["max_stale_iterations"] = *maxStale
	}
	if *maxTokens != -1 {
		body["max_tokens"] = *maxTokens // the server refuses a negative one
	}
	if err := r.connect(); err != nil {
		return err
	}
	var t task
	raw, err := r.c.call(r.ctx, "POST", "/api/tasks", body, &t)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	fmt.Fprintf(r.out, "Created task #%d %q (%s).\nFollow it with: taskloom tasks events %d --follow\n", t.Number, clean(t.Name), t.Status, t.Number)
	return nil
}

func (r *runner) control(op string, args []string) error {
	fs := r.flags(op)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	n, err := number(pos, op)
	if err != nil {
		return err
	}
	if err := r.connect(); err != nil {
		return err
	}
	var t task
	raw, err := r.c.call(r.ctx, "POST", fmt.Sprintf("/api/tasks/%d/%s", n, op), nil, &t)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	fmt.Fprintf(r.out, "Task #%d %q is %s.\n", t.Number, clean(t.Name), taskStatus(t))
	return nil
}

// post sends one change about a task and prints the task it answers with
// (as JSON with --json); say prints it otherwise.
func (r *runner) post(path string, body any, say func(t task)) error {
	if err := r.connect(); err != nil {
		return err
	}
	var t task
	raw, err := r.c.call(r.ctx, "POST", path, body, &t)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	say(t)
	return nil
}

func (r *runner) answer(args []string) error {
	pos, err := parse(r.flags("answer"), args)
	if err != nil {
		return err
	}
	n, text, err := numberAndText(pos, "answer", "the answer", "use PostgreSQL", false)
	if err != nil {
		return err
	}
	return r.post(fmt.Sprintf("/api/tasks/%d/answer", n), map[string]string{"text": text}, func(t task) {
		fmt.Fprintf(r.out, "Answered task #%d %q; it is %s.\n", t.Number, clean(t.Name), taskStatus(t))
	})
}

func (r *runner) approve(args []string) error {
	fs := r.flags("approve")
	call := fs.String("call", "", "the id of the approval request (show N prints it)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	n, err := number(pos, "approve")
	if err != nil {
		return err
	}
	return r.decide(n, "approve", map[string]string{"call": *call})
}

func (r *runner) deny(args []string) error {
	fs := r.flags("deny")
	call := fs.String("call", "", "the id of the approval request (show N prints it)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	n, reason, err := numberAndText(pos, "deny", "a reason", "not on the production host", true)
	if err != nil {
		return err
	}
	return r.decide(n, "deny", map[string]string{"call": *call, "reason": reason})
}

// decide approves or denies task n's call and says which call it was.
func (r *runner) decide(n int64, op string, body map[string]string) error {
	if err := r.connect(); err != nil {
		return err
	}
	var d decision
	raw, err := r.c.call(r.ctx, "POST", fmt.Sprintf("/api/tasks/%d/%s", n, op), body, &d)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	if op == "approve" {
		fmt.Fprintf(r.out, "Approved %s for task #%d %q; it is %s.\n", callText(d.Decided), d.Number, clean(d.Name), taskStatus(d.task))
	} else {
		fmt.Fprintf(r.out, "Denied %s for task #%d %q; it is %s and decides anew.\n", callText(d.Decided), d.Number, clean(d.Name), taskStatus(d.task))
	}
	return nil
}

func (r *runner) retry(args []string) error {
	pos, err := parse(r.flags("retry"), args)
	if err != nil {
		return err
	}
	n, extra, err := numberAndText(pos, "retry", "more context", "use JWT this time", true)
	if err != nil {
		return err
	}
	return r.post(fmt.Sprintf("/api/tasks/%d/retry", n), map[string]string{"context": extra}, func(t task) {
		fmt.Fprintf(r.out, "Created task #%d %q, continuing #%d with its files (%s).\nFollow it with: taskloom tasks events %d --follow\n",
			t.Number, clean(t.Name), n, taskStatus(t), t.Number)
	})
}

func (r *runner) events(args []string) error {
	fs := r.flags("events")
	follow := fs.Bool("follow", false, "draw the task's progress live until it ends")
	fs.BoolVar(follow, "f", false, "short for --follow")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	n, err := number(pos, "events")
	if err != nil {
		return err
	}
	if err := r.connect(); err != nil {
		return err
	}
	var t task
	if _, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/tasks/%d", n), nil, &t); err != nil {
		return err
	}
	var l eventList
	raw, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/tasks/%d/events", n), nil, &l)
	if err != nil {
		return err
	}
	if r.json && !*follow {
		return r.printJSON(raw)
	}
	f := &follower{r: r, task: t, tty: isTerminal(r.out)}
	for _, e := range l.Events {
		if err := f.history(e); err != nil {
			return err
		}
	}
	if !*follow {
		return nil
	}
	return f.follow()
}
