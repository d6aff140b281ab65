package config_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/config"
)

// token is a TASKLOOM_API_TOKEN long enough to be accepted.
const token = "0123456789abcdef0123456789abcdef"

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env())
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != "" || c.DataDir != "./.taskloom" || c.HTTPAddr != "127.0.0.1:8080" ||
		c.FlushInterval != 5*time.Second || c.Workers != 1 || c.MaxIterations != 50 || c.MaxStale != 3 ||
		c.Lease != 2*time.Minute || !c.UseDemoModel || c.OpenAIBaseURL != "https://api.openai.com/v1" ||
		c.OpenAIModel != "gpt-4o-mini" || c.DiscordAPIURL != "https://discord.com/" || c.SlackAPIURL != "https://slack.com/api/" {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(
		"DATABASE_URL", "postgres://u@db:5432/taskloom",
		"TASKLOOM_HTTP_ADDR", "0.0.0.0:9000", "TASKLOOM_API_TOKEN", token,
		"OPENAI_BASE_URL", "http://127.0.0.1:11434/v1",
		"TASKLOOM_WORKERS", "4", "TASKLOOM_FLUSH_INTERVAL", "2s", "TASKLOOM_LEASE", "30s",
		"TASKLOOM_ADMINS", " U1, U2 ,,",
	))
	if err != nil {
		t.Fatal(err)
	}
	if c.UseDemoModel || c.Workers != 4 || c.FlushInterval != 2*time.Second || c.Lease != 30*time.Second || !slices.Equal(c.Admins, []string{"U1", "U2"}) {
		t.Fatalf("config = %+v", c)
	}
	if c, _ := config.Load(env("OPENAI_API_KEY", "sk-x")); c.UseDemoModel {
		t.Fatal("a key alone must select the OpenAI model")
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"TASKLOOM_WORKERS", "abc"}, `TASKLOOM_WORKERS="abc": want a whole number from 1 to 256`},
		{[]string{"TASKLOOM_WORKERS", "0"}, `TASKLOOM_WORKERS="0"`},
		{[]string{"TASKLOOM_FLUSH_INTERVAL", "5"}, `TASKLOOM_FLUSH_INTERVAL="5": want a duration`},
		{[]string{"TASKLOOM_LEASE", "1ms"}, `TASKLOOM_LEASE="1ms": want a duration from 1s to 24h0m0s`},
		{[]string{"TASKLOOM_MAX_ITERATIONS", "-3"}, `TASKLOOM_MAX_ITERATIONS`},
		{[]string{"TASKLOOM_MAX_STALE", "x"}, `TASKLOOM_MAX_STALE`},
		{[]string{"DATABASE_URL", "mysql://root@localhost/db"}, `DATABASE_URL="mysql://root@localhost/db": want a postgres:// URL`},
		{[]string{"DATABASE_URL", "ftp://u:hunter2@h/db"}, `xxxxx`},
		{[]string{"TASKLOOM_HTTP_ADDR", "8080"}, `TASKLOOM_HTTP_ADDR="8080": want host:port`},
		{[]string{"TASKLOOM_HTTP_ADDR", "0.0.0.0:8080"}, `TASKLOOM_API_TOKEN: must be set to serve the API on 0.0.0.0:8080`},
		{[]string{"TASKLOOM_HTTP_ADDR", ":8080"}, `TASKLOOM_API_TOKEN`},
		{[]string{"TASKLOOM_PUBLIC_URL", "https://taskloom.example.com"}, `TASKLOOM_API_TOKEN: must be set with TASKLOOM_PUBLIC_URL`},
		{[]string{"TASKLOOM_API_TOKEN", "s3cret"}, `TASKLOOM_API_TOKEN: is 6 characters, want at least 32`},
		{[]string{"TASKLOOM_API_TOKEN", token[1:], "TASKLOOM_HTTP_ADDR", "0.0.0.0:8080"}, `TASKLOOM_API_TOKEN: is 31 characters`},
		{[]string{"TASKLOOM_API_TOKEN", "hunter2"}, `TASKLOOM_API_TOKEN: is 7 characters`},
		// An environment file's comment kept in the value: the real token
		// would then be refused with 401 and nothing saying why.
		{[]string{"TASKLOOM_API_TOKEN", token + "     # at least 32 characters"}, `TASKLOOM_API_TOKEN: contains white space at character 33`},
		// Nothing but spaces is no token at all, not an empty one.
		{[]string{"TASKLOOM_API_TOKEN", strings.Repeat(" ", 32)}, `TASKLOOM_API_TOKEN: contains white space at character 1`},
		{[]string{"TASKLOOM_API_TOKEN", token + "\x00"}, `TASKLOOM_API_TOKEN: contains a control character`},
		{[]string{"DISCORD_BOT_TOKEN", "abc def"}, `DISCORD_BOT_TOKEN: contains white space`},
		{[]string{"SLACK_BOT_TOKEN", "xoxb-1\n"}, `SLACK_BOT_TOKEN: contains white space`},
		{[]string{"SLACK_APP_TOKEN", "xapp-1 # socket mode"}, `SLACK_APP_TOKEN: contains white space`},
		{[]string{"SLACK_SIGNING_SECRET", "\tabc"}, `SLACK_SIGNING_SECRET: contains white space`},
		{[]string{"OPENAI_API_KEY", "sk-1 sk-2"}, `OPENAI_API_KEY: contains white space`},
		{[]string{"OPENAI_BASE_URL", "localhost:11434"}, `OPENAI_BASE_URL="localhost:11434": want an http:// or https:// URL`},
		{[]string{"DISCORD_API_URL", "discord"}, `DISCORD_API_URL`},
		{[]string{"SLACK_APP_TOKEN", "xoxb-1"}, `SLACK_APP_TOKEN: an app-level token starts with xapp-`},
		{[]string{"SLACK_BOT_TOKEN", "xoxb-1"}, `SLACK_SIGNING_SECRET`},
		{[]string{"TASKLOOM_LOG_LEVEL", "loud"}, `TASKLOOM_LOG_LEVEL`},
		{[]string{"TASKLOOM_RUN_COMMAND", "yes please"}, `TASKLOOM_RUN_COMMAND="yes please": want true or false`},
		{[]string{"TASKLOOM_DISCORD_THREADS", "sometimes"}, `TASKLOOM_DISCORD_THREADS="sometimes": want true or false`},
		{[]string{"TASKLOOM_CONSOLE", "maybe"}, `TASKLOOM_CONSOLE="maybe": want true or false`},
		{[]string{"TASKLOOM_RUN_COMMAND_NETWORK", "enabled"}, `TASKLOOM_RUN_COMMAND_NETWORK="enabled": want true or false`},
		{[]string{"DISCORD_SHARD_ID", "1"}, `DISCORD_SHARD_COUNT: must be set with DISCORD_SHARD_ID (both or neither)`},
		{[]string{"DISCORD_SHARD_COUNT", "2"}, `DISCORD_SHARD_ID: must be set with DISCORD_SHARD_COUNT (both or neither)`},
		{[]string{"DISCORD_SHARD_ID", "2", "DISCORD_SHARD_COUNT", "2"}, `DISCORD_SHARD_ID="2": want a shard from 0 to 1 (DISCORD_SHARD_COUNT is 2)`},
		{[]string{"DISCORD_SHARD_ID", "-1", "DISCORD_SHARD_COUNT", "2"}, `DISCORD_SHARD_ID="-1": want a whole number`},
		{[]string{"DISCORD_SHARD_ID", "0", "DISCORD_SHARD_COUNT", "0"}, `DISCORD_SHARD_COUNT="0": want a whole number from 1`},
		{[]string{"DISCORD_SHARD_ID", "x", "DISCORD_SHARD_COUNT", "2"}, `DISCORD_SHARD_ID="x"`},
		{[]string{"TASKLOOM_PUBLIC_URL", "taskloom.example.com"}, `TASKLOOM_PUBLIC_URL="taskloom.example.com": want an http:// or https:// URL with a host`},
		{[]string{"TASKLOOM_PUBLIC_URL", "ftp://taskloom.example.com"}, `TASKLOOM_PUBLIC_URL="ftp://taskloom.example.com"`},
		{[]string{"TASKLOOM_PUBLIC_URL", "https://"}, `TASKLOOM_PUBLIC_URL="https://"`},
		{[]string{"TASKLOOM_PUBLIC_URL", "https://:8443"}, `TASKLOOM_PUBLIC_URL="https://:8443"`},
		{[]string{"TASKLOOM_PUBLIC_URL", "https://taskloom.example.com:https"}, `TASKLOOM_PUBLIC_URL`},
		{[]string{"TASKLOOM_PUBLIC_URL", "https://me:hunter2@taskloom.example.com"}, `TASKLOOM_PUBLIC_URL="https://me:xxxxx@taskloom.example.com"`},
		{[]string{"TASKLOOM_ANSWER_TIMEOUT", "soon"}, `TASKLOOM_ANSWER_TIMEOUT="soon": want a duration such as 5s, 2m or 1h`},
		{[]string{"TASKLOOM_ANSWER_TIMEOUT", "1s"}, `TASKLOOM_ANSWER_TIMEOUT="1s": want a duration from 1m0s`},
		{[]string{"TASKLOOM_MAX_TOKENS", "-5"}, `TASKLOOM_MAX_TOKENS="-5": want a whole number from 0`},
		{[]string{"TASKLOOM_MAX_TOKENS", "lots"}, `TASKLOOM_MAX_TOKENS="lots"`},
		{[]string{"TASKLOOM_TEMPERATURE", "1.5"}, `TASKLOOM_TEMPERATURE="1.5": want a number from 0 to 1`},
		{[]string{"TASKLOOM_TEMPERATURE", "warm"}, `TASKLOOM_TEMPERATURE="warm"`},
		{[]string{"TASKLOOM_SHUTDOWN_TIMEOUT", "forever"}, `TASKLOOM_SHUTDOWN_TIMEOUT="forever"`},
		{[]string{"TASKLOOM_APPROVE_TOOLS", "run_command; rm -rf"}, `TASKLOOM_APPROVE_TOOLS="run_command; rm -rf": "run_command; rm -rf" is not a tool name`},
		{[]string{"TASKLOOM_MAX_ACTIVE", "0"}, `TASKLOOM_MAX_ACTIVE="0": want a whole number from 1`},
		{[]string{"TASKLOOM_RETENTION", "1m"}, `TASKLOOM_RETENTION="1m": want a duration from 1h0m0s`},
		{[]string{"TASKLOOM_RUN_COMMAND_MEMORY", "lots"}, `TASKLOOM_RUN_COMMAND_MEMORY="lots": want a size from 16MiB to 1TiB, such as 512MiB or 1GiB`},
		{[]string{"TASKLOOM_RUN_COMMAND_MEMORY", "1MiB"}, `TASKLOOM_RUN_COMMAND_MEMORY="1MiB": want a size from 16MiB`},
		{[]string{"TASKLOOM_RUN_COMMAND_MEMORY", "512 MB of it"}, `TASKLOOM_RUN_COMMAND_MEMORY="512 MB of it"`},
		{[]string{"TASKLOOM_RUN_COMMAND_PROCESSES", "2"}, `TASKLOOM_RUN_COMMAND_PROCESSES="2": want a whole number from 8 to 100000`},
		{[]string{"TASKLOOM_RUN_COMMAND_FILE_SIZE", "-1"}, `TASKLOOM_RUN_COMMAND_FILE_SIZE="-1": want a size from 16MiB`},
		{[]string{"TASKLOOM_RUN_COMMAND_FILE_SIZE", "8MiB"}, `TASKLOOM_RUN_COMMAND_FILE_SIZE="8MiB": want a size from 16MiB`},
		{[]string{"TASKLOOM_RUN_COMMAND_DISK", "1MiB"}, `TASKLOOM_RUN_COMMAND_DISK="1MiB": want a size from 16MiB`},
		{[]string{"TASKLOOM_RUN_COMMAND_DISK", "99999999999T"}, `TASKLOOM_RUN_COMMAND_DISK="99999999999T"`},
		{[]string{"TASKLOOM_RUN_COMMAND_CPU", "60"}, `TASKLOOM_RUN_COMMAND_CPU="60": want a duration such as 5s`},
	}
	for _, tt := range tests {
		_, err := config.Load(env(tt.env...))
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want one line containing %q", tt.env, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), token)) {
			t.Errorf("%v: error leaks a password: %v", tt.env, err)
		}
	}
}

