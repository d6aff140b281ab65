package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/adapters/sqlite"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"

	"github.com/jackc/pgx/v5/pgxpool"
)

// syncBuffer is a bytes.Buffer safe to read while Main writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	code := app.Main(context.Background(), app.Options{Args: args, Getenv: envOf(env), Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

func TestServeWithNothingConfigured(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0"}
	srv := launch(t, env)
	defer srv.stop()
	base, stderr := srv.base, srv.stderr
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Status, Model string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 200 || body.Status != want {
			t.Fatalf("%s = %d %q", path, resp.StatusCode, body.Status)
		}
		if path == "/readyz" && body.Model != "ok" {
			t.Fatalf("/readyz says the model is %q, want ok", body.Model)
		}
	}
	logs := stderr.String()
	if !strings.Contains(logs, "demo model") || !strings.Contains(logs, "embedded SQLite") {
		t.Fatalf("the logs do not say what runs:\n%s", logs)
	}
	srv.stop()
	if code := srv.wait(t, app.ShutdownTimeout+5*time.Second); code != 0 {
		t.Fatalf("exit %d after shutdown:\n%s", code, stderr.String())
	}
}

func TestBadConfigurationIsOneLine(t *testing.T) {
	t.Parallel()
	code, _, stderr := run(t, map[string]string{"TASKLOOM_WORKERS": "lots"})
	if code != app.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "TASKLOOM_WORKERS") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TASKLOOM_HTTP_ADDR": "0.0.0.0:8080"}, "TASKLOOM_API_TOKEN: must be set"},
		// Behind a reverse proxy on this machine the listen address is
		// loopback, yet anyone who reaches the public URL reaches the API.
		{map[string]string{"TASKLOOM_PUBLIC_URL": "https://taskloom.example.com"}, "TASKLOOM_API_TOKEN: must be set with TASKLOOM_PUBLIC_URL"},
		{map[string]string{"TASKLOOM_API_TOKEN": "s3cret"}, "TASKLOOM_API_TOKEN: is 6 characters, want at least 32"},
		{map[string]string{"TASKLOOM_API_TOKEN": "s3cret", "TASKLOOM_PUBLIC_URL": "https://taskloom.example.com"}, "TASKLOOM_API_TOKEN: is 6 characters"},
	} {
		tt.env["TASKLOOM_DATA_DIR"] = t.TempDir()
		if tt.env["TASKLOOM_HTTP_ADDR"] == "" {
			tt.env["TASKLOOM_HTTP_ADDR"] = "127.0.0.1:0"
		}
		// Refused, serve returns at once; were it to start, it would
		// run until the deadline and exit 0.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var stderrBuf syncBuffer
		code := app.Main(ctx, app.Options{Args: []string{"serve"}, Getenv: envOf(tt.env), Stdout: io.Discard, Stderr: &stderrBuf})
		cancel()
		stderr := stderrBuf.String()
		if code != app.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tt.want) {
			t.Errorf("serve with %v: exit %d, stderr %q; want %d and one line containing %q", tt.env, code, stderr, app.ExitUsage, tt.want)
		}
		if strings.Contains(stderr, "s3cret") {
			t.Errorf("serve with %v: the error shows the token: %q", tt.env, stderr)
		}
	}
}

