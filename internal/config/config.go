package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Config is everything Taskloom reads from its environment.
type Config struct {
	DatabaseURL string // empty: embedded SQLite in DataDir
	DataDir     string
	HTTPAddr    string
	APIToken    string
	// PublicURL is where people reach the service when it is not at a
	// loopback address or at TASKLOOM_HTTP_ADDR, e.g. behind a reverse
	// proxy (TASKLOOM_PUBLIC_URL): the HTTP server answers to its host and
	// takes its origin as its own. Empty when not set.
	PublicURL string

	OpenAIKey     string
	OpenAIBaseURL string
	OpenAIModel   string
	// UseDemoModel is true when neither an OpenAI key nor a base URL is
	// configured.
	UseDemoModel bool

	DiscordToken         string
	DiscordApplicationID string
	DiscordAPIURL        string
	// DiscordShardID and DiscordShardCount split the bot's gateway across
	// replicas (DISCORD_SHARD_ID, DISCORD_SHARD_COUNT): this replica runs
	// shard DiscordShardID of DiscordShardCount. A count of 0 means no
	// sharding (one gateway connection for every guild).
	DiscordShardID    int
	DiscordShardCount int
	// DiscordThreads gives a task created in a Discord channel a thread of
	// its own, where it reports (TASKLOOM_DISCORD_THREADS).
	DiscordThreads bool
	// Console, when set, says whether to chat in the terminal
	// (TASKLOOM_CONSOLE); nil leaves it to whether a platform is
	// configured and stdin is a terminal.
	Console *bool

	SlackBotToken      string
	SlackAppToken      string
	SlackSigningSecret string
	SlackAPIURL        string

	FlushInterval time.Duration
	// NotifyStyle is how progress reaches chat rooms
	// (TASKLOOM_NOTIFY_STYLE): NotifyBatch or NotifyCard.
	NotifyStyle   string
	Workers       int
	MaxIterations int
	MaxStale      int
	Lease         time.Duration
	Admins        []string

	// RunCommand registers the run_command tool (TASKLOOM_RUN_COMMAND).
	// Start-up fails when its sandbox cannot be made.
	RunCommand bool
	// RunCommandNetwork lets run_command's sandbox reach public addresses
	// through Taskloom's egress proxy (TASKLOOM_RUN_COMMAND_NETWORK);
	// without it, it has no network at all.
	RunCommandNetwork bool
	// The limits of a sandboxed command: memory in bytes
	// (TASKLOOM_RUN_COMMAND_MEMORY), processes
	// (TASKLOOM_RUN_COMMAND_PROCESSES), the size of a file written
	// (TASKLOOM_RUN_COMMAND_FILE_SIZE), writable space
	// (TASKLOOM_RUN_COMMAND_DISK) and CPU time (TASKLOOM_RUN_COMMAND_CPU).
	RunCommandMemory    int64
	RunCommandProcesses int
	RunCommandFileSize  int64
	RunCommandDisk      int64
	RunCommandCPU       time.Duration
	// HTTPAllowPrivate lets http_get reach loopback and private addresses
	// (TASKLOOM_HTTP_GET_ALLOW_PRIVATE).
	HTTPAllowPrivate bool

	// Dependable runs (docs/tasks.md).
	AnswerTimeout   time.Duration // TASKLOOM_ANSWER_TIMEOUT
	MaxTokens       int64         // TASKLOOM_MAX_TOKENS; 0 is no limit
	Temperature     float64       // TASKLOOM_TEMPERATURE
	ShutdownTimeout time.Duration // TASKLOOM_SHUTDOWN_TIMEOUT

	// Safe by default (docs/security.md).
	// ApproveTools are the tools a person must approve
	// (TASKLOOM_APPROVE_TOOLS; "none" for none).
	ApproveTools []string
	MaxActive    int // TASKLOOM_MAX_ACTIVE
	// ScheduleMinInterval is the shortest gap between two runs of a
	// schedule (TASKLOOM_SCHEDULE_MIN_INTERVAL, docs/schedules.md).
	ScheduleMinInterval time.Duration
	Retention           time.Duration // TASKLOOM_RETENTION

	// Memory (docs/memory.md). Facts runs the facts evaluator
	// (TASKLOOM_FACTS, default true); EmbeddingModel, when set, re-ranks
	// what is recalled by embedding similarity (OPENAI_EMBEDDING_MODEL).
	Facts          bool
	EmbeddingModel string

	Character string // path of a character file; "" for the default
	LogLevel  string // debug, info, warn, error

	// MCPServers are the MCP servers whose tools tasks can call
	// (TASKLOOM_MCP_SERVERS), sorted by name.
	MCPServers []MCPServer

	// Agents are the team of the multi-agent strategies, from the file
	// AgentsFile (TASKLOOM_AGENTS); nil for the built-in researcher,
	// writer and reviewer. GroupChatSpeaker is how a group chat chooses
	// who speaks (TASKLOOM_GROUP_CHAT_SPEAKER: round_robin or model).
	Agents           []Agent
	AgentsFile       string
	GroupChatSpeaker string
}

