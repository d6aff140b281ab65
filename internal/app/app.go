package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/adapters/mcp"
	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/adapters/sqlite"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/evaluators"
	"github.com/taskloom/taskloom/internal/cli"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/config"
	"github.com/taskloom/taskloom/internal/metrics"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/providers"
	"github.com/taskloom/taskloom/services/notify"
	"github.com/taskloom/taskloom/services/schedules"
	"github.com/taskloom/taskloom/services/tasks"
)

// Version and Revision may be set at build time, where the build records
// no module version or VCS revision (a Docker build without .git):
// -ldflags "-X github.com/taskloom/taskloom/internal/app.Version=v1.2.3
// -X github.com/taskloom/taskloom/internal/app.Revision=0123abcd".
// Otherwise both come from the build info.
var (
	Version  = ""
	Revision = ""
)

// ShutdownTimeout is TASKLOOM_SHUTDOWN_TIMEOUT's default: how long SIGINT
// and SIGTERM let in-flight work drain.
const ShutdownTimeout = 20 * time.Second

// Options are what Main needs from its process; tests pass their own.
type Options struct {
	Args   []string // without the program name
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// OnListen, when set, is told the HTTP address once it accepts
	// connections (tests listen on port 0).
	OnListen func(addr string)
	// TuneGC makes serve set the garbage collector as GCFor says. The
	// binary sets it; tests that run serve beside others in one process
	// do not.
	TuneGC bool
}

// exitCode is how a command that failed with err exits: ExitUsage when a
// setting is at fault (a *config.Error names it), ExitFailed otherwise.
func exitCode(err error) int {
	var ce *config.Error
	if errors.As(err, &ce) {
		return ExitUsage
	}
	return ExitFailed
}

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // a command failed, or the check found problems
	ExitUsage  = 2 // bad arguments or configuration
)

// rootLong is what `taskloom --help` says after the commands.
const rootLong = `With no command, taskloom serves. Configuration is by environment; the flags
override it, and "taskloom serve --help" lists every variable.

Exit status: 0 done, 1 a command failed (or check found problems), 2 bad
arguments or configuration.`

// serviceFlags are the flags of the commands that load the configuration;
// each overrides its variable when given.
type serviceFlags struct {
	character, dataDir, httpAddr string
	out, in                      string // export's and import's file
}

func (f *serviceFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.character, "character", "", "an elizaOS-style character file (TASKLOOM_CHARACTER)")
	c.Flags().StringVar(&f.dataDir, "data-dir", "", "where the SQLite store lives (TASKLOOM_DATA_DIR)")
	c.Flags().StringVar(&f.httpAddr, "http-addr", "", "where to serve HTTP (TASKLOOM_HTTP_ADDR)")
}

// Main runs one taskloom command until it ends or ctx is canceled, and
// returns the process exit code.
func Main(ctx context.Context, o Options) int {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	root := command(o)
	// Never nil: cobra would read os.Args.
	root.SetArgs(append([]string{}, o.Args...))
	err := root.ExecuteContext(ctx)
	var ee *cli.ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	default: // cobra's: an unknown command
		fmt.Fprintf(o.Stderr, "taskloom: %v\nRun `taskloom --help` for the commands.\n", err)
		return ExitUsage
	}
}

