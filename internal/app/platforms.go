package app

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/taskloom/taskloom/adapters/console"
	"github.com/taskloom/taskloom/adapters/discord"
	slackadapter "github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/config"
	"github.com/taskloom/taskloom/plugin"
)

// platformEnv is what a platform's constructor is given: the
// configuration, the runtime it joins and the process around it.
type platformEnv struct {
	cfg  config.Config
	rt   *plugin.Runtime
	log  *slog.Logger
	clk  clock.Clock
	o    Options
	quit context.CancelFunc
}

// builtPlatform is a platform made from the configuration: its plugin and
// the routes on which the platform itself calls Taskloom with signed
// requests (outside the guard against web pages), by method and path.
type builtPlatform struct {
	plugin *plugin.Plugin
	signed map[string]http.Handler
}

// platform is one entry of the table serve walks: a chat platform,
// started when the configuration asks for it. Adding a platform is one
// entry here and its adapter package (docs/architecture.md).
type platform struct {
	name string
	// configured says whether the configuration asks for the platform.
	configured func(e platformEnv) bool
	build      func(e platformEnv) (builtPlatform, error)
}

// platforms are the chat platforms serve can start, in the order it
// registers them.
var platforms = []platform{
	{name: "console", configured: func(e platformEnv) bool { return useConsole(e.cfg, e.o.Stdin) }, build: buildConsole},
	{name: "discord", configured: func(e platformEnv) bool { return e.cfg.DiscordToken != "" }, build: buildDiscord},
	{name: "slack", configured: func(e platformEnv) bool { return e.cfg.SlackBotToken != "" }, build: buildSlack},
}

// buildPlatforms builds every platform the configuration asks for.
func buildPlatforms(e platformEnv) ([]builtPlatform, error) {
	var out []builtPlatform
	for _, p := range platforms {
		if !p.configured(e) {
			continue
		}
		b, err := p.build(e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func buildConsole(e platformEnv) (builtPlatform, error) {
	con := &console.Console{Runtime: e.rt, In: e.o.Stdin, Out: e.o.Stdout, User: consoleUser(e.o.Getenv), OnEOF: func() {
		e.log.Info("console input ended (Ctrl-D): shutting down")
		e.quit()
	}}
	e.log.Info("console chat: type commands here, e.g. `create task write a haiku`")
	return builtPlatform{plugin: &plugin.Plugin{
		Name: "console", Description: "chat in the terminal", Dependencies: []string{"orchestrator"},
		Platforms: []plugin.Platform{con}, Services: []plugin.Service{con},
	}}, nil
}

func buildDiscord(e platformEnv) (builtPlatform, error) {
	bot, err := discord.New(discord.Options{
		Token:         e.cfg.DiscordToken,
		ApplicationID: e.cfg.DiscordApplicationID,
		APIURL:        e.cfg.DiscordAPIURL,
		ShardID:       e.cfg.DiscordShardID,
		ShardCount:    e.cfg.DiscordShardCount,
		Threads:       e.cfg.DiscordThreads,
		Runtime:       e.rt,
		Logger:        e.log,
		Clock:         e.clk,
	})
	if err != nil {
		return builtPlatform{}, err
	}
	e.log.Info("discord enabled", "api", e.cfg.DiscordAPIURL, "threads", e.cfg.DiscordThreads)
	return builtPlatform{plugin: bot.Plugin()}, nil
}

func buildSlack(e platformEnv) (builtPlatform, error) {
	opts := slackadapter.Options{
		BotToken: e.cfg.SlackBotToken, AppToken: e.cfg.SlackAppToken, SigningSecret: e.cfg.SlackSigningSecret,
		APIURL: e.cfg.SlackAPIURL, Runtime: e.rt, Logger: e.log, Clock: e.clk,
	}
	if e.cfg.DatabaseURL != "" {
		// Other replicas may share the database and change the tasks a
		// Home tab opened here lists.
		opts.FollowStore = slackadapter.FollowStoreEvery
	}
	app, err := slackadapter.New(opts)
	if err != nil {
		return builtPlatform{}, err
	}
	mode := "HTTP Events API"
	if app.SocketMode() {
		mode = "Socket Mode"
	}
	e.log.Info("slack enabled", "mode", mode)
	b := builtPlatform{plugin: app.Plugin()}
	if e.cfg.SlackSigningSecret != "" {
		// The adapter answers 503 until the runtime has started. Slack
		// calls these from its servers and signs every request.
		h := app.HTTPHandler()
		b.signed = map[string]http.Handler{}
		for _, p := range []string{slackadapter.PathEvents, slackadapter.PathCommands, slackadapter.PathInteractions} {
			b.signed["POST "+p] = h
		}
	}
	return b, nil
}