// MCPServer is one server of TASKLOOM_MCP_SERVERS: a command spoken to
// over stdio (Command, Args, Env, Network), which runs in the sandbox,
// or a streamable HTTP endpoint (URL). Its tools are the actions
// "<Name>.<tool>".
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	// Network lets a stdio server reach public addresses through the
	// sandbox's egress proxy; without it, it has no network.
	Network bool
	URL     string
}

// Stdio says whether the server is a command spoken to over stdio.
func (s MCPServer) Stdio() bool { return s.Command != "" }

// Defaults (docs/configuration.md).
const (
	DefaultDataDir       = "./.taskloom"
	DefaultHTTPAddr      = "127.0.0.1:8080"
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	DefaultOpenAIModel   = "gpt-4o-mini"
	DefaultDiscordAPIURL = "https://discord.com/"
	DefaultSlackAPIURL   = "https://slack.com/api/"
	DefaultMaxTokens     = 1_000_000
)

// Error is a configuration value that cannot be used.
type Error struct {
	Var    string
	Value  string
	Reason string
}

// Error is one line, whatever the reason wraps (a driver's error may run
// over several).
func (e *Error) Error() string {
	reason := strings.Join(strings.Fields(e.Reason), " ")
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Var, reason)
	}
	return fmt.Sprintf("%s=%q: %s", e.Var, e.Value, reason)
}