// command is taskloom's command tree; each command prints its outcome
// and returns nil or a *cli.ExitError with its exit code.
func command(o Options) *cobra.Command {
	var flags serviceFlags
	service := func(name string) func(c *cobra.Command, args []string) error {
		return func(c *cobra.Command, args []string) error {
			if code := runService(c.Context(), o, name, c, &flags, args); code != ExitOK {
				return &cli.ExitError{Code: code}
			}
			return nil
		}
	}
	root := &cobra.Command{
		Use:           "taskloom",
		Short:         "background agent tasks from Discord, Slack, the terminal and an HTTP API",
		Long:          rootLong,
		Version:       version(),
		RunE:          service("serve"),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// Before the completion command is made: it keeps the writer.
	root.SetOut(o.Stdout)
	root.SetErr(o.Stderr)
	root.SetIn(o.Stdin)
	root.SetVersionTemplate("taskloom {{.Version}}\n")
	root.SetUsageTemplate(cli.UsageTemplate)
	root.SetHelpTemplate(cli.HelpTemplate)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(c.ErrOrStderr(), "taskloom: %v\nRun `%s --help` for its usage.\n", err, c.CommandPath())
		return &cli.ExitError{Code: ExitUsage}
	})
	flags.add(root)

	var env strings.Builder
	env.WriteString("Environment (the flags override it):\n")
	_ = config.WriteVars(&env)
	for _, c := range []*cobra.Command{
		{Use: "serve", Short: "run Taskloom (the default)", Long: env.String()},
		{Use: "migrate", Short: "apply database migrations and exit"},
		{Use: "check", Short: "replay every task's event log and verify it against the tasks table"},
		{Use: "prune", Short: "delete chat memories older than TASKLOOM_RETENTION (task events are kept)"},
		{Use: "export", Short: "write the whole store as a dump (JSON Lines) to --out or stdout",
			Long: "Writes every task with its events, steps and files, the schedules, memory, knowledge and pending notifications, from one consistent snapshot, also while replicas serve. The store is the one serve uses: DATABASE_URL, or SQLite in TASKLOOM_DATA_DIR. Moving stores: docs/deploy.md."},
		{Use: "import", Short: "load a dump from --in or stdin into a new, empty store",
			Long: "Migrates the store serve uses (DATABASE_URL, or SQLite in TASKLOOM_DATA_DIR) and loads the dump into it, keeping numbers, ids and times, in one transaction; then checks every task's events. Refuses a store that holds anything, and a dump cut short or written by a newer Taskloom."},
		{Use: "doctor", Short: "check the store, the model, the platforms and the sandbox, changing nothing",
			Long: "Runs every check serve makes at start and prints a table: the store (opened, not migrated), the model's endpoint (GET /models), each platform configured (its token), the sandbox when something needs it. Exits 1 when one failed."},
	} {
		c.RunE = service(c.Use)
		c.Args = cobra.ArbitraryArgs // runService refuses them in its words
		c.ValidArgsFunction = cobra.NoFileCompletions
		if c.Long == "" {
			c.Long = "The store is the one serve uses: DATABASE_URL, or SQLite in TASKLOOM_DATA_DIR."
		}
		flags.add(c)
		switch c.Use {
		case "export":
			c.Flags().StringVar(&flags.out, "out", "", "the file to write (default: standard output)")
		case "import":
			c.Flags().StringVar(&flags.in, "in", "", "the file to read (default: standard input)")
		}
		root.AddCommand(c)
	}
	root.AddCommand(&cobra.Command{
		Use:               "version",
		Short:             "print the version and the VCS revision it was built from",
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		Run:               func(c *cobra.Command, _ []string) { fmt.Fprintln(c.OutOrStdout(), "taskloom", version()) },
	})
	// A client of a running Taskloom: it needs no server configuration.
	root.AddCommand(cli.Command(o.Getenv), cli.SchedulesCommand(o.Getenv), cli.KnowledgeCommand(o.Getenv))
	root.SetHelpCommand(&cobra.Command{
		Use:               "help [command]",
		Short:             "print a command's help",
		ValidArgsFunction: helpCompletions,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				fmt.Fprintf(c.ErrOrStderr(), "taskloom: no help for %q\nRun `taskloom --help` for the commands.\n", strings.Join(args, " "))
				return &cli.ExitError{Code: ExitUsage}
			}
			return target.Help()
		},
	})
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil {
		comp.Short = "print a bash, zsh, fish or powershell completion script"
		comp.Args = cobra.ArbitraryArgs
		comp.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			fmt.Fprintf(c.ErrOrStderr(), "taskloom: no completion for the shell %q; want bash, zsh, fish or powershell\n", args[0])
			return &cli.ExitError{Code: ExitUsage}
		}
	}
	return root
}