// TestWaveTwoDefaults: the defaults of docs/tasks.md, docs/security.md, and the forms
// the new variables take.
func TestWaveTwoDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env())
	if err != nil {
		t.Fatal(err)
	}
	if c.AnswerTimeout != 24*time.Hour || c.MaxTokens != 1_000_000 || c.Temperature != 0.2 || c.ShutdownTimeout != 20*time.Second ||
		!slices.Equal(c.ApproveTools, []string{"run_command"}) || c.MaxActive != 20 || c.Retention != 720*time.Hour {
		t.Fatalf("defaults = %+v", c)
	}
	c, err = config.Load(env("TASKLOOM_APPROVE_TOOLS", "none", "TASKLOOM_MAX_TOKENS", "0", "TASKLOOM_TEMPERATURE", "0.7",
		"TASKLOOM_ANSWER_TIMEOUT", "90m", "TASKLOOM_SHUTDOWN_TIMEOUT", "5s"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ApproveTools != nil || c.MaxTokens != 0 || c.Temperature != 0.7 || c.AnswerTimeout != 90*time.Minute || c.ShutdownTimeout != 5*time.Second {
		t.Fatalf("config = %+v", c)
	}
	c, err = config.Load(env("TASKLOOM_APPROVE_TOOLS", "run_command, http_get ,everything.echo"))
	if err != nil || !slices.Equal(c.ApproveTools, []string{"run_command", "http_get", "everything.echo"}) {
		t.Fatalf("approve tools = %v, %v", c.ApproveTools, err)
	}
}

func TestDiscordShards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env       []string
		id, count int
	}{
		{nil, 0, 0},
		{[]string{"DISCORD_SHARD_ID", "0", "DISCORD_SHARD_COUNT", "1"}, 0, 1},
		{[]string{"DISCORD_SHARD_ID", "3", "DISCORD_SHARD_COUNT", "4"}, 3, 4},
		{[]string{"DISCORD_SHARD_ID", " 1 ", "DISCORD_SHARD_COUNT", "2"}, 1, 2},
	}
	for _, tt := range tests {
		c, err := config.Load(env(tt.env...))
		if err != nil || c.DiscordShardID != tt.id || c.DiscordShardCount != tt.count {
			t.Errorf("%v: shard %d of %d, err %v; want %d of %d", tt.env, c.DiscordShardID, c.DiscordShardCount, err, tt.id, tt.count)
		}
	}
	for _, c := range []config.Config{{DiscordShardID: 1}, {DiscordShardID: 2, DiscordShardCount: 2}, {DiscordShardCount: -1}} {
		ok, _ := config.Load(env())
		ok.DiscordShardID, ok.DiscordShardCount = c.DiscordShardID, c.DiscordShardCount
		var ce *config.Error
		if err := ok.Validate(); !errors.As(err, &ce) || ce.Var != "DISCORD_SHARD_ID" {
			t.Errorf("Validate with shard %d of %d = %v, want an error naming DISCORD_SHARD_ID", c.DiscordShardID, c.DiscordShardCount, err)
		}
	}
}