// TestBadSettingsFoundAtStartUp: a setting that is well formed but wrong
// — a file that is not there, a tool no plugin has, a database no one
// answers at, a data directory that cannot be made — stops serve with
// exit 2 and, last, one line naming the variable, as a malformed one does:
// an operator reading a failed unit's status sees what to change.
func TestBadSettingsFoundAtStartUp(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TASKLOOM_CHARACTER": "/no/such/character.json"}, "TASKLOOM_CHARACTER="},
		{map[string]string{"TASKLOOM_CHARACTER": file}, "TASKLOOM_CHARACTER="},
		{map[string]string{"TASKLOOM_APPROVE_TOOLS": "frobnicate"}, "TASKLOOM_APPROVE_TOOLS="},
		{map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/taskloom?connect_timeout=2"}, "DATABASE_URL: cannot open the PostgreSQL store"},
		{map[string]string{"TASKLOOM_DATA_DIR": filepath.Join(file, "data")}, "TASKLOOM_DATA_DIR="},
	} {
		if tt.env["TASKLOOM_DATA_DIR"] == "" {
			tt.env["TASKLOOM_DATA_DIR"] = t.TempDir()
		}
		tt.env["TASKLOOM_HTTP_ADDR"] = "127.0.0.1:0"
		tt.env["TASKLOOM_CONSOLE"] = "false"
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var stderrBuf syncBuffer
		code := app.Main(ctx, app.Options{Args: []string{"serve"}, Getenv: envOf(tt.env), Stdout: io.Discard, Stderr: &stderrBuf})
		cancel()
		lines := strings.Split(strings.TrimSpace(stderrBuf.String()), "\n")
		last := lines[len(lines)-1]
		if code != app.ExitUsage || !strings.HasPrefix(last, "taskloom: ") || !strings.Contains(last, tt.want) {
			t.Errorf("serve with %v: exit %d, last line %q; want %d and one line containing %q\n%s", tt.env, code, last, app.ExitUsage, tt.want, stderrBuf.String())
		}
	}
}

// apiToken is a TASKLOOM_API_TOKEN long enough for serve to accept.
const apiToken = "test-api-token-0123456789abcdef0123456789"

func TestCommands(t *testing.T) {
	t.Parallel()
	if code, out, _ := run(t, nil, "version"); code != 0 || !strings.HasPrefix(out, "taskloom ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, _, errOut := run(t, nil, "frobnicate"); code != app.ExitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := run(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir()}, "migrate", "extra"); code != app.ExitUsage || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Fatalf("stray argument: %d %q", code, errOut)
	}
}

func TestMigratePostgresTwice(t *testing.T) {
	t.Parallel()
	url := testkit.PostgresURL(t)
	env := map[string]string{"DATABASE_URL": url}
	for i := range 2 {
		if code, out, errOut := run(t, env, "migrate"); code != 0 || !strings.Contains(out, "up to date") {
			t.Fatalf("migrate #%d: %d %q %q", i+1, code, out, errOut)
		}
	}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, table := range []string{"tasks", "task_steps", "task_events", "memories", "notifications"} {
		var exists bool
		if err := pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil || !exists {
			t.Fatalf("table %s missing after migrate (%v)", table, err)
		}
	}
}

