package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/plugin"
)

// Server is one MCP server: a command spoken to over stdio (Command, Args,
// Env, Network) or a streamable HTTP endpoint (URL).
type Server struct {
	// Name begins its tools' action names: "<Name>.<tool>".
	Name    string
	Command string
	Args    []string
	// Env is added to the PATH, HOME and LANG the sandbox gives the
	// command; it is all of the environment the command has.
	Env map[string]string
	// Network lets a stdio server reach public addresses through the
	// sandbox's egress proxy; without it, it has no network.
	Network bool
	URL     string
}

// Sandbox makes the process of a stdio server; *actions.Sandbox is one.
type Sandbox interface {
	Server(ctx context.Context, spec actions.ServerSpec) (*actions.Server, error)
}

// Defaults of Options.
const (
	DefaultCallTimeout  = 60 * time.Second
	DefaultStartTimeout = 30 * time.Second
)

// PluginName is the name of the plugin Tools.Plugin returns.
const PluginName = "mcp"

// Options configure Tools.
type Options struct {
	Servers []Server
	Logger  *slog.Logger
	// Sandbox runs the stdio servers; without one, a stdio server does
	// not start.
	Sandbox Sandbox
	// Getenv gives Taskloom's PATH, where a stdio server's command named
	// without a folder is looked for when the sandbox's PATH does not
	// have it; os.Getenv when nil.
	Getenv func(string) string
	// CallTimeout bounds one tool call; default DefaultCallTimeout.
	CallTimeout time.Duration
	// StartTimeout bounds starting or reaching a server and listing its
	// tools; default DefaultStartTimeout.
	StartTimeout time.Duration
	// HTTPClient reaches streamable HTTP servers; http.DefaultClient's
	// transport when nil. It must have no overall timeout: the stream a
	// server notifies on lasts the session.
	HTTPClient *http.Client
}

// Tools offers the tools of MCP servers as actions. Make it with New and
// register its Plugin.
type Tools struct {
	opts Options
	log  *slog.Logger
	rt   *plugin.Runtime // set by the plugin's Init

	mu     sync.Mutex
	conns  []*conn
	cancel context.CancelFunc // ends the watchers; nil until Start
	wg     sync.WaitGroup     // the watchers
}

var _ plugin.Service = (*Tools)(nil)

// New returns Tools for the servers of opts; nothing is started until the
// runtime starts its plugin.
func New(opts Options) *Tools {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	return &Tools{opts: opts, log: opts.Logger}
}

// Plugin is the "mcp" plugin: its service connects to the servers. A
// plugin whose tasks should see the tools from their first iteration
// depends on it.
func (t *Tools) Plugin() *plugin.Plugin {
	return &plugin.Plugin{
		Name:        PluginName,
		Description: "the tools of MCP servers (TASKLOOM_MCP_SERVERS), as actions <server>.<tool>",
		Init: func(_ context.Context, rt *plugin.Runtime) error {
			t.rt = rt
			return nil
		},
		Services: []plugin.Service{t},
	}
}

// Name implements plugin.Service.
func (t *Tools) Name() string { return PluginName }

// Start connects to every server at once, and registers the tools of each
// that answers within Options.StartTimeout. A server that does not is
// logged and left out; Start does not fail for it.
func (t *Tools) Start(ctx context.Context) error {
	if t.rt == nil {
		return errors.New("mcp tools: started without their plugin's Init")
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.mu.Lock()
	t.cancel = cancel
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range t.opts.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, n, err := t.connect(ctx, s)
			if err != nil {
				t.log.Error("MCP server did not start; its tools are absent", "mcp_server", s.Name, "err", err)
				return
			}
			t.mu.Lock()
			t.conns = append(t.conns, c)
			t.wg.Add(1)
			t.mu.Unlock()
			go c.watch(life)
			t.log.Info("MCP server connected", "mcp_server", s.Name, "transport", c.transport, "tools", n)
		}()
	}
	wg.Wait()
	return nil
}