// helpCompletions completes `taskloom help` with the commands.
func helpCompletions(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	target, _, err := c.Root().Find(args)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []cobra.Completion
	for _, sub := range target.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// runService runs serve, migrate, check or prune, which load the
// configuration, and returns the exit code.
func runService(ctx context.Context, o Options, cmd string, c *cobra.Command, flags *serviceFlags, args []string) int {
	cfg, err := config.Load(o.Getenv)
	if err == nil {
		err = applyFlags(&cfg, c, flags, args)
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom: %v\n", err)
		return ExitUsage
	}
	logTo := o.Stderr
	if cmd == "serve" && useConsole(cfg, o.Stdin) {
		// The chat is in the terminal: the log goes to a file, not
		// between its lines.
		f, path, err := openLogFile(cfg.DataDir)
		if err != nil {
			fmt.Fprintf(o.Stderr, "taskloom: %v\n", &config.Error{Var: "TASKLOOM_DATA_DIR", Reason: err.Error()})
			return ExitUsage
		}
		defer f.Close()
		fmt.Fprintf(o.Stderr, "taskloom: the log goes to %s while you chat here\n", path)
		logTo = f
	}
	log := newLogger(logTo, cfg.LogLevel)
	if cmd == "serve" && o.TuneGC {
		gc := GCFor(o.Getenv, CgroupMemoryLimit(os.DirFS("/")))
		defer gc.Apply()()
		log.Info("garbage collector", "settings", gc.Why)
	}
	var sandbox *actions.Sandbox
	fitted := false // the process limit was chosen to fit the host
	if cmd == "serve" && (cfg.RunCommand || stdioMCPServers(cfg) > 0) && o.Getenv("TASKLOOM_RUN_COMMAND_PROCESSES") == "" && !actions.CgroupLimits() {
		if n := fitProcesses(sandboxLimits(cfg), sandboxCount(cfg), hostMemory()); n != cfg.RunCommandProcesses {
			cfg.RunCommandProcesses, fitted = n, true
		}
	}
	if cmd == "serve" && (cfg.RunCommand || stdioMCPServers(cfg) > 0) {
		// The variable a refusal names: what asked for the sandbox.
		sandboxVar, networkVar := "TASKLOOM_MCP_SERVERS", "TASKLOOM_MCP_SERVERS"
		if cfg.RunCommand {
			sandboxVar = "TASKLOOM_RUN_COMMAND"
		}
		if cfg.RunCommand && cfg.RunCommandNetwork {
			networkVar = "TASKLOOM_RUN_COMMAND_NETWORK"
		}
		var egress *actions.Egress
		if sandboxNetwork(cfg) {
			egress = newEgress(cfg, log)
			if err := egress.Start(); err != nil {
				fmt.Fprintf(o.Stderr, "taskloom: %v\n", &config.Error{Var: networkVar, Reason: strings.ReplaceAll(err.Error(), "\n", " ")})
				return ExitUsage
			}
			defer egress.Close()
		}
		if sandbox, err = checkedSandbox(ctx, cfg, o.Getenv, egress, sandboxVar); err != nil {
			fmt.Fprintf(o.Stderr, "taskloom: %v\n", err)
			return ExitUsage
		}
		if cfg.RunCommand {
			log.Info("run_command: enabled, in a bwrap sandbox", "bwrap", sandbox.Bwrap, "network", cfg.RunCommandNetwork, "limits", sandbox.Limits.String())
		}
		if n := stdioMCPServers(cfg); n > 0 {
			log.Info("MCP stdio servers: in a bwrap sandbox, without a CPU time limit", "bwrap", sandbox.Bwrap, "servers", n, "limits", sandbox.Limits.String())
		}
		if fitted {
			log.Info("sandbox: without a cgroup the limits bind per process; the process limit is chosen so that all sandboxes together fit the host's memory (set TASKLOOM_RUN_COMMAND_PROCESSES to choose)",
				"processes", cfg.RunCommandProcesses, "sandboxes", sandboxCount(cfg), "host_memory", actions.FormatBytes(hostMemory()))
		}
		logSandboxWorstCase(cfg, log, sandbox.Limits, hostMemory())
		if os.Geteuid() != 0 {
			log.Warn("sandbox: the working directory's size is not bounded (a tmpfs for it needs root); each file still is, and /tmp", "file_size", actions.FormatBytes(cfg.RunCommandFileSize))
		}
	}

	if cmd == "serve" {
		warnRootMCP(cfg, log, os.Geteuid())
	}

	switch cmd {
	case "migrate":
		return runMigrate(ctx, cfg, log, o)
	case "check":
		return runCheck(ctx, cfg, log, o)
	case "prune":
		return runPrune(ctx, cfg, log, o)
	case "doctor":
		return runDoctor(ctx, cfg, log, o)
	case "export":
		return runExport(ctx, cfg, log, o, flags.out)
	case "import":
		return runImport(ctx, cfg, log, o, flags.in)
	}
	if err := serve(ctx, cfg, log, o, sandbox); err != nil {
		// Said once, as the last line, not logged as well.
		fmt.Fprintf(o.Stderr, "taskloom: %v\n", err)
		return exitCode(err)
	}
	return ExitOK
}

// applyFlags puts the flags given on c over cfg and validates it again.
func applyFlags(cfg *config.Config, c *cobra.Command, f *serviceFlags, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	for _, o := range []struct {
		name string
		from string
		to   *string
	}{{"character", f.character, &cfg.Character}, {"data-dir", f.dataDir, &cfg.DataDir}, {"http-addr", f.httpAddr, &cfg.HTTPAddr}} {
		if c.Flags().Changed(o.name) {
			*o.to = o.from
		}
	}
	return cfg.Validate()
}

// logFile is the log's file in the data directory while the console chat
// runs.
const logFile = "taskloom.log"

// openLogFile opens (appending) the log file in dir, making dir if need
// be, readable by its owner only: a log names rooms and people.
func openLogFile(dir string) (*os.File, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("the log's folder: %w", err)
	}
	path := filepath.Join(dir, logFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("the log file: %w", err)
	}
	return f, path, nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// version is "<version> (<revision>)", as `taskloom --version` and
// `taskloom version` print it after the name.
func version() string {
	bi, _ := debug.ReadBuildInfo()
	return VersionOf(bi, Version, Revision)
}

// VersionOf says which version and VCS revision a build is, from its
// build info (nil: none) and what -ldflags set, which wins. A build that
// recorded neither (go run, go test, a build outside a git checkout or
// with -buildvcs=false) says so rather than guess.
func VersionOf(bi *debug.BuildInfo, version, revision string) string {
	modified := false
	if bi != nil {
		if version == "" {
			version = bi.Main.Version // "(devel)" when the build did not know it
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if revision == "" {
					revision = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	if revision == "" {
		return version + " (no VCS revision recorded)"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if modified {
		revision += ", modified"
	}
	return version + " (" + revision + ")"
}

// openStore opens (and migrates) PostgreSQL when DATABASE_URL is set, the
// embedded SQLite store in the data directory otherwise.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (domain.Store, error) {
	st, err := openUnmigrated(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return st, nil
}

// openUnmigrated opens the configured store as it is.
func openUnmigrated(ctx context.Context, cfg config.Config, log *slog.Logger) (domain.Store, error) {
	var (
		st  domain.Store
		err error
	)
	if cfg.DatabaseURL != "" {
		st, err = postgres.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, &config.Error{Var: "DATABASE_URL", Reason: "cannot open the PostgreSQL store: " + err.Error()}
		}
		log.Info("store: PostgreSQL")
	} else {
		path := filepath.Join(cfg.DataDir, "taskloom.db")
		st, err = sqlite.Open(ctx, path)
		if err != nil {
			return nil, &config.Error{Var: "TASKLOOM_DATA_DIR", Reason: "cannot open the SQLite store " + path + ": " + err.Error()}
		}
		log.Info("store: embedded SQLite", "path", path)
	}
	return st, nil
}

// runMigrate migrates the store and says what it did: the migrations it
// applied, or that there were none to apply.
func runMigrate(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) int {
	st, err := openUnmigrated(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom migrate: %v\n", err)
		return exitCode(err)
	}
	defer st.Close()
	before := -1
	v, versioned := st.(versioned)
	if versioned {
		if before, _, err = v.SchemaVersion(ctx); err != nil {
			fmt.Fprintf(o.Stderr, "taskloom migrate: %v\n", err)
			return ExitFailed
		}
	}
	if err := st.Migrate(ctx); err != nil {
		fmt.Fprintf(o.Stderr, "taskloom migrate: migrate: %v\n", err)
		return ExitFailed
	}
	if !versioned {
		fmt.Fprintln(o.Stdout, "the schema is up to date")
		return ExitOK
	}
	after, _, err := v.SchemaVersion(ctx)
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom migrate: %v\n", err)
		return ExitFailed
	}
	if after == before {
		fmt.Fprintf(o.Stdout, "the schema is up to date (version %d); nothing to apply\n", after)
		return ExitOK
	}
	fmt.Fprintf(o.Stdout, "applied migrations %d to %d; the schema is up to date (version %d)\n", before+1, after, after)
	return ExitOK
}

// runPrune deletes the chat memories older than TASKLOOM_RETENTION, as a
// running service does every hour (docs/security.md).
func runPrune(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) int {
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom prune: %v\n", err)
		return exitCode(err)
	}
	defer st.Close()
	n, err := st.PruneMemories(ctx, time.Now().Add(-cfg.Retention))
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom prune: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintf(o.Stdout, "deleted %d chat memories older than %s; task events are kept\n", n, tasks.FormatDuration(cfg.Retention))
	return ExitOK
}

// runCheck replays every task's event log and verifies it (docs/tasks.md).
func runCheck(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) int {
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(o.Stderr, "taskloom check: %v\n", err)
		return exitCode(err)
	}
	defer st.Close()
	return checkStore(ctx, st, o, "taskloom check")
}

// checkStore replays every task's events against its row, prints what
// does not match and a last line of counts, and returns the exit code.
func checkStore(ctx context.Context, st domain.Store, o Options, who string) int {
	var checked, bad int
	for after := int64(0); ; {
		tasks, err := st.ListTasks(ctx, domain.TaskFilter{AfterNumber: after, Limit: 500})
		if err != nil {
			fmt.Fprintf(o.Stderr, "%s: list tasks: %v\n", who, err)
			return ExitFailed
		}
		if len(tasks) == 0 {
			break
		}
		for _, t := range tasks {
			after = t.Number
			evs, err := st.TaskEvents(ctx, t.Number, 0)
			if err != nil {
				fmt.Fprintf(o.Stderr, "%s: events of task #%d: %v\n", who, t.Number, err)
				return ExitFailed
			}
			steps, err := st.Steps(ctx, t.Number)
			if err != nil {
				fmt.Fprintf(o.Stderr, "%s: steps of task #%d: %v\n", who, t.Number, err)
				return ExitFailed
			}
			checked++
			v := domain.Check(t, evs, len(steps))
			if len(v) > 0 {
				bad++
			}
			for _, x := range v {
				fmt.Fprintln(o.Stdout, x.String())
			}
		}
	}
	unowned := false
	if uc, ok := st.(unownedCounter); ok {
		steps, events, err := uc.Unowned(ctx)
		if err != nil {
			fmt.Fprintf(o.Stderr, "%s: %v\n", who, err)
			return ExitFailed
		}
		if unowned = steps+events > 0; unowned {
			fmt.Fprintf(o.Stdout, "%d steps and %d events belong to no task\n", steps, events)
		}
	}
	fmt.Fprintf(o.Stdout, "checked %d tasks: %d with problems\n", checked, bad)
	if bad > 0 || unowned {
		return ExitFailed
	}
	return ExitOK
}

// unownedCounter is a store that counts the steps and events whose task
// does not exist (the SQL stores: sqlstore.Reads).
type unownedCounter interface {
	Unowned(ctx context.Context) (steps, events int64, err error)
}

// checker is a model that can check its configuration without spending
// a completion (adapters/openai).
type checker interface {
	Check(ctx context.Context) error
}

// modelCheckTimeout bounds the check of the model's endpoint at start.
const modelCheckTimeout = 10 * time.Second

// checkModel checks the model's endpoint once, beside start-up: what it
// finds wrong is one line naming the variable to look at. It stops
// nothing — tasks wait for a model that does not answer, as they would
// later.
func checkModel(ctx context.Context, c checker, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	defer cancel()
	err := c.Check(ctx)
	var p *openai.Problem
	switch {
	case err == nil:
		log.Info("model endpoint answers")
	case errors.As(err, &p):
		log.Warn(modelVariable(p.Setting) + ": " + p.Reason)
	default:
		log.Warn("the model endpoint could not be checked", "err", err)
	}
}

// modelVariable names the variable of a model setting a check found
// wrong.
func modelVariable(setting string) string {
	return map[string]string{openai.SettingBaseURL: "OPENAI_BASE_URL", openai.SettingAPIKey: "OPENAI_API_KEY",
		openai.SettingModel: "OPENAI_MODEL"}[setting]
}

// chatConns are the model connections kept for chat replies and
// evaluators beside the workers' own.
const chatConns = 8

// newModel picks the OpenAI-compatible model when a key or base URL is
// configured, the demo model otherwise.
func newModel(cfg config.Config, log *slog.Logger, clk clock.Clock) (plugin.Model, error) {
	if cfg.UseDemoModel {
		return demo.New(demo.Options{Clock: clk, Logger: log}), nil // it says so in the log
	}
	m, err := openai.New(openai.Config{APIKey: cfg.OpenAIKey, BaseURL: cfg.OpenAIBaseURL, Model: cfg.OpenAIModel, Clock: clk, Logger: log,
		MaxConns: cfg.Workers + chatConns})
	if err != nil {
		return nil, fmt.Errorf("OpenAI-compatible model: %w", err)
	}
	log.Info("model: OpenAI-compatible", "base_url", cfg.OpenAIBaseURL, "model", cfg.OpenAIModel)
	return m, nil
}

// serve runs the service until ctx is canceled, then drains.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, o Options, sandbox *actions.Sandbox) error {
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	clk := clock.Real{}
	st, err := openData(ctx, cfg, log, clk)
	if err != nil {
		return err
	}
	defer st.Close()
	model, err := newModel(cfg, log, clk)
	if err != nil {
		return err
	}
	if c, ok := model.(checker); ok {
		go checkModel(ctx, c, log)
	}
	character := plugin.DefaultCharacter()
	if cfg.Character != "" {
		if character, err = plugin.LoadCharacter(cfg.Character); err != nil {
			return &config.Error{Var: "TASKLOOM_CHARACTER", Value: cfg.Character, Reason: err.Error()}
		}
	}
	core := NewCore(CoreOptions{Config: cfg, Store: st, Model: model, Character: character, Clock: clk, Logger: log, Owner: replicaName(), Sandbox: sandbox,
		Getenv: o.Getenv})
	rt := core.Runtime
	built, err := buildPlatforms(platformEnv{cfg: cfg, rt: rt, log: log, clk: clk, o: o, quit: quit})
	if err != nil {
		return err
	}
	for _, b := range built {
		if err := rt.Register(b.plugin); err != nil {
			return err
		}
	}
	if err := checkApproveTools(cfg, rt); err != nil {
		return err
	}
	if err := checkAgents(cfg, rt); err != nil {
		return err
	}
	srv, api, err := newHTTP(cfg, log, clk, st, core, built)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (TASKLOOM_HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	httpServer := srv.HTTPServer()
	httpServer.RegisterOnShutdown(api.Close) // event streams would hold Shutdown up
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()

	if err := rt.Start(ctx); err != nil {
		_ = httpServer.Close()
		return err
	}
	api.MountPlugins(srv, rt.Routes())
	for _, name := range cfg.ApproveTools {
		if _, ok := rt.Action(name); !ok && strings.Contains(name, ".") {
			log.Warn("TASKLOOM_APPROVE_TOOLS names an MCP tool that its server does not offer (now); check the name", "tool", name)
		}
	}
	warnAgentTools(cfg, rt, log)
	srv.SetReady(true)
	log.Info("taskloom is running", "version", version(), "http", "http://"+ln.Addr().String(), "character", character.Name)
	if o.OnListen != nil {
		o.OnListen(ln.Addr().String())
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down: draining in-flight work")
	case err := <-serveErr:
		_ = rt.Stop(context.Background())
		return fmt.Errorf("HTTP server: %w", err)
	}
	srv.SetReady(false)
	drainAndStop(cfg, log, rt, httpServer)
	return nil
}

// openData makes the data directory and opens the store, moving in the
// task workspaces an earlier version kept on disk.
func openData(ctx context.Context, cfg config.Config, log *slog.Logger, clk clock.Clock) (domain.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, &config.Error{Var: "TASKLOOM_DATA_DIR", Value: cfg.DataDir, Reason: "cannot create the data directory: " + err.Error()}
	}
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	// Task files live in the store (docs/deploy.md); an earlier version's
	// workspace directories are moved in once. A failure leaves them for
	// the next start.
	ws := actions.Workspaces{Root: filepath.Join(cfg.DataDir, "workspaces")}
	if err := ws.Import(ctx, st, clk.Now(), log); err != nil {
		log.Error("cannot import the task workspaces of an earlier version; will try again at the next start", "err", err)
	}
	return st, nil
}

