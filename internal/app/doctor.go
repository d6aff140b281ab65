package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/adapters/sqlite"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/config"
)

// Outcomes of one of doctor's checks.
const (
	checkOK      = "ok"
	checkFailed  = "failed"
	checkWarning = "warning"
	checkSkipped = "not set up"
)

// doctorCheck is one line of doctor's table.
type doctorCheck struct {
	name, outcome, detail string
}

// doctorTimeout bounds each of doctor's checks.
const doctorTimeout = 15 * time.Second

// runDoctor checks what serve needs — the store, the model, each
// platform configured, the sandbox — without changing anything, prints a
// table of what each says, and exits 1 when one failed. The table is all
// it prints: what the checks would log is in the table's lines, and a log
// line on the terminal would land between them.
func runDoctor(ctx context.Context, cfg config.Config, _ *slog.Logger, o Options) int {
	log := slog.New(slog.DiscardHandler)
	checks := []doctorCheck{
		doctorStore(ctx, cfg),
		doctorModel(ctx, cfg, log),
		doctorPlatform(ctx, "discord", cfg.DiscordToken != "", "DISCORD_BOT_TOKEN", func(ctx context.Context) (string, error) {
			return discord.Check(ctx, cfg.DiscordToken, cfg.DiscordAPIURL)
		}),
		doctorPlatform(ctx, "slack", cfg.SlackBotToken != "", "SLACK_BOT_TOKEN", func(ctx context.Context) (string, error) {
			return slack.Check(ctx, cfg.SlackBotToken, cfg.SlackAPIURL)
		}),
		doctorSandbox(ctx, cfg, o),
	}
	writeDoctor(o.Stdout, checks)
	for _, c := range checks {
		if c.outcome == checkFailed {
			return ExitFailed
		}
	}
	return ExitOK
}

func writeDoctor(w io.Writer, checks []doctorCheck) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.name, c.outcome, c.detail)
	}
	tw.Flush()
}

// doctorStore opens the store serve would, without migrating it, says
// which schema version it is at, and closes it.
func doctorStore(ctx context.Context, cfg config.Config) doctorCheck {
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	if cfg.DatabaseURL != "" {
		st, err := postgres.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return doctorCheck{"store", checkFailed, "DATABASE_URL: " + err.Error()}
		}
		defer st.Close()
		return schemaCheck(ctx, st, "PostgreSQL")
	}
	path := filepath.Join(cfg.DataDir, "taskloom.db")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return doctorCheck{"store", checkOK, "SQLite: none yet; serve makes " + path}
	}
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return doctorCheck{"store", checkFailed, "TASKLOOM_DATA_DIR: " + err.Error()}
	}
	defer st.Close()
	return schemaCheck(ctx, st, "SQLite at "+path)
}

// versioned is a store that tells its schema version (both stores).
type versioned interface {
	SchemaVersion(ctx context.Context) (applied, latest int, err error)
}

// schemaCheck is the store's line: the schema version the store is at,
// or that it needs `taskloom migrate` (serve migrates at start too, so a
// store behind is a warning, not a failure).
func schemaCheck(ctx context.Context, st versioned, what string) doctorCheck {
	applied, latest, err := st.SchemaVersion(ctx)
	switch {
	case err != nil:
		return doctorCheck{"store", checkFailed, what + ": " + err.Error()}
	case applied == 0:
		return doctorCheck{"store", checkWarning, what + " answers, not migrated yet: run taskloom migrate (serve also does at start)"}
	case applied < latest:
		return doctorCheck{"store", checkWarning, fmt.Sprintf("%s, schema version %d of %d: run taskloom migrate (serve also does at start)", what, applied, latest)}
	case applied > latest:
		return doctorCheck{"store", checkWarning, fmt.Sprintf("%s, schema version %d, newer than this binary's %d: a newer taskloom migrated it", what, applied, latest)}
	}
	return doctorCheck{"store", checkOK, fmt.Sprintf("%s, schema version %d (up to date)", what, applied)}
}

// doctorModel checks the model's endpoint as serve does at start.
func doctorModel(ctx context.Context, cfg config.Config, log *slog.Logger) doctorCheck {
	if cfg.UseDemoModel {
		return doctorCheck{"model", checkWarning, "no OPENAI_API_KEY or OPENAI_BASE_URL: the demo model plays a scripted task"}
	}
	m, err := newModel(cfg, log, clock.Real{})
	if err != nil {
		return doctorCheck{"model", checkFailed, err.Error()}
	}
	c, ok := m.(checker)
	if !ok {
		return doctorCheck{"model", checkOK, "not checkable"}
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	var p *openai.Problem
	switch err := c.Check(ctx); {
	case err == nil:
		return doctorCheck{"model", checkOK, fmt.Sprintf("%s answers at %s", cfg.OpenAIModel, cfg.OpenAIBaseURL)}
	case errors.As(err, &p):
		return doctorCheck{"model", checkFailed, modelVariable(p.Setting) + ": " + p.Reason}
	default:
		return doctorCheck{"model", checkFailed, err.Error()}
	}
}

// doctorPlatform checks a platform's token when it is configured.
func doctorPlatform(ctx context.Context, name string, configured bool, variable string, check func(context.Context) (string, error)) doctorCheck {
	if !configured {
		return doctorCheck{name, checkSkipped, variable + " is not set"}
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	who, err := check(ctx)
	if err != nil {
		return doctorCheck{name, checkFailed, err.Error()}
	}
	return doctorCheck{name, checkOK, who}
}

// doctorSandbox makes the sandbox when run_command or a stdio MCP server
// needs it, as serve does.
func doctorSandbox(ctx context.Context, cfg config.Config, o Options) doctorCheck {
	if !cfg.RunCommand && stdioMCPServers(cfg) == 0 {
		return doctorCheck{"sandbox", checkSkipped, "needed only with TASKLOOM_RUN_COMMAND or stdio MCP servers"}
	}
	variable := "TASKLOOM_MCP_SERVERS"
	if cfg.RunCommand {
		variable = "TASKLOOM_RUN_COMMAND"
	}
	sb, err := checkedSandbox(ctx, cfg, o.Getenv, nil, variable)
	if err != nil {
		return doctorCheck{"sandbox", checkFailed, err.Error()}
	}
	return doctorCheck{"sandbox", checkOK, "bwrap " + sb.Bwrap + ", " + sb.Limits.String()}
}