// Load reads the configuration through getenv (os.Getenv in production)
// and validates it. The first bad value is returned as an *Error.
func Load(getenv func(string) string) (Config, error) {
	r := reader{getenv: declared(getenv)} // every name read is in Vars, which the help lists
	c := Config{
		DatabaseURL:          r.str("DATABASE_URL", ""),
		DataDir:              r.str("TASKLOOM_DATA_DIR", DefaultDataDir),
		HTTPAddr:             r.str("TASKLOOM_HTTP_ADDR", DefaultHTTPAddr),
		APIToken:             r.secret("TASKLOOM_API_TOKEN"),
		PublicURL:            r.httpURL("TASKLOOM_PUBLIC_URL"),
		OpenAIKey:            r.secret("OPENAI_API_KEY"),
		OpenAIBaseURL:        r.str("OPENAI_BASE_URL", ""),
		OpenAIModel:          r.str("OPENAI_MODEL", DefaultOpenAIModel),
		DiscordToken:         r.secret("DISCORD_BOT_TOKEN"),
		DiscordApplicationID: r.str("DISCORD_APPLICATION_ID", ""),
		DiscordAPIURL:        r.str("DISCORD_API_URL", DefaultDiscordAPIURL),
		DiscordThreads:       r.boolean("TASKLOOM_DISCORD_THREADS"),
		Console:              r.optionalBool("TASKLOOM_CONSOLE"),
		SlackBotToken:        r.secret("SLACK_BOT_TOKEN"),
		SlackAppToken:        r.secret("SLACK_APP_TOKEN"),
		SlackSigningSecret:   r.secret("SLACK_SIGNING_SECRET"),
		SlackAPIURL:          r.str("SLACK_API_URL", DefaultSlackAPIURL),
		FlushInterval:        r.duration("TASKLOOM_FLUSH_INTERVAL", 5*time.Second, time.Second, time.Hour),
		NotifyStyle:          r.notifyStyle("TASKLOOM_NOTIFY_STYLE"),
		Workers:              r.integer("TASKLOOM_WORKERS", 1, 1, 256),
		MaxIterations:        r.integer("TASKLOOM_MAX_ITERATIONS", 50, 1, 10000),
		MaxStale:             r.integer("TASKLOOM_MAX_STALE", 3, 1, 1000),
		Lease:                r.duration("TASKLOOM_LEASE", 2*time.Minute, time.Second, 24*time.Hour),
		Admins:               r.list("TASKLOOM_ADMINS"),
		RunCommand:           r.boolean("TASKLOOM_RUN_COMMAND"),
		RunCommandNetwork:    r.boolean("TASKLOOM_RUN_COMMAND_NETWORK"),
		RunCommandMemory:     r.bytes("TASKLOOM_RUN_COMMAND_MEMORY", 512<<20, 16<<20, 1<<40),
		RunCommandProcesses:  r.integer("TASKLOOM_RUN_COMMAND_PROCESSES", 128, 8, 100000),
		RunCommandFileSize:   r.bytes("TASKLOOM_RUN_COMMAND_FILE_SIZE", 64<<20, 16<<20, 1<<40),
		RunCommandDisk:       r.bytes("TASKLOOM_RUN_COMMAND_DISK", 256<<20, 16<<20, 1<<40),
		RunCommandCPU:        r.duration("TASKLOOM_RUN_COMMAND_CPU", 60*time.Second, time.Second, 24*time.Hour),
		HTTPAllowPrivate:     r.boolean("TASKLOOM_HTTP_GET_ALLOW_PRIVATE"),
		AnswerTimeout:        r.duration("TASKLOOM_ANSWER_TIMEOUT", 24*time.Hour, time.Minute, 365*24*time.Hour),
		MaxTokens:            r.int64("TASKLOOM_MAX_TOKENS", DefaultMaxTokens, 0, 1<<40),
		Temperature:          r.float("TASKLOOM_TEMPERATURE", 0.2, 0, 1),
		ShutdownTimeout:      r.duration("TASKLOOM_SHUTDOWN_TIMEOUT", 20*time.Second, time.Second, time.Hour),
		ApproveTools:         r.toolList("TASKLOOM_APPROVE_TOOLS", []string{"run_command"}),
		MaxActive:            r.integer("TASKLOOM_MAX_ACTIVE", 20, 1, 100000),
		ScheduleMinInterval:  r.duration("TASKLOOM_SCHEDULE_MIN_INTERVAL", time.Minute, time.Second, 24*time.Hour),
		Retention:            r.duration("TASKLOOM_RETENTION", 720*time.Hour, time.Hour, 100*365*24*time.Hour),
		Facts:                r.defaultTrue("TASKLOOM_FACTS"),
		EmbeddingModel:       strings.TrimSpace(r.str("OPENAI_EMBEDDING_MODEL", "")),
		Character:            r.str("TASKLOOM_CHARACTER", ""),
		LogLevel:             strings.ToLower(r.str("TASKLOOM_LOG_LEVEL", "info")),
		MCPServers:           r.mcpServers("TASKLOOM_MCP_SERVERS"),
		Agents:               r.agents("TASKLOOM_AGENTS"),
		AgentsFile:           r.str("TASKLOOM_AGENTS", ""),
		GroupChatSpeaker:     r.speaker("TASKLOOM_GROUP_CHAT_SPEAKER"),
	}
	c.DiscordShardID, c.DiscordShardCount = r.shard("DISCORD_SHARD_ID", "DISCORD_SHARD_COUNT")
	if r.err != nil {
		return Config{}, r.err
	}
	c.UseDemoModel = c.OpenAIKey == "" && c.OpenAIBaseURL == ""
	if c.OpenAIBaseURL == "" {
		c.OpenAIBaseURL = DefaultOpenAIBaseURL
	}
	return c, c.Validate()
}