// newHTTP makes the HTTP server with the health checks, the API, the
// dashboard and the routes the platforms receive signed calls on.
func newHTTP(cfg config.Config, log *slog.Logger, clk clock.Clock, st domain.Store, core *Core, built []builtPlatform) (*httpapi.Server, *httpapi.API, error) {
	srv := httpapi.New(log, map[string]httpapi.Checker{"store": st.Ping})
	srv.SetInfo("model", core.Tasks.ModelState) // said, not checked: docs/tasks.md keeps readiness on the store
	hostname, _ := os.Hostname()
	if err := srv.SetIdentity(httpapi.Identity{PublicURL: cfg.PublicURL, ListenAddr: cfg.HTTPAddr, Hostname: hostname}); err != nil {
		return nil, nil, err
	}
	api := httpapi.NewAPI(httpapi.APIOptions{
		Store: st, Tasks: core.Tasks, Schedules: core.Schedules, Token: cfg.APIToken, Clock: clk, Logger: log, Runtime: core.Runtime,
		Metrics:       core.Metrics.Handler(),
		MaxIterations: cfg.MaxIterations, MaxStaleIterations: cfg.MaxStale,
	})
	api.Mount(srv)
	for _, b := range built {
		for pattern, h := range b.signed {
			srv.HandleSigned(pattern, h)
		}
	}
	return srv, api, nil
}