func TestPublicURL(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "https://taskloom.example.com", "http://10.0.0.5:8080/", " https://[2001:db8::1]:8443 "} {
		c, err := config.Load(env("TASKLOOM_PUBLIC_URL", v, "TASKLOOM_API_TOKEN", token))
		if err != nil || c.PublicURL != strings.TrimSpace(v) {
			t.Errorf("TASKLOOM_PUBLIC_URL=%q: PublicURL %q, err %v", v, c.PublicURL, err)
		}
	}
}

func TestLoopbackWithoutTokenIsFine(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:8080"} {
		if _, err := config.Load(env("TASKLOOM_HTTP_ADDR", addr)); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

// TestTokenWhereverTheAPIIsReached: a token of 32 characters or more is
// enough to listen anywhere and to be reached through a public URL; a
// loopback address alone needs none.
func TestTokenWhereverTheAPIIsReached(t *testing.T) {
	t.Parallel()
	for _, e := range [][]string{
		{"TASKLOOM_API_TOKEN", token, "TASKLOOM_HTTP_ADDR", "0.0.0.0:8080"},
		{"TASKLOOM_API_TOKEN", token, "TASKLOOM_PUBLIC_URL", "https://taskloom.example.com"},
		{"TASKLOOM_API_TOKEN", token + token, "TASKLOOM_HTTP_ADDR", ":8080", "TASKLOOM_PUBLIC_URL", "https://taskloom.example.com"},
		{"TASKLOOM_API_TOKEN", token},
		{"TASKLOOM_HTTP_ADDR", "127.0.0.1:8080"},
	} {
		if _, err := config.Load(env(e...)); err != nil {
			t.Errorf("%v: %v", e, err)
		}
	}
	// Validate, which runs again once flags are applied, checks the same.
	c, err := config.Load(env("TASKLOOM_PUBLIC_URL", "https://taskloom.example.com", "TASKLOOM_API_TOKEN", token))
	if err != nil {
		t.Fatal(err)
	}
	c.APIToken = ""
	var ce *config.Error
	if err := c.Validate(); !errors.As(err, &ce) || ce.Var != "TASKLOOM_API_TOKEN" {
		t.Fatalf("Validate without a token but with a public URL = %v", err)
	}
}

func TestRunCommandSwitches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env              []string
		command, network bool
	}{
		{nil, false, false},
		{[]string{"TASKLOOM_RUN_COMMAND", "true"}, true, false},
		{[]string{"TASKLOOM_RUN_COMMAND", "true", "TASKLOOM_RUN_COMMAND_NETWORK", "true"}, true, true},
		{[]string{"TASKLOOM_RUN_COMMAND", "1", "TASKLOOM_RUN_COMMAND_NETWORK", "false"}, true, false},
	}
	for _, tt := range tests {
		c, err := config.Load(env(tt.env...))
		if err != nil || c.RunCommand != tt.command || c.RunCommandNetwork != tt.network {
			t.Errorf("%v: RunCommand %v, RunCommandNetwork %v, err %v; want %v, %v", tt.env, c.RunCommand, c.RunCommandNetwork, err, tt.command, tt.network)
		}
	}
}