// Validate checks values that depend on each other or on their form. Flag
// overrides are applied before it is called again.
func (c Config) Validate() error {
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return &Error{Var: "DATABASE_URL", Value: redact(c.DatabaseURL), Reason: "want a postgres:// URL, or nothing for the embedded SQLite store"}
		}
	}
	if strings.TrimSpace(c.DataDir) == "" {
		return &Error{Var: "TASKLOOM_DATA_DIR", Reason: "is empty"}
	}
	host, port, err := net.SplitHostPort(c.HTTPAddr)
	if err != nil {
		return &Error{Var: "TASKLOOM_HTTP_ADDR", Value: c.HTTPAddr, Reason: "want host:port, e.g. 127.0.0.1:8080"}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return &Error{Var: "TASKLOOM_HTTP_ADDR", Value: c.HTTPAddr, Reason: "the port is not a number from 0 to 65535"}
	}
	if err := c.checkAPIToken(host); err != nil {
		return err
	}
	for _, u := range []struct{ name, value string }{
		{"OPENAI_BASE_URL", c.OpenAIBaseURL},
		{"DISCORD_API_URL", c.DiscordAPIURL},
		{"SLACK_API_URL", c.SlackAPIURL},
	} {
		if err := checkHTTPURL(u.value); err != nil {
			return &Error{Var: u.name, Value: u.value, Reason: err.Error()}
		}
	}
	if c.DiscordShardCount < 0 || c.DiscordShardID < 0 || (c.DiscordShardCount == 0 && c.DiscordShardID != 0) ||
		(c.DiscordShardCount > 0 && c.DiscordShardID >= c.DiscordShardCount) {
		return &Error{Var: "DISCORD_SHARD_ID", Value: strconv.Itoa(c.DiscordShardID),
			Reason: fmt.Sprintf("want a shard from 0 to DISCORD_SHARD_COUNT-1 (DISCORD_SHARD_COUNT is %d)", c.DiscordShardCount)}
	}
	if strings.TrimSpace(c.OpenAIModel) == "" {
		return &Error{Var: "OPENAI_MODEL", Reason: "is empty"}
	}
	if c.SlackAppToken != "" && !strings.HasPrefix(c.SlackAppToken, "xapp-") {
		return &Error{Var: "SLACK_APP_TOKEN", Reason: "an app-level token starts with xapp-"}
	}
	if c.SlackBotToken != "" && c.SlackAppToken == "" && c.SlackSigningSecret == "" {
		return &Error{Var: "SLACK_SIGNING_SECRET", Reason: "is needed for the HTTP Events API when SLACK_APP_TOKEN (Socket Mode) is not set"}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return &Error{Var: "TASKLOOM_LOG_LEVEL", Value: c.LogLevel, Reason: "want debug, info, warn or error"}
	}
	return nil
}

// MinAPITokenLength is the fewest characters TASKLOOM_API_TOKEN may have:
// a shorter token can be guessed by anyone who can reach the API.
const MinAPITokenLength = 32

// checkAPIToken refuses a token too short to be a secret, and a missing
// one whenever people reach the API from another machine: through a
// listen address that is not a loopback one, or through the public URL
// (a reverse proxy on the same machine reaches a loopback address, yet
// forwards everyone's requests). listenHost is the host of HTTPAddr.
func (c Config) checkAPIToken(listenHost string) error {
	if n := utf8.RuneCountInString(c.APIToken); n > 0 && n < MinAPITokenLength {
		return &Error{Var: "TASKLOOM_API_TOKEN", Reason: fmt.Sprintf(
			"is %d characters, want at least %d (e.g. the output of openssl rand -hex 32)", n, MinAPITokenLength)}
	}
	if c.APIToken != "" {
		return nil
	}
	if !IsLoopback(listenHost) {
		return &Error{Var: "TASKLOOM_API_TOKEN", Reason: fmt.Sprintf("must be set to serve the API on %s, which is not a loopback address", c.HTTPAddr)}
	}
	if c.PublicURL != "" {
		return &Error{Var: "TASKLOOM_API_TOKEN", Reason: "must be set with TASKLOOM_PUBLIC_URL: people reach the API from elsewhere through it"}
	}
	return nil
}

// IsLoopback reports whether a listen host only accepts local
// connections. An empty host listens everywhere, so it is not.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http:// or https:// URL")
	}
	return nil
}

// redact hides a password in a URL.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// reader keeps the first error so Load reads as a list of fields.
type reader struct {
	getenv func(string) string
	err    error
}

func (r *reader) fail(e *Error) {
	if r.err == nil {
		r.err = e
	}
}