// drainAndStop stops the runtime and the HTTP server. Draining gets
// TASKLOOM_SHUTDOWN_TIMEOUT (docs/tasks.md); what still runs then is
// canceled and its tasks released unchanged. That is a normal stop,
// logged, not a failure: the process exits 0.
func drainAndStop(cfg config.Config, log *slog.Logger, rt *plugin.Runtime, httpServer *http.Server) {
	drain, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := rt.Stop(drain); err != nil {
		log.Warn("shutdown: work still running at the timeout was canceled", "timeout", cfg.ShutdownTimeout, "err", err)
	}
	if err := httpServer.Shutdown(drain); err != nil {
		log.Warn("shutdown: HTTP connections still open at the timeout were closed", "err", err)
		_ = httpServer.Close()
	}
	log.Info("taskloom stopped")
}

// onRealClock says whether c is the wall clock (or unset, which means
// it): then leases are measured on the store's clock, shared by every
// replica. A fake clock moves leases itself.
func onRealClock(c clock.Clock) bool {
	_, real := c.(clock.Real)
	return c == nil || real
}

// CoreOptions are what the core of Taskloom is built from.
type CoreOptions struct {
	Config    config.Config
	Store     domain.Store
	Model     plugin.Model
	Character plugin.Character // zero: the default
	Clock     clock.Clock
	Logger    *slog.Logger
	Owner     string // names this replica in leases and outbox claims
	// Sandbox runs run_command's commands when Config.RunCommand is set;
	// nil makes one from Config, unchecked (serve checks it at start-up),
	// with an egress proxy of its own when the network is allowed, which
	// the runtime starts and stops.
	Sandbox *actions.Sandbox
	// Getenv gives the PATH and HOME that stdio MCP servers are started
	// with; os.Getenv when nil.
	Getenv func(string) string
	// Strategies are strategies a plugin adds (tasks.Options.Strategies):
	// every place that offers a strategy reads the task service's list.
	Strategies map[string]tasks.Strategy
}

