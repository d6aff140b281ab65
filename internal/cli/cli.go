package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
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

// UsageTemplate is the usage text of every taskloom command: the
// command line, its subcommands and its flags. cobra fills it in.
const UsageTemplate = `Usage: {{if .HasAvailableSubCommands}}{{.CommandPath}} <command> [flags]{{else}}{{.UseLine}}{{end}}{{if gt (len .Aliases) 0}}

Aliases: {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Use 22}} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Flags of every {{.Parent.CommandPath}} command:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

"{{.CommandPath}} <command> --help" prints a command's own help.{{end}}
`

// HelpTemplate is the help text of every taskloom command: what it does,
// its usage, then what its Long description adds.
const HelpTemplate = `{{.CommandPath}}: {{.Short}}

{{.UsageString}}{{with .Long}}
{{. | trimTrailingWhitespaces}}
{{end}}`

const tasksLong = `Environment:
  TASKLOOM_URL          where Taskloom serves HTTP (default http://127.0.0.1:8080,
                        or http://$TASKLOOM_HTTP_ADDR when that is set)
  TASKLOOM_API_TOKEN    the bearer token, when the server requires one

Exit status: 0 done, 1 the API refused (its reason is printed) or could not be
reached, 2 bad usage.`

// Strategies are the strategies every Taskloom server offers, in the
// order its refusal of an unknown one lists them; a server may offer
// more that plugins add.
var Strategies = []string{"loop", "react", "tools", "review", "supervisor", "magentic", "group_chat"}

// statuses are a task's statuses, which list --status filters on.
var statuses = []string{"queued", "running", "waiting", "paused", "completed", "failed", "stalemate", "canceled"}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// ExitError ends a command whose outcome has been printed: the process
// exits with Code.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Run runs `taskloom tasks <args>` (args without "tasks") and returns the
// exit code. getenv reads TASKLOOM_URL and TASKLOOM_API_TOKEN.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	root := &cobra.Command{Use: "taskloom", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(Command(getenv))
	root.SetArgs(append([]string{"tasks"}, args...))
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	default:
		fmt.Fprintf(stderr, "taskloom tasks: %s\n", err)
		return ExitUsage
	}
}