// secret reads a token, key or signing secret. One that holds white space
// or a control character anywhere — the comment an environment file kept
// after the value, a pasted line break, nothing but spaces — is refused:
// used as it is, every client with the real secret would be refused (or
// the platform would refuse the bot) with nothing saying why. The value is
// never echoed.
func (r *reader) secret(name string) string {
	v := r.getenv(name)
	if i := strings.IndexFunc(v, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }); i >= 0 {
		what := "white space"
		if c, _ := utf8.DecodeRuneInString(v[i:]); !unicode.IsSpace(c) {
			what = "a control character"
		}
		r.fail(&Error{Var: name, Reason: fmt.Sprintf("contains %s at character %d; a secret has none (is there a comment after the value, or a line break?)",
			what, utf8.RuneCountInString(v[:i])+1)})
		return ""
	}
	return v
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) integer(name string, def, lo, hi int) int {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.fail(&Error{Var: name, Value: v, Reason: fmt.Sprintf("want a whole number from %d to %d", lo, hi)})
		return def
	}
	return n
}

func (r *reader) int64(name string, def, lo, hi int64) int64 {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		r.fail(&Error{Var: name, Value: v, Reason: fmt.Sprintf("want a whole number from %d to %d", lo, hi)})
		return def
	}
	return n
}

// bytes reads a size: a whole number of bytes, or one with a unit —
// KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T and KB, MB, GB, TB mean
// the same).
func (r *reader) bytes(name string, def, lo, hi int64) int64 {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	n, ok := parseBytes(v)
	if !ok || n < lo || n > hi {
		r.fail(&Error{Var: name, Value: v, Reason: fmt.Sprintf("want a size from %s to %s, such as 512MiB or 1GiB", formatBytes(lo), formatBytes(hi))})
		return def
	}
	return n
}

func parseBytes(v string) (int64, bool) {
	i := strings.IndexFunc(v, func(c rune) bool { return c < '0' || c > '9' })
	digits, unit := v, ""
	if i >= 0 {
		digits, unit = v[:i], strings.ToUpper(strings.TrimSpace(v[i:]))
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20,
		"G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}
	s, ok := shift[unit]
	if !ok || n > (1<<62)>>s {
		return 0, false
	}
	return n << s, true
}

func formatBytes(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}

func (r *reader) float(name string, def, lo, hi float64) float64 {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < lo || f > hi {
		r.fail(&Error{Var: name, Value: v, Reason: fmt.Sprintf("want a number from %g to %g", lo, hi)})
		return def
	}
	return f
}

// toolList reads a comma-separated list of tool names: unset gives def,
// "none" gives none. A name must look like a tool's (letters, digits, _,
// - and . for MCP tools).
func (r *reader) toolList(name string, def []string) []string {
	v := strings.TrimSpace(r.getenv(name))
	switch {
	case v == "":
		return def
	case strings.EqualFold(v, "none"):
		return nil
	}
	out := r.list(name)
	for _, t := range out {
		if strings.TrimFunc(t, func(c rune) bool {
			return c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		}) != "" {
			r.fail(&Error{Var: name, Value: v, Reason: fmt.Sprintf("%q is not a tool name; want names such as run_command,http_get, or none", t)})
			return def
		}
	}
	return out
}

func (r *reader) duration(name string, def, lo, hi time.Duration) time.Duration {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(&Error{Var: name, Value: v, Reason: "want a duration such as 5s, 2m or 1h"})
		return def
	}
	if d < lo || d > hi {
		r.fail(&Error{Var: name, Value: v, Reason: fmt.Sprintf("want a duration from %s to %s", lo, hi)})
		return def
	}
	return d
}

// httpURL reads an optional http:// or https:// URL naming a host, such
// as https://taskloom.example.com. It carries no user name or password:
// it is compared with what browsers send, which never has them.
func (r *reader) httpURL(name string) string {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		r.fail(&Error{Var: name, Value: redact(v), Reason: "want an http:// or https:// URL with a host and no user, e.g. https://taskloom.example.com"})
		return ""
	}
	return v
}

func (r *reader) boolean(name string) bool {
	b := r.optionalBool(name)
	return b != nil && *b
}

// defaultTrue reads a boolean that is true unless set to false.
func (r *reader) defaultTrue(name string) bool {
	b := r.optionalBool(name)
	return b == nil || *b
}

