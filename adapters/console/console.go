package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// Room is the console's one room.
const Room = "console"

// MaxLine caps one typed line.
const MaxLine = 16 << 10

// Console reads commands from In and writes replies and notifications to
// Out. It is both the platform that delivers room "console" and the
// service that reads the terminal.
type Console struct {
	Runtime *plugin.Runtime
	In      io.Reader
	Out     io.Writer
	User    string // the author ID of what is typed; default "console"
	// OnEOF runs when the input ends (Ctrl-D), e.g. to shut down.
	OnEOF func()

	mu      sync.Mutex // serialises writes to Out
	seq     atomic.Int64
	started time.Time
}

var (
	_ plugin.Platform = (*Console)(nil)
	_ plugin.Service  = (*Console)(nil)
)

// Name is the platform name, the prefix of its room.
func (c *Console) Name() string { return "console" }

// Send prints a message to the terminal.
func (c *Console) Send(_ context.Context, room string, m plugin.Outgoing) (plugin.SentMessage, error) {
	if room != Room {
		return plugin.SentMessage{}, fmt.Errorf("console: no room %q", room)
	}
	c.print(m.Text)
	return plugin.SentMessage{IDs: []string{fmt.Sprintf("console-out-%d", c.seq.Add(1))}}, nil
}

func (c *Console) print(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.Out, "%s\n\n", strings.TrimRight(text, "\n"))
}

// Start greets and reads lines until the input ends or Stop.
func (c *Console) Start(ctx context.Context) error {
	if c.User == "" {
		c.User = "console"
	}
	c.started = c.Runtime.Clock().Now()
	c.print(fmt.Sprintf("👋 %s is here. Type `help` for the commands, e.g. `create task write a haiku`.", c.Runtime.Character().Name))
	go c.read(context.WithoutCancel(ctx))
	return nil
}

// Stop does not wait for the reader: a terminal read cannot be
// interrupted, and the process is about to exit.
func (c *Console) Stop(context.Context) error { return nil }

func (c *Console) read(ctx context.Context) {
	in := bufio.NewReader(c.In)
	for {
		line, err := in.ReadString('\n')
		if text := strings.TrimSpace(line); text != "" {
			c.handle(ctx, text)
		}
		if err != nil {
			if err != io.EOF {
				c.Runtime.Logger().Warn("console input stopped", slog.Any("err", err))
			}
			break
		}
	}
	if c.OnEOF != nil {
		c.OnEOF()
	}
}

func (c *Console) handle(ctx context.Context, text string) {
	if len(text) > MaxLine {
		c.print(fmt.Sprintf("That message is %d bytes; the limit is %d. Nothing was done.", len(text), MaxLine))
		return
	}
	n := c.seq.Add(1)
	msg := plugin.Message{
		// Unique across restarts, so the memory store never takes a new
		// line for a redelivery.
		ID:          fmt.Sprintf("console-%d-%d", c.started.UnixNano(), n),
		Platform:    "console",
		Room:        Room,
		WorkspaceID: "local",
		AuthorID:    c.User,
		AuthorName:  c.User,
		Text:        text,
		Mentioned:   true,
		// The terminal is the operator's, who started the service and
		// reaches the API on loopback as well: one person with the CLI
		// and the dashboard, who may control what those made.
		Admin: true,
	}
	err := c.Runtime.HandleMessage(ctx, msg, func(_ context.Context, r plugin.Response) error {
		c.print(r.Text)
		return nil
	})
	if err != nil {
		c.Runtime.Logger().Error("console message failed", "err", err)
		c.print("Sorry — that could not be handled; see the log.")
	}
}