// Command is `taskloom tasks` with its subcommands; getenv reads
// TASKLOOM_URL and TASKLOOM_API_TOKEN. Each command prints its outcome
// and returns nil or an *ExitError.
func Command(getenv func(string) string) *cobra.Command {
	r := &runner{getenv: getenv}
	tasks := &cobra.Command{
		Use:   "tasks",
		Short: "drive a running Taskloom over its API",
		Long:  tasksLong,
		Args:  cobra.ArbitraryArgs,
		// Without a subcommand: "help [command]", or a mistake.
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] == "help" {
				target, rest, err := c.Find(args[1:])
				if err != nil || len(rest) > 0 {
					return r.finish(c, usagef("no help for %q", strings.Join(args[1:], " ")))
				}
				return target.Help()
			}
			if len(args) == 0 {
				fmt.Fprint(c.ErrOrStderr(), c.UsageString())
				return &ExitError{Code: ExitUsage}
			}
			return r.finish(c, usagef("unknown command %q", args[0]))
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	tasks.SetUsageTemplate(UsageTemplate)
	tasks.SetHelpTemplate(HelpTemplate)
	tasks.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return r.finish(c, usageError{err.Error()}) })
	pf := tasks.PersistentFlags()
	pf.BoolVar(&r.json, "json", false, "print the API's JSON, for scripts")
	pf.StringVar(&r.url, "url", "", "where Taskloom serves HTTP (default $TASKLOOM_URL)")

	add := func(c *cobra.Command, run func(args []string) error) *cobra.Command {
		c.Args = cobra.ArbitraryArgs // each command says what is wrong with its own
		c.RunE = func(c *cobra.Command, args []string) error {
			r.ctx, r.out, r.errOut = c.Context(), c.OutOrStdout(), c.ErrOrStderr()
			return r.finish(c, run(args))
		}
		c.ValidArgsFunction = cobra.NoFileCompletions
		tasks.AddCommand(c)
		return c
	}

	list := add(&cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "the tasks with their progress and strategy"}, r.list)
	f := list.Flags()
	f.StringVar(&r.listFlags.status, "status", "", "statuses to keep, comma-separated: "+strings.Join(statuses, ", "))
	f.StringVar(&r.listFlags.search, "search", "", "keep tasks whose name or goal contains this")
	f.StringVar(&r.listFlags.order, "order", "number", "number, recent or queue")
	f.IntVar(&r.listFlags.limit, "limit", 0, "how many tasks (default the server's, 100)")
	f.Int64Var(&r.listFlags.after, "after", 0, "the next page: the number the previous page ended at")
	_ = list.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(statuses, cobra.ShellCompDirectiveNoFileComp))
	_ = list.RegisterFlagCompletionFunc("order", cobra.FixedCompletions([]string{"number", "recent", "queue"}, cobra.ShellCompDirectiveNoFileComp))

	add(&cobra.Command{Use: "show N", Aliases: []string{"status", "get"}, Short: "one task with its strategy, phase, roles and steps"}, r.show)

	create := add(&cobra.Command{Use: "create GOAL...", Aliases: []string{"new"}, Short: "create a task",
		Long: "A server may offer more strategies than these, which plugins add; it refuses one it\ndoes not know, and its refusal lists those it offers.",
		Example: `  taskloom tasks create "Summarise the open issues"
  taskloom tasks create --strategy review "Write a release note for v1.4"`}, r.create)
	f = create.Flags()
	f.StringVar(&r.createFlags.name, "name", "", "the task's name (default: from the goal)")
	f.StringVar(&r.createFlags.strategy, "strategy", "", "how the task is worked: "+strings.Join(Strategies, ", ")+" (default loop)")
	f.StringVar(&r.createFlags.room, "room", "", "a chat room for its notifications, e.g. discord:123")
	f.IntVar(&r.createFlags.maxIter, "max-iterations", 0, "iterations before it is stopped (default the server's)")
	f.IntVar(&r.createFlags.maxStale, "max-stale", 0, "iterations without progress before it is stopped (default the server's)")
	f.Int64Var(&r.createFlags.maxTokens, "max-tokens", -1, "its token budget, 0 for no limit")
	create.Flags().Lookup("max-tokens").DefValue = "the server's" // not -1: that is "unset"
	_ = create.RegisterFlagCompletionFunc("strategy", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return r.strategies(c.Context()), cobra.ShellCompDirectiveNoFileComp
	})

	for _, op := range []struct{ use, short string }{
		{"pause N", "stop serving a task until it is resumed"},
		{"resume N", "put a paused task back in the queue"},
		{"cancel N", "end a task for good"},
	} {
		name := strings.Fields(op.use)[0]
		add(&cobra.Command{Use: op.use, Short: op.short}, func(args []string) error { return r.control(name, args) })
	}
	add(&cobra.Command{Use: "answer N TEXT...", Short: "answer the question a waiting task asked",
		Long: "An answer that starts with \"-\" follows \"--\": taskloom tasks answer 3 -- -1 is fine"}, r.answer)
	callHelp := "only if this is still the call it waits on (the id \"show N\" prints); without it, the call pending now"
	add(&cobra.Command{Use: "approve N", Short: "let a task run the tool call it waits to make"}, r.approve).
		Flags().StringVar(&r.call, "call", "", callHelp)
	add(&cobra.Command{Use: "deny N [REASON...]", Short: "refuse that call; the task decides anew"}, r.deny).
		Flags().StringVar(&r.call, "call", "", callHelp)
	add(&cobra.Command{Use: "retry N [CONTEXT...]", Short: "continue an ended task in a new one, with its files"}, r.retry)
	add(&cobra.Command{Use: "files N [PATH]", Short: "a task's files, or one file's bytes",
		Long: `On a terminal a file's control and bidirectional characters are shown escaped
(\x1b, \u202e); elsewhere (a pipe, a file) it is written as it is.`}, r.files).
		Flags().BoolVar(&r.raw, "raw", false, "write the bytes as they are, even on a terminal")
	add(&cobra.Command{Use: "events N", Aliases: []string{"log"}, Short: "a task's event log"}, r.events).
		Flags().BoolVarP(&r.follow, "follow", "f", false, "draw its progress live until it ends")
	return tasks
}

// finish prints what err says, as c's outcome, and returns the
// *ExitError that ends the process with its code, or nil.
func (r *runner) finish(c *cobra.Command, err error) error {
	var ue usageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		fmt.Fprintf(c.ErrOrStderr(), "%s: %s\nRun `%s --help` for its usage.\n", group(c), ue.msg, c.CommandPath())
		return &ExitError{Code: ExitUsage}
	default:
		fmt.Fprintf(c.ErrOrStderr(), "%s: %s\n", group(c), err)
		return &ExitError{Code: ExitAPI}
	}
}

// group names the command group c is of in messages: "taskloom tasks",
// "taskloom knowledge".
func group(c *cobra.Command) string {
	words := strings.Fields(c.CommandPath())
	if len(words) > 2 {
		words = words[:2]
	}
	return strings.Join(words, " ")
}