// optionalBool reads a boolean that may be left unset (nil): true, false,
// 1, 0, yes, no, on or off, in any case. Anything else stops start-up.
func (r *reader) optionalBool(name string) *bool {
	v := strings.TrimSpace(r.getenv(name))
	var b bool
	switch strings.ToLower(v) {
	case "":
		return nil
	case "1", "t", "true", "yes", "on":
		b = true
	case "0", "f", "false", "no", "off":
		b = false
	default:
		r.fail(&Error{Var: name, Value: v, Reason: "want true or false"})
		return nil
	}
	return &b
}

// shard reads a shard ID and a shard count that are set together or not
// at all; neither set gives 0, 0 (no sharding).
func (r *reader) shard(idVar, countVar string) (id, count int) {
	idSet := strings.TrimSpace(r.getenv(idVar)) != ""
	countSet := strings.TrimSpace(r.getenv(countVar)) != ""
	switch {
	case !idSet && !countSet:
		return 0, 0
	case !countSet:
		r.fail(&Error{Var: countVar, Reason: "must be set with " + idVar + " (both or neither)"})
		return 0, 0
	case !idSet:
		r.fail(&Error{Var: idVar, Reason: "must be set with " + countVar + " (both or neither)"})
		return 0, 0
	}
	count = r.integer(countVar, 0, 1, 1<<16)
	id = r.integer(idVar, 0, 0, 1<<16)
	if r.err == nil && id >= count {
		r.fail(&Error{Var: idVar, Value: strconv.Itoa(id), Reason: fmt.Sprintf("want a shard from 0 to %d (%s is %d)", count-1, countVar, count)})
	}
	return id, count
}

func (r *reader) list(name string) []string {
	var out []string
	for _, f := range strings.Split(r.getenv(name), ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// maxMCPServerName bounds a server's name, which begins each of its
// tools' action names.
const maxMCPServerName = 64

// mcpServers reads TASKLOOM_MCP_SERVERS: a JSON object from server name
// to {"command", "args", "env", "network"} or {"url"}. The value is never repeated in
// an error: a server's env may hold its keys.
func (r *reader) mcpServers(name string) []MCPServer {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return nil
	}
	bad := func(format string, args ...any) []MCPServer {
		r.fail(&Error{Var: name, Reason: fmt.Sprintf(format, args...)})
		return nil
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &byName); err != nil || byName == nil {
		return bad(`want a JSON object from server name to {"command": ..., "args": [...], "env": {...}, "network": false} or {"url": "https://..."}, e.g. {"files": {"command": "mcp-files", "args": ["/srv"]}}`)
	}
	var out []MCPServer
	for _, server := range slices.Sorted(maps.Keys(byName)) {
		raw := byName[server]
		if !mcpServerName(server) {
			return bad("the server name %q is not usable in tool names (%s.<tool>): want 1 to %d letters, digits, _ or -", server, server, maxMCPServerName)
		}
		var s struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			Network bool              `json:"network"`
			URL     string            `json:"url"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return bad("server %q: want an object with command, args, env and network, or url: %s", server, strings.TrimPrefix(err.Error(), "json: "))
		}
		s.Command, s.URL = strings.TrimSpace(s.Command), strings.TrimSpace(s.URL)
		switch {
		case s.Command == "" && s.URL == "":
			return bad("server %q has neither a command (stdio) nor a url (streamable HTTP)", server)
		case s.Command != "" && s.URL != "":
			return bad("server %q has both a command and a url; give one", server)
		case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0):
			return bad("server %q: args and env are for a command, not a url", server)
		case s.URL != "" && s.Network:
			return bad("server %q: network is for a command, which runs in the sandbox; Taskloom itself reaches a url", server)
		case s.URL != "" && checkHTTPURL(s.URL) != nil:
			return bad("server %q: the url is not an http:// or https:// URL", server)
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return bad("server %q: %q is not an environment variable name", server, k)
			}
		}
		out = append(out, MCPServer{Name: server, Command: s.Command, Args: s.Args, Env: s.Env, Network: s.Network, URL: s.URL})
	}
	return out
}

// mcpServerName says whether a server name can begin its tools' names:
// letters, digits, _ and -, as an MCP tool name has (with no dot, which
// ends it).
func mcpServerName(s string) bool {
	if s == "" || len(s) > maxMCPServerName {
		return false
	}
	for _, c := range s {
		if c != '_' && c != '-' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