// Stop closes every session, ends the stdio servers and removes their
// tools. A server still running when ctx ends is killed.
func (t *Tools) Stop(ctx context.Context) error {
	t.mu.Lock()
	conns := t.conns
	t.conns = nil
	if t.cancel != nil {
		t.cancel()
	}
	t.mu.Unlock()
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.close(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("close MCP server %s: %w", c.server.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.wg.Wait()
	return errors.Join(errs...)
}

// source is the name a server's tools are set under in the runtime.
func source(server string) string { return "mcp:" + server }

// conn is the session with one server.
type conn struct {
	t         *Tools
	server    Server
	transport string // "stdio" or "streamable HTTP", for the log
	session   *sdk.ClientSession
	cmd       *exec.Cmd       // a stdio server's process; nil for HTTP
	sandboxed *actions.Server // what the sandbox made for it
	stderr    *stderrLog
	changed   chan struct{} // the server said its tools changed; holds at most one
	closing   chan struct{} // closed by close
	closeOnce sync.Once
}

// connect starts or reaches a server, lists its tools and registers them.
// It returns how many tools the server has.
func (t *Tools) connect(ctx context.Context, s Server) (*conn, int, error) {
	c := &conn{t: t, server: s, changed: make(chan struct{}, 1), closing: make(chan struct{})}
	client := sdk.NewClient(&sdk.Implementation{Name: "taskloom", Version: clientVersion()}, &sdk.ClientOptions{
		Logger: t.log.With("mcp_server", s.Name),
		// Taskloom offers a server no roots, sampling or elicitation.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select { // the watcher lists them; a second notice before it does adds nothing
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	transport := &keptTransport{}
	if s.URL != "" {
		c.transport = "streamable HTTP"
		transport.Transport = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: t.opts.HTTPClient}
	} else {
		c.transport = "stdio"
		if t.opts.Sandbox == nil {
			return nil, 0, errors.New("start over stdio: no sandbox to run it in")
		}
		// The sandbox gives the command its environment, limits, scratch
		// directory and network, and its own process group (bwrap's), so
		// that Stop ends what it started too and a Ctrl-C in the terminal
		// reaches Taskloom alone, which then closes it in order. Its
		// stdin and stdout, which the SDK takes, and its stderr pass
		// through bwrap.
		srv, err := t.opts.Sandbox.Server(ctx, actions.ServerSpec{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env,
			Network: s.Network, LookPath: t.opts.Getenv("PATH")})
		if err != nil {
			return nil, 0, fmt.Errorf("start over stdio: %w", err)
		}
		c.sandboxed, c.cmd = srv, srv.Cmd
		c.stderr = &stderrLog{log: t.log, server: s.Name}
		c.cmd.Stderr = c.stderr
		transport.Transport = &sdk.CommandTransport{Command: c.cmd, TerminateDuration: 2 * time.Second}
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.StartTimeout)
	defer cancel()
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		// The SDK may have closed the connection already; closing it
		// again is allowed, and ends a stdio server that it left running.
		transport.close()
		c.killGroup()
		c.release()
		return nil, 0, fmt.Errorf("connect over %s: %w%s", c.transport, err, c.stderr.said())
	}
	c.session = session
	acts, err := c.list(ctx)
	if err == nil {
		err = t.rt.SetActions(source(s.Name), acts)
	}
	if err != nil {
		_ = c.close(context.Background())
		return nil, 0, fmt.Errorf("list its tools: %w%s", err, c.stderr.said())
	}
	return c, len(acts), nil
}

// list asks the server for its tools and makes them actions. A tool whose
// name cannot be an action's is left out, and logged.
func (c *conn) list(ctx context.Context) ([]plugin.Action, error) {
	var acts []plugin.Action
	for tool, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		a, err := newTool(c, tool)
		if err != nil {
			c.t.log.Warn("MCP tool left out", "mcp_server", c.server.Name, "tool", tool.Name, "err", err)
			continue
		}
		acts = append(acts, a)
	}
	return acts, nil
}

// watch lists the server's tools again each time it says they changed,
// and removes them when the session ends, until life ends.
func (c *conn) watch(life context.Context) {
	defer c.t.wg.Done()
	ended := make(chan struct{})
	go func() {
		_ = c.session.Wait()
		close(ended)
	}()
	name := c.server.Name
	for {
		select {
		case <-life.Done():
			return
		case <-ended:
			select {
			case <-c.closing:
			default:
				c.t.log.Error("MCP server ended; its tools are removed", "mcp_server", name, "stderr", c.stderr.last())
				if err := c.t.rt.SetActions(source(name), nil); err != nil {
					c.t.log.Error("MCP tools not removed", "mcp_server", name, "err", err)
				}
			}
			return
		case <-c.changed:
			ctx, cancel := context.WithTimeout(life, c.t.opts.StartTimeout)
			acts, err := c.list(ctx)
			cancel()
			if err == nil {
				err = c.t.rt.SetActions(source(name), acts)
			}
			if err != nil {
				c.t.log.Warn("MCP server's tools changed but could not be listed; the ones listed before stay", "mcp_server", name, "err", err)
				continue
			}
			c.t.log.Info("MCP server's tools changed", "mcp_server", name, "tools", len(acts))
		}
	}
}

// close ends the session and its tools. A stdio server is given until ctx
// ends to exit once its input is closed; then its process group is
// killed.
func (c *conn) close(ctx context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closing)
		if rerr := c.t.rt.SetActions(source(c.server.Name), nil); rerr != nil {
			c.t.log.Error("MCP tools not removed", "mcp_server", c.server.Name, "err", rerr)
		}
		done := make(chan error, 1)
		go func() { done <- c.session.Close() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			err = fmt.Errorf("still closing when the shutdown timed out: %w", ctx.Err())
		}
		c.killGroup()
		c.release()
		if c.cmd != nil {
			// A server that exits on its own when its input closes ends
			// "exit status" or "signal: terminated" for the SDK; that is
			// the end asked for, not a failure.
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				err = nil
			}
		}
	})
	return err
}

// killGroup kills what is left of a stdio server's process group.
func (c *conn) killGroup() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL) // ESRCH: nothing left
}

// cutOff is one sentence saying that the egress proxy cut the server off
// from the network and why, or "" when it did not: every call from then
// on says it, since what the server does with the network is cut short.
func (c *conn) cutOff() string {
	if c.sandboxed == nil {
		return ""
	}
	if why := c.sandboxed.CutOff(); why != "" {
		return fmt.Sprintf("The MCP server %s was cut off from the network: %s.", c.server.Name, why)
	}
	return ""
}

// release undoes what the sandbox made on the host for a stdio server
// (its scratch directory, its staged files), once its process group is
// killed.
func (c *conn) release() {
	if c.sandboxed == nil {
		return
	}
	if err := c.sandboxed.Release(); err != nil {
		c.t.log.Warn("MCP server's sandbox left something behind", "mcp_server", c.server.Name, "err", err)
	}
}

func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// keptTransport keeps the connection its Transport made, so that a
// session that failed half-way through its start can still be closed.
type keptTransport struct {
	sdk.Transport
	mu   sync.Mutex
	conn sdk.Connection
}

// Connect implements sdk.Transport.
func (k *keptTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := k.Transport.Connect(ctx)
	k.mu.Lock()
	k.conn = conn
	k.mu.Unlock()
	return conn, err
}

// close closes the connection, if one was made. A Connection may be
// closed more than once.
func (k *keptTransport) close() {
	k.mu.Lock()
	conn := k.conn
	k.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}