type runner struct {
	ctx    context.Context
	getenv func(string) string
	out    io.Writer
	errOut io.Writer

	json bool
	url  string
	c    *client

	// The flags of the subcommands; one runs.
	listFlags   listFlags
	createFlags createFlags
	call        string // approve, deny
	raw         bool   // files
	follow      bool   // events
}

type listFlags struct {
	status, search, order string
	limit                 int
	after                 int64
}

type createFlags struct {
	name, strategy, room string
	maxIter, maxStale    int
	maxTokens            int64
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

// completionWait is how long a completion waits for the server.
const completionWait = 2 * time.Second

// strategies are the strategies the server offers (GET /api/strategies),
// those its plugins added included; the built-in ones when it cannot be
// asked.
func (r *runner) strategies(ctx context.Context) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	if r.connect() != nil {
		return Strategies
	}
	// A shell waits for its completion: a server that does not answer
	// soon gets the built-in ones.
	ctx, cancel := context.WithTimeout(ctx, completionWait)
	defer cancel()
	var body struct {
		Strategies []string `json:"strategies"`
	}
	if _, err := r.c.call(ctx, "GET", "/api/strategies", nil, &body); err != nil || len(body.Strategies) == 0 {
		return Strategies
	}
	return body.Strategies
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

func (r *runner) list(pos []string) error {
	lf := r.listFlags
	if len(pos) > 0 {
		return usagef("list takes no arguments (got %q); filter with --status or --search", pos[0])
	}
	if err := r.connect(); err != nil {
		return err
	}
	q := url.Values{}
	if lf.status != "" {
		q.Set("status", lf.status)
	}
	if lf.search != "" {
		q.Set("q", lf.search)
	}
	if lf.order != "" && lf.order != "number" {
		q.Set("order", lf.order)
	}
	if lf.limit != 0 {
		q.Set("limit", strconv.Itoa(lf.limit))
	}
	if lf.after != 0 {
		q.Set("after", strconv.FormatInt(lf.after, 10))
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
	writeList(r.out, l, lf.status != "" || lf.search != "")
	return nil
}

func (r *runner) show(pos []string) error {
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

func (r *runner) create(pos []string) error {
	cf := r.createFlags
	if len(pos) == 0 {
		return usagef(`create needs a goal, e.g. taskloom tasks create "Summarise the open issues"`)
	}
	body := map[string]any{"goal": strings.Join(pos, " ")}
	if cf.name != "" {
		body["name"] = cf.name
	}
	if s := strings.TrimSpace(cf.strategy); s != "" {
		body["strategy"] = s
	}
	if cf.room != "" {
		body["room"] = cf.room
	}
	if cf.maxIter != 0 {
		body["max_iterations"] = cf.maxIter
	}
	if cf.maxStale != 0 {
		body["max_stale_iterations"] = cf.maxStale
	}
	if cf.maxTokens != -1 {
		body["max_tokens"] = cf.maxTokens // the server refuses a negative one
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

func (r *runner) control(op string, pos []string) error {
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

func (r *runner) answer(pos []string) error {
	n, text, err := numberAndText(pos, "answer", "the answer", "use PostgreSQL", false)
	if err != nil {
		return err
	}
	return r.post(fmt.Sprintf("/api/tasks/%d/answer", n), map[string]string{"text": text}, func(t task) {
		fmt.Fprintf(r.out, "Answered task #%d %q; it is %s.\n", t.Number, clean(t.Name), taskStatus(t))
	})
}

func (r *runner) approve(pos []string) error {
	n, err := number(pos, "approve")
	if err != nil {
		return err
	}
	return r.decide(n, "approve", map[string]string{"call": r.call})
}

func (r *runner) deny(pos []string) error {
	n, reason, err := numberAndText(pos, "deny", "a reason", "not on the production host", true)
	if err != nil {
		return err
	}
	return r.decide(n, "deny", map[string]string{"call": r.call, "reason": reason})
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

func (r *runner) retry(pos []string) error {
	n, extra, err := numberAndText(pos, "retry", "more context", "use JWT this time", true)
	if err != nil {
		return err
	}
	return r.post(fmt.Sprintf("/api/tasks/%d/retry", n), map[string]string{"context": extra}, func(t task) {
		fmt.Fprintf(r.out, "Created task #%d %q, continuing #%d with its files (%s).\nFollow it with: taskloom tasks events %d --follow\n",
			t.Number, clean(t.Name), n, taskStatus(t), t.Number)
	})
}

func (r *runner) events(pos []string) error {
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
	if r.json && !r.follow {
		return r.printJSON(raw)
	}
	f := &follower{r: r, task: t, tty: isTerminal(r.out)}
	for _, e := range l.Events {
		if err := f.history(e); err != nil {
			return err
		}
	}
	if !r.follow {
		return nil
	}
	return f.follow()
}