// Core is the runtime with the "model" and "orchestrator" plugins
// registered but not started: what every platform plugs into. Platform
// adapters register their plugin (depending on "orchestrator") on
// Core.Runtime before it starts; their end-to-end tests build a Core the
// same way serve does.
type Core struct {
	Runtime *plugin.Runtime
	Tasks   *tasks.Service
	Notify  *notify.Service
	// Schedules fires the schedules of docs/schedules.md.
	Schedules *schedules.Service
	Chat      *actions.Chat
	Metrics   *metrics.Recorder
}

// NewCore assembles the core.
func NewCore(o CoreOptions) *Core {
	cfg := o.Config
	if o.Owner == "" {
		o.Owner = replicaName()
	}
	rt := plugin.New(plugin.Options{Store: o.Store, Character: o.Character, Logger: o.Logger, Clock: o.Clock})
	rec := metrics.New(metrics.Options{Store: o.Store, Logger: o.Logger})
	notifyOpts := notify.Options{Runtime: rt, Interval: cfg.FlushInterval, Owner: o.Owner, Demo: plugin.IsDemo(o.Model), Metrics: rec,
		StoreClock: onRealClock(o.Clock), Style: cfg.NotifyStyle}
	if ps, ok := o.Store.(domain.PaceShares); ok {
		// PostgreSQL: the replicas sending as one bot share its pace
		// (docs/deploy.md, "What replicas share"); SQLite's one process
		// paces alone.
		notifyOpts.Shares = ps
	}
	notifier := notify.New(notifyOpts)
	taskOpts := tasks.Options{Runtime: rt, Workers: cfg.Workers, Lease: cfg.Lease, Owner: o.Owner, Notify: notifier.Outbox, Metrics: rec,
		Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, AnswerTimeout: cfg.AnswerTimeout, MaxActivePerUser: cfg.MaxActive,
		Retention: cfg.Retention, ApproveTools: cfg.ApproveTools, StoreClock: onRealClock(o.Clock),
		Strategies: o.Strategies,
	}
	// What the runtime remembers is recalled into chat prompts (the
	// relevant_memory provider) and every iteration's (docs/memory.md).
	recaller := &plugin.Recaller{Store: o.Store, Logger: o.Logger}
	if m, ok := o.Model.(*openai.Model); ok && cfg.EmbeddingModel != "" {
		recaller.Embed = m.Embedder(cfg.EmbeddingModel) // re-ranks; recall works without
	}
	taskOpts.Memory = recaller
	taskOpts.Agents, taskOpts.Team = teamOf(cfg)
	if l, ok := o.Store.(interface {
		ListenTasks(ctx context.Context) (<-chan struct{}, error)
	}); ok {
		taskOpts.Listen = l.ListenTasks // PostgreSQL: other replicas' new tasks wake us
	}
	taskService := tasks.New(taskOpts)
	scheduler := schedules.New(schedules.Options{Runtime: rt, Strategies: taskService.Strategies, Wake: taskService.Wake,
		MaxActive: cfg.MaxActive, MaxTokens: cfg.MaxTokens, MaxIterations: cfg.MaxIterations, MaxStaleIterations: cfg.MaxStale,
		MinInterval: cfg.ScheduleMinInterval, Admins: cfg.Admins})
	chat := &actions.Chat{Tasks: taskService, Schedules: scheduler, Admins: cfg.Admins, MaxIterations: cfg.MaxIterations, MaxStaleIterations: cfg.MaxStale}
	sandbox := o.Sandbox
	if sandbox == nil {
		sandbox = &actions.Sandbox{Network: cfg.RunCommandNetwork, Limits: sandboxLimits(cfg)}
		if sandboxNetwork(cfg) {
			sandbox.Egress = newEgress(cfg, o.Logger)
			if err := rt.Register(&plugin.Plugin{Name: "egress", Description: "the sandbox's egress proxy",
				Services: []plugin.Service{egressService{sandbox.Egress}}}); err != nil {
				panic(err) // the first plugin registered: cannot fail
			}
		}
	}
	tools := actions.Tools(actions.ToolConfig{
		HTTPAllowPrivate: cfg.HTTPAllowPrivate,
		RunCommand:       cfg.RunCommand,
		Sandbox:          sandbox,
		MaxActive:        cfg.MaxActive,
		MaxTokens:        cfg.MaxTokens,
	})
	// The MCP servers' tools are listed before the task service starts,
	// so a task's first iteration already sees them.
	orchestratorDeps := []string{"model"}
	if len(cfg.MCPServers) > 0 {
		if err := rt.Register(mcp.New(mcp.Options{Servers: mcpServers(cfg.MCPServers), Sandbox: sandbox, Logger: o.Logger, Getenv: o.Getenv}).Plugin()); err != nil {
			panic(err) // the first plugin registered: cannot fail
		}
		orchestratorDeps = append(orchestratorDeps, mcp.PluginName)
	}
	provided := []plugin.Provider{providers.RoomTasks{Store: o.Store}, providers.RecentMessages{Store: o.Store},
		providers.RelevantMemory{Store: o.Store, Recaller: recaller}}
	err := rt.Register(
		&plugin.Plugin{
			Name:        "model",
			Description: "the text model: OpenAI-compatible, or the demo model when none is configured",
			Models:      map[plugin.ModelType]plugin.Model{plugin.ModelText: o.Model},
		},
		&plugin.Plugin{
			Name:         "orchestrator",
			Description:  "background agent tasks: chat commands, the fair queue, one-call iterations, the tools tasks use, notifications",
			Dependencies: orchestratorDeps,
			Actions:      append(actions.Commands(chat), tools...),
			Providers:    provided,
			Evaluators:   []plugin.Evaluator{evaluators.Answer{Chat: chat}},
			// Stopped in reverse: the scheduler stops creating runs, the
			// task service drains, then the notifications its last
			// commits caused are sent.
			Services: []plugin.Service{notifier, taskService, scheduler},
		},
	)
	if err != nil {
		panic(err) // two fixed, distinct names: cannot fail
	}
	if cfg.Facts {
		facts := &evaluators.Facts{Runtime: rt}
		if err := rt.Register(&plugin.Plugin{Name: "facts", Dependencies: []string{"model"},
			Description: "durable facts drawn from conversations once they go quiet (docs/memory.md)",
			Evaluators:  []plugin.Evaluator{facts}, Services: []plugin.Service{facts}}); err != nil {
			panic(err) // a fixed name no other plugin has: cannot fail
		}
	}
	return &Core{Runtime: rt, Tasks: taskService, Notify: notifier, Schedules: scheduler, Chat: chat, Metrics: rec}
}