// lifeOfATask writes a short, valid history: created, claimed, iterated.
func lifeOfATask(t *testing.T, st domain.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, goal := range []string{"first", "second"} {
		if _, err := st.CreateTask(ctx, domain.NewTask{Goal: goal, Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := st.ClaimTask(ctx, domain.Claim{Owner: "w", Now: now, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.UpdateTask(ctx, claimed.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: cur.Fence, Now: now.Add(time.Second), Progress: 40,
			Step: domain.Step{Action: "list_files", Result: "empty", Success: true}})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheckCatchesACorruptedRow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  func(t *testing.T) map[string]string
		open func(t *testing.T, env map[string]string) domain.Store
		exec func(t *testing.T, env map[string]string, q string) // runs q on the database, past the store
	}{
		{
			name: "sqlite",
			env:  func(t *testing.T) map[string]string { return map[string]string{"TASKLOOM_DATA_DIR": t.TempDir()} },
			open: func(t *testing.T, env map[string]string) domain.Store {
				st, err := sqlite.Open(context.Background(), filepath.Join(env["TASKLOOM_DATA_DIR"], "taskloom.db"))
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
			exec: func(t *testing.T, env map[string]string, q string) {
				db, err := sql.Open("sqlite", filepath.Join(env["TASKLOOM_DATA_DIR"], "taskloom.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "postgres",
			env:  func(t *testing.T) map[string]string { return map[string]string{"DATABASE_URL": testkit.PostgresURL(t)} },
			open: func(t *testing.T, env map[string]string) domain.Store {
				st, err := postgres.Open(context.Background(), env["DATABASE_URL"])
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
			exec: func(t *testing.T, env map[string]string, q string) {
				pool, err := pgxpool.New(context.Background(), env["DATABASE_URL"])
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Close()
				if _, err := pool.Exec(context.Background(), q); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := c.env(t)
			st := c.open(t, env)
			if err := st.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			lifeOfATask(t, st)
			st.Close()
			if code, out, errOut := run(t, env, "check"); code != 0 || !strings.Contains(out, "checked 2 tasks: 0 with problems") {
				t.Fatalf("clean check: %d %q %q", code, out, errOut)
			}
			// Steps and events of a task that does not exist (written past
			// the store: the store writes none).
			c.exec(t, env, "INSERT INTO task_steps (task_number, iteration, action, success, progress) VALUES (99, 1, 'noop', true, 0)")
			c.exec(t, env, "INSERT INTO task_events (task_number, sequence, type, payload) VALUES (99, 1, 'created', '{}')")
			code, out, _ := run(t, env, "check")
			if code != app.ExitFailed || !strings.Contains(out, "1 steps and 1 events belong to no task") ||
				!strings.Contains(out, "checked 2 tasks: 0 with problems") {
				t.Fatalf("check with rows of no task: exit %d\n%s", code, out)
			}
			c.exec(t, env, "DELETE FROM task_steps WHERE task_number = 99")
			c.exec(t, env, "DELETE FROM task_events WHERE task_number = 99")
			c.exec(t, env, "UPDATE tasks SET progress = 77 WHERE number = 1")
			code, out, _ = run(t, env, "check")
			if code != app.ExitFailed || !strings.Contains(out, "task #1: column progress is 77 in the row but 40 from the events") ||
				!strings.Contains(out, "checked 2 tasks: 1 with problems") || strings.Contains(out, "belong to no task") {
				t.Fatalf("corrupted check: exit %d\n%s", code, out)
			}
		})
	}
}

// TestConsoleThroughAPipe is the console scenario of the notifications
// issue, with the demo model on the real clock: two tasks, the queue, a
// batched progress message, the completion the moment it happens, and
// the control commands.
func TestConsoleThroughAPipe(t *testing.T) {
	t.Parallel()
	in, typer := io.Pipe()
	var out, stderr syncBuffer
	data := t.TempDir()
	env := map[string]string{"TASKLOOM_DATA_DIR": data, "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_CONSOLE": "true",
		"TASKLOOM_FLUSH_INTERVAL": "2s", "TASKLOOM_WORKERS": "2"}
	exited := make(chan int, 1)
	go func() {
		exited <- app.Main(context.Background(), app.Options{Getenv: envOf(env), Stdin: in, Stdout: &out, Stderr: &stderr})
	}()
	typeLine := func(s string) {
		t.Helper()
		if _, err := io.WriteString(typer, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("the console never showed %q:\n%s", want, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("Type `help` for the commands")
	typeLine("create task write a haiku")
	waitFor(`Created task #1 "Write a haiku"`)
	typeLine("create task plan a trip")
	waitFor(`Created task #2 "Plan a trip"`)
	typeLine("list tasks")
	waitFor("📊 Task Queue (2 tasks)")
	waitFor("   Progress: 0% → ")
	typeLine("pause #2")
	waitFor(`⏸️ Task #2 "Plan a trip" paused`)
	typeLine("resume #2")
	waitFor(`▶️ Task #2 "Plan a trip" resumed`)
	typeLine("status #99")
	waitFor("There is no task #99 here.")
	typeLine("status #1")
	waitFor("Goal: write a haiku")
	typeLine("create task an idea to drop")
	waitFor("Created task #3")
	typeLine("cancel #3")
	waitFor("Canceled. Task #3 keeps its files: say 'retry #3' to continue it as a new task.")
	waitFor(`🛑 Task #3 "An idea to drop" canceled`)
	waitFor(`✅ Task #1 "Write a haiku" completed!`)
	waitFor(`✅ Task #2 "Plan a trip" completed!`)
	// One line says the task was canceled, not two near-identical ones
	// (the reply and the room's announcement).
	if n := strings.Count(out.String(), `"An idea to drop" canceled`); n != 1 {
		t.Fatalf("%d lines say #3 was canceled:\n%s", n, out.String())
	}
	if strings.Count(out.String(), `✅ Task #1 "Write a haiku" completed!`) != 1 {
		t.Fatalf("the completion was sent more than once:\n%s", out.String())
	}
	typer.Close() // Ctrl-D
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(app.ShutdownTimeout + 10*time.Second):
		t.Fatal("no exit after the input ended")
	}
	// The log went to a file, said once, not between the chat's lines.
	logPath := filepath.Join(data, "taskloom.log")
	if got := strings.TrimSpace(stderr.String()); got != "taskloom: the log goes to "+logPath+" while you chat here" {
		t.Errorf("stderr = %q; want one line saying where the log goes", got)
	}
	if strings.Contains(out.String(), "level=") {
		t.Errorf("log lines among the chat:\n%s", out.String())
	}
	if logged, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(logged), "store: embedded SQLite") {
		t.Errorf("the log file = %q, %v; want the service's log", logged, err)
	}
}

// TestOneLocalOperator: on one machine the console, the CLI and the
// dashboard are one person, the operator who runs the service: a task
// made through the API (by `taskloom tasks create` or the dashboard) is
// the console's to pause and cancel, where before the console was refused
// as though someone else had made it.
func TestOneLocalOperator(t *testing.T) {
	t.Parallel()
	c := startConsole(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0"})
	resp, err := http.Post(c.srv.base+"/api/tasks", "application/json", strings.NewReader(`{"goal": "made from the dashboard"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create through the API = %d", resp.StatusCode)
	}
	c.say("pause #1")
	c.waitFor(`Task #1 "Made from the dashboard" paused`)
	c.say("cancel #1")
	c.waitFor(`Task #1 "Made from the dashboard" canceled`)
}

// TestNewcomerSeesEveryFeature is the README's first run with no key: on
// a pseudo-terminal, so the console starts as it does for a person, with
// the demo model and run_command on, free text is
// answered from the room's memory, a goal with a choice asks a question
// and goes on with the answer, and a goal that runs something asks to run
// a command and runs it once approved.
func TestNewcomerSeesEveryFeature(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (scripts/test installs it)")
	}
	t.Parallel()
	c := startTerminal(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"TASKLOOM_FLUSH_INTERVAL": "1s", "TASKLOOM_WORKERS": "2", "TASKLOOM_RUN_COMMAND": "true", "PATH": os.Getenv("PATH")})
	c.waitFor("Type `help` for the commands")

	c.say("note: the ingest queue comes back with ingest-restart on the primary")
	c.waitFor("(demo model)")
	c.say("how do I bring the ingest queue back?")
	c.waitFor("this is what I recall that matches your words")
	c.waitFor("ingest-restart")

	c.say("create task Should the login use JWT or sessions?")
	c.waitFor("Created task #1")
	c.waitFor("which way should I take?")
	c.say("answer #1 JWT, please")
	c.waitFor(`✅ Task #1 "Should the login use JWT or sessions" completed`)

	c.say("create task run the tests")
	c.waitFor("Created task #2")
	c.waitFor("approve #2")
	c.say("approve #2")
	c.waitFor("Approved")
	c.waitFor(`✅ Task #2 "Run the tests" completed`)
}

// console is a `taskloom serve` whose console chat a test types into and
// reads, through a pipe (TASKLOOM_CONSOLE=true).
type console struct {
	t   *testing.T
	srv *served
	in  io.Writer // what is typed goes here
	out *syncBuffer
}

// startConsole launches serve with env and its console on a pipe; it stops
// when the test ends.
func startConsole(t *testing.T, env map[string]string) *console {
	t.Helper()
	in, typer := io.Pipe()
	c := &console{t: t, in: typer, out: &syncBuffer{}}
	env["TASKLOOM_CONSOLE"] = "true"
	c.srv = launch(t, env, func(o *app.Options) { o.Stdin, o.Stdout = in, c.out })
	t.Cleanup(func() { typer.Close(); c.srv.stop(); c.srv.wait(t, app.ShutdownTimeout+5*time.Second) })
	return c
}

// startTerminal launches serve with env on a pseudo-terminal, as a
// newcomer runs it: nothing says to chat, serve sees a terminal. The
// terminal does not echo, so what the test reads is what serve wrote.
func startTerminal(t *testing.T, env map[string]string) *console {
	t.Helper()
	master, slave := openPTY(t)
	c := &console{t: t, in: master, out: &syncBuffer{}}
	go func() { _, _ = io.Copy(c.out, master) }()
	c.srv = launch(t, env, func(o *app.Options) { o.Stdin, o.Stdout = slave, slave })
	t.Cleanup(func() { c.srv.stop(); c.srv.wait(t, app.ShutdownTimeout+5*time.Second); master.Close(); slave.Close() })
	return c
}

// openPTY opens a pseudo-terminal pair with echo off, as posix_openpt,
// unlockpt and ptsname do.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tios, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tios.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tios); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// say types a line.
func (c *console) say(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// waitFor waits, on the wall clock (it is the binary's), until the
// console has shown want.
func (c *console) waitFor(want string) {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(c.out.String(), want) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the console never showed %q:\n%s", want, c.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// served is a `taskloom serve` running in the test: its base URL, what
// it logs, and how to stop it (SIGTERM) and learn its exit code.
type served struct {
	base   string
	stderr *syncBuffer
	stop   context.CancelFunc
	exited chan int
}

// launch runs `taskloom serve` with env and waits until it listens;
// opts change its Options.
func launch(t *testing.T, env map[string]string, opts ...func(*app.Options)) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{stderr: &syncBuffer{}, stop: cancel, exited: make(chan int, 1)}
	addr := make(chan string, 1)
	o := app.Options{Getenv: envOf(env), Stdout: &syncBuffer{}, Stderr: s.stderr,
		OnListen: func(a string) { addr <- a }}
	for _, f := range opts {
		f(&o)
	}
	go func() { s.exited <- app.Main(ctx, o) }()
	select {
	case a := <-addr:
		s.base = "http://" + a
	case code := <-s.exited:
		cancel()
		t.Fatalf("exited %d before listening:\n%s", code, s.stderr.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("not listening after 30s:\n%s", s.stderr.String())
	}
	return s
}

// wait stops waiting for the exit code after limit.
func (s *served) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case code := <-s.exited:
		return code
	case <-time.After(limit):
		t.Fatalf("still running %s after SIGTERM:\n%s", limit, s.stderr.String())
		return -1
	}
}

// TestServeTunesTheCollector: the binary's serve (Options.TuneGC) runs
// with GOGC at app.GCPercent when GOGC is not set, says so in its log,
// and puts back the setting before when it exits. It runs alone: the
// collector's target is the whole process's.
func TestServeTunesTheCollector(t *testing.T) {
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	before := gcPercent()
	s := launch(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0"},
		func(o *app.Options) { o.TuneGC = true })
	running := gcPercent()
	s.stop()
	if code := s.wait(t, app.ShutdownTimeout+5*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, s.stderr.String())
	}
	if running != app.GCPercent {
		t.Errorf("GOGC while serving = %d, want %d", running, app.GCPercent)
	}
	if want := fmt.Sprintf("GOGC=%d (GOGC is not set)", app.GCPercent); !strings.Contains(s.stderr.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, s.stderr.String())
	}
	if after := gcPercent(); after != before {
		t.Errorf("GOGC after serve exited = %d, want %d as before", after, before)
	}
}

// startServe runs `taskloom serve` with env until the test ends, when it
// must exit 0, and returns its base URL.
func startServe(t *testing.T, env map[string]string) string {
	t.Helper()
	s := launch(t, env)
	t.Cleanup(func() {
		s.stop()
		if code := s.wait(t, app.ShutdownTimeout+5*time.Second); code != 0 {
			t.Errorf("exit %d:\n%s", code, s.stderr.String())
		}
	})
	return s.base
}

// TestServeWiresSlackHTTPMode: with Slack's bot token and signing secret,
// serve mounts the Events API on its listener and answers a signed
// mention through the fake Slack; a badly signed request is refused.
func TestServeWiresSlackHTTPMode(t *testing.T) {
	t.Parallel()
	fake := slackfake.New(t)
	base := startServe(t, map[string]string{
		"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_SIGNING_SECRET": fake.SigningSecret(), "SLACK_API_URL": fake.APIURL(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bad, err := fake.Request(ctx, base, fake.AppMention("C1", "U1", fake.Mention()+" create task Sneaky"), slackfake.SignedWith("wrong"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(bad); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("badly signed request: %v %v", resp, err)
	}
	req, err := fake.Request(ctx, base, fake.AppMention("C1", "U1", fake.Mention()+" create task Build auth"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("signed mention: %v %v", resp, err)
	}
	if _, err := fake.WaitMessages(ctx, 1, func(m slackfake.Message) bool { return strings.Contains(m.Text, "Created task #1") }); err != nil {
		t.Fatalf("no reply in Slack: %v", err)
	}
	// The Home tab (docs/discord.md, docs/slack.md) is wired too: opening it publishes U1's
	// tasks, and their next change refreshes it.
	send := func(p slackfake.Payload) {
		t.Helper()
		req, err := fake.Request(ctx, base, p)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%T: %v %v", p, resp, err)
		}
		resp.Body.Close()
	}
	send(fake.AppHomeOpened("U1", "home"))
	if _, err := fake.WaitCalls(ctx, "views.publish", 1); err != nil {
		t.Fatalf("the Home tab was not published: %v", err)
	}
	send(fake.AppMention("C1", "U1", fake.Mention()+" create task Second"))
	if _, err := fake.WaitCalls(ctx, "views.publish", 2); err != nil {
		t.Fatalf("the Home tab was not refreshed: %v", err)
	}
	if v, _ := fake.HomeView("U1"); !strings.Contains(strings.Join(v.Texts(), "\n"), `"Second"`) {
		t.Errorf("the refreshed Home tab = %q", v.Texts())
	}
}

// TestServeWiresDiscord: with DISCORD_BOT_TOKEN, serve connects to the
// (fake) Discord named by DISCORD_API_URL, and a mention creates a task
// that the demo model runs to completion, reported in the channel.
func TestServeWiresDiscord(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: "G1", ChannelIDs: []string{"C1"}}))
	startServe(t, map[string]string{
		"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_FLUSH_INTERVAL": "1s",
		"DISCORD_BOT_TOKEN": strings.TrimPrefix(fake.Token(), "Bot "), "DISCORD_API_URL": fake.URL(), "DISCORD_APPLICATION_ID": fake.ApplicationID(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := fake.WaitIdentified(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.MessageCreate("C1", "G1", "U1", "<@"+fake.BotUser().ID+"> create task write a haiku", fake.BotUser().ID)
	for _, want := range []string{"Created task #1", "completed!"} {
		for !strings.Contains(joined(fake.Messages("C1")), want) {
			select {
			case <-ctx.Done():
				t.Fatalf("the channel never showed %q:\n%s", want, joined(fake.Messages("C1")))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

func joined(msgs []discordfake.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

// TestCLIFollowsADemoTask is the API issue's "done when": `taskloom tasks
// create "…" && taskloom tasks events 1 --follow` against a running
// serve shows a demo-model task run to completion.
func TestCLIFollowsADemoTask(t *testing.T) {
	t.Parallel()
	base := startServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_API_TOKEN": apiToken})
	env := map[string]string{"TASKLOOM_URL": base, "TASKLOOM_API_TOKEN": apiToken}
	code, out, errOut := run(t, env, "tasks", "create", "write a haiku")
	if code != 0 || !strings.Contains(out, "#1") {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, env, "tasks", "events", "1", "--follow")
	if code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("events --follow: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, map[string]string{"TASKLOOM_URL": base}, "tasks", "list"); code != 1 || !strings.Contains(strings.ToLower(errOut), "token") {
		t.Fatalf("without the token: exit %d %q", code, errOut)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `taskloom_iterations_total{outcome="completed"} 1`) {
		t.Fatalf("metrics after one completed task:\n%s", body)
	}
}

// TestShutdownReleasesAGatedModelCall: SIGTERM (ctx) while a model call
// hangs: the process exits 0 within TASKLOOM_SHUTDOWN_TIMEOUT, and the
// task is released unchanged — a "released" event, no step.
func TestShutdownReleasesAGatedModelCall(t *testing.T) {
	t.Parallel()
	fake := testkit.NewOpenAI(t)
	fake.Hang()
	dir := t.TempDir()
	env := map[string]string{"TASKLOOM_DATA_DIR": dir, "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"OPENAI_BASE_URL": fake.URL(), "TASKLOOM_SHUTDOWN_TIMEOUT": "1s"}
	srv := launch(t, env)
	defer srv.stop()
	base, stderr := srv.base, srv.stderr
	resp, err := http.Post(base+"/api/tasks", "application/json", strings.NewReader(`{"goal":"Write the plan"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	for deadline := time.Now().Add(30 * time.Second); len(fake.Requests()) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the model was never called:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := time.Now()
	srv.stop() // SIGTERM
	if code := srv.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM during a model call:\n%s", code, stderr.String())
	}
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("shutdown took %s with a 1s timeout", took)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "taskloom.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	task, err := st.GetTask(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.TaskEvents(context.Background(), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if task.LeaseOwner != "" || task.Iteration != 0 || evs[len(evs)-1].Type != domain.EventReleased {
		t.Fatalf("task after shutdown = %+v, last event %s; want released unchanged", task, evs[len(evs)-1].Type)
	}
}

// TestPruneCommand: `taskloom prune` deletes the memories older than
// TASKLOOM_RETENTION and keeps the rest.
func TestPruneCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "taskloom.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, age := range []time.Duration{49 * time.Hour, 47 * time.Hour} {
		if _, _, err := st.SaveMemory(context.Background(), domain.Memory{Platform: "console", MessageID: fmt.Sprint(i),
			Room: "console", Text: fmt.Sprint("m", i), CreatedAt: time.Now().Add(-age)}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, stdout, stderr := run(t, map[string]string{"TASKLOOM_DATA_DIR": dir, "TASKLOOM_RETENTION": "48h"}, "prune")
	if code != 0 || !strings.Contains(stdout, "deleted 1 chat memories older than 48h") {
		t.Fatalf("prune = %d, %q, %q", code, stdout, stderr)
	}
	st, err = sqlite.Open(context.Background(), filepath.Join(dir, "taskloom.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if left, err := st.RecentMemories(context.Background(), "console", 0); err != nil || len(left) != 1 || left[0].Text != "m1" {
		t.Fatalf("memories left = %+v, %v", left, err)
	}
}

// TestStoreThatCannotBeOpenedIsSaidOnce: a DATABASE_URL nobody answers
// at stops start-up with its error said once, naming the variable, and
// without the password the URL carries.
func TestStoreThatCannotBeOpenedIsSaidOnce(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	env := map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"DATABASE_URL": "postgres://taskloom:hunter2@" + addr + "/taskloom?sslmode=disable&connect_timeout=5"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr syncBuffer
	code := app.Main(ctx, app.Options{Args: []string{"serve"}, Getenv: envOf(env), Stdout: io.Discard, Stderr: &stderr})
	out := stderr.String()
	if code == app.ExitOK || strings.Count(out, "DATABASE_URL: cannot open the PostgreSQL store") != 1 {
		t.Fatalf("exit %d; want a failure said once naming DATABASE_URL:\n%s", code, out)
	}
	if strings.Contains(out, "level=ERROR") || strings.Contains(out, "hunter2") {
		t.Errorf("the error is logged as well, or shows the password:\n%s", out)
	}
}
