package config

import (
	"fmt"
	"io"
)

// Var is one environment variable the service reads.
type Var struct {
	Name string
	// Default is the value used when it is unset, as a person reads it;
	// empty when unset means none.
	Default string
	// Help says in one line what it sets.
	Help string
	// Elsewhere marks a variable that serve reads outside Load (the
	// console's choice, the Go runtime's collector): Load does not read
	// it, yet serve's help lists it.
	Elsewhere bool
}

// Vars are the environment variables serve reads, in the order its help
// lists them. Load reads these and no others: a name it asks for that is
// not here is a programming error it panics on, so the help cannot leave
// out what is read.
var Vars = []Var{
	{Name: "DATABASE_URL", Help: "postgres:// URL of a PostgreSQL store several replicas may share; unset: embedded SQLite in TASKLOOM_DATA_DIR"},
	{Name: "TASKLOOM_DATA_DIR", Default: DefaultDataDir, Help: "where the SQLite store lives (same as --data-dir)"},
	{Name: "TASKLOOM_HTTP_ADDR", Default: DefaultHTTPAddr, Help: "where to serve the API, dashboard and metrics (same as --http-addr)"},
	{Name: "TASKLOOM_API_TOKEN", Help: "bearer token for the API, at least 32 characters; needed on a non-loopback address or with TASKLOOM_PUBLIC_URL"},
	{Name: "TASKLOOM_PUBLIC_URL", Help: "the URL people open when it is not TASKLOOM_HTTP_ADDR, e.g. behind a reverse proxy"},
	{Name: "OPENAI_API_KEY", Help: "the model's API key; neither it nor OPENAI_BASE_URL set: the demo model"},
	{Name: "OPENAI_BASE_URL", Default: DefaultOpenAIBaseURL, Help: "an OpenAI-compatible endpoint, ending in /v1"},
	{Name: "OPENAI_MODEL", Default: DefaultOpenAIModel, Help: "the model's name"},
	{Name: "OPENAI_EMBEDDING_MODEL", Help: "an embedding model of the same endpoint; set: what is recalled is re-ranked by similarity"},
	{Name: "DISCORD_BOT_TOKEN", Help: "the Discord bot token; setting it starts the bot"},
	{Name: "DISCORD_APPLICATION_ID", Help: "the Discord application ID; unset: the one the gateway announces"},
	{Name: "DISCORD_API_URL", Default: DefaultDiscordAPIURL, Help: "the site root of a Discord-compatible server"},
	{Name: "DISCORD_SHARD_ID", Help: "this replica's gateway shard, from 0 (with DISCORD_SHARD_COUNT)"},
	{Name: "DISCORD_SHARD_COUNT", Help: "how many gateway shards (with DISCORD_SHARD_ID)"},
	{Name: "TASKLOOM_DISCORD_THREADS", Default: "false", Help: "true: a task created in a Discord channel reports in a thread of its own"},
	{Name: "SLACK_BOT_TOKEN", Help: "the Slack bot token, xoxb-…; setting it starts the Slack app"},
	{Name: "SLACK_APP_TOKEN", Help: "an app-level token, xapp-…: Socket Mode"},
	{Name: "SLACK_SIGNING_SECRET", Help: "the app's signing secret: the HTTP Events API (needed without SLACK_APP_TOKEN)"},
	{Name: "SLACK_API_URL", Default: DefaultSlackAPIURL, Help: "the Web API base of a Slack-compatible server"},
	{Name: "TASKLOOM_CONSOLE", Default: "auto", Help: "true or false: chat in the terminal; unset: when no platform is set and stdin is a terminal"},
	{Name: "TASKLOOM_FLUSH_INTERVAL", Default: "5s", Help: "how often notifications are sent, batched"},
	{Name: "TASKLOOM_NOTIFY_STYLE", Default: NotifyBatch, Help: "batch: one message of what changed per flush; card: one message per task, edited"},
	{Name: "TASKLOOM_WORKERS", Default: "1", Help: "iterations in flight in this replica, 1 to 256"},
	{Name: "TASKLOOM_MAX_ITERATIONS", Default: "50", Help: "a task's default iteration limit"},
	{Name: "TASKLOOM_MAX_STALE", Default: "3", Help: "a task's default limit of iterations without progress"},
	{Name: "TASKLOOM_LEASE", Default: "2m", Help: "how long a claimed task is held"},
	{Name: "TASKLOOM_ADMINS", Help: "comma-separated platform user ids allowed to control any task"},
	{Name: "TASKLOOM_RUN_COMMAND", Default: "false", Help: "true: offer tasks run_command, in a bubblewrap sandbox"},
	{Name: "TASKLOOM_RUN_COMMAND_NETWORK", Default: "false", Help: "true: run_command reaches public addresses through an egress proxy"},
	{Name: "TASKLOOM_RUN_COMMAND_MEMORY", Default: "512MiB", Help: "memory a run_command sandbox may use (each process's heap without a cgroup); 16MiB up"},
	{Name: "TASKLOOM_RUN_COMMAND_PROCESSES", Default: "128", Help: "processes a run_command sandbox may have at once (unset, without a cgroup: chosen from the host's memory)"},
	{Name: "TASKLOOM_RUN_COMMAND_FILE_SIZE", Default: "64MiB", Help: "largest file a run_command process may write; 16MiB up"},
	{Name: "TASKLOOM_RUN_COMMAND_DISK", Default: "256MiB", Help: "run_command's writable space: its folder, /tmp and /dev/shm together; 16MiB up"},
	{Name: "TASKLOOM_RUN_COMMAND_CPU", Default: "60s", Help: "CPU time each run_command process may use"},
	{Name: "TASKLOOM_HTTP_GET_ALLOW_PRIVATE", Default: "false", Help: "true: http_get may reach loopback and private addresses"},
	{Name: "TASKLOOM_ANSWER_TIMEOUT", Default: "24h", Help: "how long a question waits before the task goes on without an answer"},
	{Name: "TASKLOOM_MAX_TOKENS", Default: "1000000", Help: "a task's default token budget; 0: no limit"},
	{Name: "TASKLOOM_TEMPERATURE", Default: "0.2", Help: "the temperature of task iterations, 0 to 1"},
	{Name: "TASKLOOM_SHUTDOWN_TIMEOUT", Default: "20s", Help: "how long SIGINT and SIGTERM let in-flight work drain"},
	{Name: "TASKLOOM_APPROVE_TOOLS", Default: "run_command", Help: "tools a person must approve, comma-separated; none for none"},
	{Name: "TASKLOOM_MAX_ACTIVE", Default: "20", Help: "tasks not yet ended a requestor may have"},
	{Name: "TASKLOOM_SCHEDULE_MIN_INTERVAL", Default: "1m", Help: "the shortest gap a schedule may leave between two runs, 1s to 24h"},
	{Name: "TASKLOOM_RETENTION", Default: "720h", Help: "chat memories older than this are deleted"},
	{Name: "TASKLOOM_FACTS", Default: "true", Help: "false: no durable facts are extracted from conversations"},
	{Name: "TASKLOOM_CHARACTER", Help: "an elizaOS-style character file (same as --character)"},
	{Name: "TASKLOOM_LOG_LEVEL", Default: "info", Help: "debug, info, warn or error"},
	{Name: "TASKLOOM_MCP_SERVERS", Help: `MCP servers whose tools tasks call, JSON: {"name": {"command": …} or {"url": …}}`},
	{Name: "TASKLOOM_AGENTS", Help: "a JSON or YAML file of the multi-agent strategies' agents; unset: the built-in ones"},
	{Name: "TASKLOOM_GROUP_CHAT_SPEAKER", Default: SpeakerRoundRobin, Help: "how a group chat chooses who speaks: round_robin or model"},
	{Name: "GOGC", Default: "set by serve", Help: "the Go collector's target, left alone when set", Elsewhere: true},
	{Name: "GOMEMLIMIT", Default: "from the cgroup", Help: "the Go runtime's soft memory limit, left alone when set", Elsewhere: true},
}

// declared returns getenv restricted to the names in Vars.
func declared(getenv func(string) string) func(string) string {
	known := make(map[string]bool, len(Vars))
	for _, v := range Vars {
		known[v.Name] = true
	}
	return func(name string) string {
		if !known[name] {
			panic(fmt.Sprintf("config: Load reads %s, which config.Vars does not list", name))
		}
		return getenv(name)
	}
}

// WriteVars writes Vars for a help text: each name, with its default
// when it has one, and on the next line what it sets.
func WriteVars(w io.Writer) error {
	for _, v := range Vars {
		line := v.Name
		if v.Default != "" {
			line += " (default " + v.Default + ")"
		}
		if _, err := fmt.Fprintf(w, "  %s\n      %s\n", line, v.Help); err != nil {
			return err
		}
	}
	return nil
}