// mcpServers are TASKLOOM_MCP_SERVERS as the mcp adapter takes them.
func mcpServers(servers []config.MCPServer) []mcp.Server {
	out := make([]mcp.Server, 0, len(servers))
	for _, s := range servers {
		out = append(out, mcp.Server{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Network: s.Network, URL: s.URL})
	}
	return out
}

// stdioMCPServers counts the MCP servers that are commands, which run in
// the sandbox.
func stdioMCPServers(cfg config.Config) int {
	n := 0
	for _, s := range cfg.MCPServers {
		if s.Stdio() {
			n++
		}
	}
	return n
}

// sandboxNetwork says whether some sandbox may reach the network, and so
// needs the egress proxy: run_command's with TASKLOOM_RUN_COMMAND_NETWORK,
// or a stdio MCP server's whose configuration says "network": true.
func sandboxNetwork(cfg config.Config) bool {
	if cfg.RunCommand && cfg.RunCommandNetwork {
		return true
	}
	for _, s := range cfg.MCPServers {
		if s.Stdio() && s.Network {
			return true
		}
	}
	return false
}

// checkedSandbox makes the sandbox that run_command's commands and the
// stdio MCP servers run in, and runs true in it, so that where it cannot
// be made (no bwrap, user namespaces refused) start-up fails in one line
// naming variable (what asked for it) and saying why, rather than a
// task's first command or a server failing later: nothing runs outside
// the sandbox. bwrap is looked for on the PATH that getenv gives.
func checkedSandbox(ctx context.Context, cfg config.Config, getenv func(string) string, egress *actions.Egress, variable string) (*actions.Sandbox, error) {
	what := "the run_command sandbox"
	if variable == "TASKLOOM_MCP_SERVERS" {
		what = "the sandbox MCP stdio servers run in"
	}
	refuse := func(err error) error {
		return &config.Error{Var: variable, Reason: what + " cannot be made: " + strings.ReplaceAll(err.Error(), "\n", " ")}
	}
	bwrap, err := actions.LookBwrap(getenv("PATH"))
	if err != nil {
		return nil, refuse(err)
	}
	sandbox := &actions.Sandbox{Bwrap: bwrap, Network: cfg.RunCommandNetwork, Egress: egress, Limits: sandboxLimits(cfg)}
	if err := sandbox.Check(ctx); err != nil {
		return nil, refuse(err)
	}
	return sandbox, nil
}

// warnRootMCP logs, in one line, that stdio MCP servers are started by a
// Taskloom that runs as root (uid). They run in the sandbox as nobody,
// not as root, and see none of Taskloom's secrets; but Taskloom itself
// needs root only to bound the sandbox's writable space and to mount a
// server's files from folders closed to nobody, and a root process is a
// larger prize should anything of it be subverted.
func warnRootMCP(cfg config.Config, log *slog.Logger, uid int) {
	if uid != 0 || stdioMCPServers(cfg) == 0 {
		return
	}
	log.Warn("Taskloom runs as root with stdio MCP servers configured: they run sandboxed as nobody (uid 65534), but Taskloom needs no root for them; prefer an unprivileged user", "mcp_servers", stdioMCPServers(cfg))
}