func TestRunCommandLimits(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env())
	if err != nil || c.RunCommandMemory != 512<<20 || c.RunCommandProcesses != 128 || c.RunCommandFileSize != 64<<20 ||
		c.RunCommandDisk != 256<<20 || c.RunCommandCPU != time.Minute {
		t.Errorf("defaults: %d %d %d %d %s, %v", c.RunCommandMemory, c.RunCommandProcesses, c.RunCommandFileSize, c.RunCommandDisk, c.RunCommandCPU, err)
	}
	c, err = config.Load(env("TASKLOOM_RUN_COMMAND_MEMORY", "1GiB", "TASKLOOM_RUN_COMMAND_PROCESSES", "64",
		"TASKLOOM_RUN_COMMAND_FILE_SIZE", "16M", "TASKLOOM_RUN_COMMAND_DISK", "1073741824", "TASKLOOM_RUN_COMMAND_CPU", "2m"))
	if err != nil || c.RunCommandMemory != 1<<30 || c.RunCommandProcesses != 64 || c.RunCommandFileSize != 16<<20 ||
		c.RunCommandDisk != 1<<30 || c.RunCommandCPU != 2*time.Minute {
		t.Errorf("set: %d %d %d %d %s, %v", c.RunCommandMemory, c.RunCommandProcesses, c.RunCommandFileSize, c.RunCommandDisk, c.RunCommandCPU, err)
	}
}

func TestDiscordThreads(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		value string
		want  bool
	}{{"", false}, {"true", true}, {"1", true}, {"false", false}} {
		c, err := config.Load(env("TASKLOOM_DISCORD_THREADS", tt.value))
		if err != nil || c.DiscordThreads != tt.want {
			t.Errorf("TASKLOOM_DISCORD_THREADS=%q: %v, %v; want %v", tt.value, c.DiscordThreads, err, tt.want)
		}
	}
}

// TestConsoleSetting: TASKLOOM_CONSOLE unset leaves the choice to the
// terminal; any spelling of true or false decides.
func TestConsoleSetting(t *testing.T) {
	for v, want := range map[string]string{"": "auto", "yes": "true", "ON": "true", "1": "true", "false": "false", "off": "false", "No": "false"} {
		cfg, err := config.Load(func(k string) string {
			if k == "TASKLOOM_CONSOLE" {
				return v
			}
			return ""
		})
		if err != nil {
			t.Fatalf("TASKLOOM_CONSOLE=%q: %v", v, err)
		}
		got := "auto"
		if cfg.Console != nil {
			got = strconv.FormatBool(*cfg.Console)
		}
		if got != want {
			t.Errorf("TASKLOOM_CONSOLE=%q gives %s, want %s", v, got, want)
		}
	}
}