// logSandboxWorstCase says how the sandbox's limits bind here (over each
// sandbox in a cgroup, or process by process) and the most memory all
// sandboxes that may run at once can hold: one a worker with
// run_command, one a stdio MCP server. When that is more than the host's
// memory (host, 0 when unknown) it warns, with what to change.
func logSandboxWorstCase(cfg config.Config, log *slog.Logger, l actions.Limits, host int64) {
	n := int64(sandboxCount(cfg))
	perSandbox := actions.CgroupLimits()
	worst := n * l.WorstCase(perSandbox)
	log.Info("sandbox: limits bind "+actions.CgroupMode(), "sandboxes", n, "worst_case", actions.FormatBytes(worst), "host_memory", actions.FormatBytes(host))
	if host > 0 && worst > host {
		cure := "lower TASKLOOM_RUN_COMMAND_MEMORY or TASKLOOM_WORKERS"
		if !perSandbox {
			cure = "delegate the memory and pids cgroup v2 controllers to Taskloom (systemd: Delegate=memory pids), so that each sandbox's limits are its total, or lower TASKLOOM_RUN_COMMAND_PROCESSES, TASKLOOM_RUN_COMMAND_MEMORY or TASKLOOM_WORKERS"
		}
		log.Warn("sandbox: all sandboxes together could hold more memory than the host has; the kernel's OOM killer takes sandboxed processes first; "+cure,
			"sandboxes", n, "worst_case", actions.FormatBytes(worst), "host_memory", actions.FormatBytes(host))
	}
}

// sandboxCount is how many sandboxes may run at once: one a worker with
// run_command, one a stdio MCP server.
func sandboxCount(cfg config.Config) int {
	n := stdioMCPServers(cfg)
	if cfg.RunCommand {
		n += cfg.Workers
	}
	return n
}

// The process limit fitProcesses chooses from. Below 32, runtimes that
// start a thread a core fail on a small host already (measured on 2
// cores: Java 17 needs about 20, npm 16); 128 is the default.
const (
	fitProcessesMin = 32
	fitProcessesMax = actions.DefaultProcessLimit
)

// fitProcesses is the process limit under which n sandboxes with the
// limits l, bound process by process, hold together at most three
// quarters of the host's memory (host; the rest is Taskloom's, the
// database's and the system's), between fitProcessesMin and
// fitProcessesMax; l's own when host or n is unknown.
func fitProcesses(l actions.Limits, n int, host int64) int {
	if host <= 0 || n <= 0 {
		return l.Processes
	}
	perProcess := l.Memory + actions.StackLimit // as Limits.WorstCase counts it
	room := host/4*3/int64(n) - l.Disk
	return int(min(max(room/perProcess, fitProcessesMin), fitProcessesMax))
}

// hostMemory is the memory Taskloom's host gives it: MemTotal, or its
// cgroup's limit when lower; 0 when unknown.
func hostMemory() int64 {
	if limit := CgroupMemoryLimit(os.DirFS("/")); limit > 0 {
		if total := memTotal(); total == 0 || limit < total {
			return limit
		}
	}
	return memTotal()
}

// memTotal is the host's memory (MemTotal), or 0 when unknown.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// sandboxLimits are the TASKLOOM_RUN_COMMAND_* limits.
func sandboxLimits(cfg config.Config) actions.Limits {
	return actions.Limits{Memory: cfg.RunCommandMemory, Processes: cfg.RunCommandProcesses, FileSize: cfg.RunCommandFileSize,
		Disk: cfg.RunCommandDisk, CPU: cfg.RunCommandCPU}
}

// newEgress makes the sandbox's egress proxy, which refuses Taskloom's
// own addresses (its listen address and public URL) besides what
// http_get refuses.
func newEgress(cfg config.Config, log *slog.Logger) *actions.Egress {
	var own []string
	if host, _, err := net.SplitHostPort(cfg.HTTPAddr); err == nil && host != "" {
		own = append(own, host)
	}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "" {
		own = append(own, u.Hostname())
	}
	return actions.NewEgress(actions.EgressOptions{OwnHosts: own, Logger: log})
}

// egressService starts and stops an egress proxy with the runtime.
type egressService struct{ e *actions.Egress }

func (egressService) Name() string                  { return "egress" }
func (s egressService) Start(context.Context) error { return s.e.Start() }
func (s egressService) Stop(context.Context) error  { return s.e.Close() }

// replicaName names this process in leases and outbox claims.
func replicaName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// useConsole says whether to chat in the terminal: TASKLOOM_CONSOLE=true or
// false decides; otherwise yes when no platform is configured and stdin is
// a terminal.
func useConsole(cfg config.Config, stdin io.Reader) bool {
	if stdin == nil {
		return false
	}
	if cfg.Console != nil {
		return *cfg.Console
	}
	if cfg.DiscordToken != "" || cfg.SlackBotToken != "" {
		return false
	}
	// A character device is not enough: /dev/null is one, and a service
	// started with it must not read EOF and shut down.
	f, ok := stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func consoleUser(getenv func(string) string) string {
	if u := getenv("USER"); u != "" {
		return u
	}
	return "console"
}
