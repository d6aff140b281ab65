package app_test

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/config"
)

// TestVersion checks that --version and version print the same
// "taskloom <version> (<revision>)" line.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, flag, errOut := run(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(flag, "taskloom ") || !strings.HasSuffix(flag, ")\n") || strings.Count(flag, "\n") != 1 {
		t.Fatalf("--version = %d %q %q", code, flag, errOut)
	}
	if code, cmd, _ := run(t, nil, "version"); code != 0 || cmd != flag {
		t.Fatalf("version = %d %q; --version said %q", code, cmd, flag)
	}
}

func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/taskloom/taskloom", Version: "v1.4.0"}}
		bi.Settings = []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
		return bi
	}
	for _, tt := range []struct {
		name              string
		bi                *debug.BuildInfo
		version, revision string
		want              string
	}{
		{"a build in a clean checkout", vcs("0123456789abcdef0123456789abcdef01234567", "false"), "", "", "v1.4.0 (0123456789ab)"},
		{"with changes not committed", vcs("0123456789abcdef0123456789abcdef01234567", "true"), "", "", "v1.4.0 (0123456789ab, modified)"},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "", "(devel) (no VCS revision recorded)"},
		{"no build info", nil, "", "", "(devel) (no VCS revision recorded)"},
		{"-ldflags win", vcs("0123456789abcdef", "false"), "v2.0.0", "fedcba987654", "v2.0.0 (fedcba987654)"},
		{"-ldflags version, revision from the build", vcs("0123456789abcdef", "false"), "v2.0.0", "", "v2.0.0 (0123456789ab)"},
	} {
		if got := app.VersionOf(tt.bi, tt.version, tt.revision); got != tt.want {
			t.Errorf("%s: VersionOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// commands are the paths of every command in the tree, "tasks create"
// and the like, cobra's generated ones included.
func commands(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, sub := range c.Commands() {
		if sub.Hidden {
			continue
		}
		path := append(append([]string{}, prefix...), sub.Name())
		out = append(out, path)
		out = append(out, commands(sub, path)...)
	}
	return out
}

// TestEveryCommandHasItsOwnHelp runs --help, -h and help <command> on
// every command and subcommand: each exits 0 and prints that command's
// usage line.
func TestEveryCommandHasItsOwnHelp(t *testing.T) {
	t.Parallel()
	root := app.Command(app.Options{Getenv: envOf(nil)})
	root.InitDefaultHelpCmd()
	paths := commands(root, nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands in the tree: %q", len(paths), paths)
	}
	for _, path := range append(paths, nil) {
		usage := "Usage: " + strings.Join(append([]string{"taskloom"}, path...), " ")
		for _, args := range [][]string{append(path, "--help"), append(path, "-h"), append([]string{"help"}, path...)} {
			code, out, errOut := run(t, nil, args...)
			if code != 0 || !strings.Contains(out, usage) || errOut != "" {
				t.Errorf("taskloom %s = %d; want 0 and %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, usage, out, errOut)
			}
		}
	}
	if code, _, errOut := run(t, nil, "help", "frobnicate"); code != app.ExitUsage || !strings.Contains(errOut, `no help for "frobnicate"`) {
		t.Errorf("help frobnicate = %d %q", code, errOut)
	}
}

// TestServeHelpListsTheEnvironment checks that serve --help lists every
// variable config.Load reads, and those serve reads besides.
func TestServeHelpListsTheEnvironment(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help = %d", code)
	}
	read := map[string]bool{}
	if _, err := config.Load(func(name string) string { read[name] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	for _, v := range config.Vars {
		read[v.Name] = true
	}
	if !read["TASKLOOM_WORKERS"] || !read["TASKLOOM_CONSOLE"] {
		t.Fatalf("the variables read are %v", read)
	}
	for name := range read {
		if !strings.Contains(out, "\n  "+name) {
			t.Errorf("serve --help does not list %s", name)
		}
	}
	for _, flag := range []string{"--data-dir", "--http-addr", "--character"} {
		if !strings.Contains(out, flag) {
			t.Errorf("serve --help does not list %s", flag)
		}
	}
}

// TestCompletion prints each shell's script, and asks the program what
// the scripts ask it: the commands, the tasks subcommands, their flags
// and --strategy's values.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{"bash": "complete -o default -F __start_taskloom taskloom", "zsh": "#compdef taskloom", "fish": "complete -c taskloom"} {
		code, out, errOut := run(t, nil, "completion", shell)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s = %d, lacks %q\nstderr: %s", shell, code, want, errOut)
		}
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{""}, []string{"serve", "migrate", "check", "prune", "tasks", "version", "completion", "help"}},
		{[]string{"tasks", ""}, []string{"list", "show", "create", "pause", "resume", "cancel", "answer", "approve", "deny", "retry", "files", "events"}},
		{[]string{"tasks", "create", "--"}, []string{"--strategy", "--max-iterations", "--json", "--url"}},
		{[]string{"tasks", "create", "--strategy", ""}, []string{"loop", "review", "group_chat"}},
		{[]string{"tasks", "list", "--status", ""}, []string{"running", "stalemate"}},
		{[]string{"serve", "--"}, []string{"--data-dir", "--http-addr", "--character"}},
	} {
		code, out, errOut := run(t, nil, append([]string{"__complete"}, tt.args...)...)
		if code != 0 {
			t.Errorf("__complete %q = %d: %s", tt.args, code, errOut)
			continue
		}
		got := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			got[strings.SplitN(line, "\t", 2)[0]] = true
		}
		for _, w := range tt.want {
			if !got[w] {
				t.Errorf("completing %q does not offer %s:\n%s", tt.args, w, out)
			}
		}
	}
	if code, _, _ := run(t, nil, "completion", "tcsh"); code == 0 {
		t.Error("completion tcsh exited 0")
	}
}

// TestFlagsAndMistakes: the service flags override the environment, and
// a bad flag or argument is a usage error in one line or two.
func TestFlagsAndMistakes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"TASKLOOM_DATA_DIR": filepath.Join(dir, "not-here")}
	if code, out, errOut := run(t, env, "migrate", "--data-dir", dir); code != 0 || !strings.HasPrefix(out, "applied migrations 1 to ") {
		t.Fatalf("migrate --data-dir = %d %q %q", code, out, errOut)
	}
	// Again: nothing is applied, and it does not say something was.
	if code, out, errOut := run(t, env, "migrate", "--data-dir", dir); code != 0 || !strings.HasPrefix(out, "the schema is up to date (version ") || strings.Contains(out, "applied migrations") {
		t.Fatalf("migrate again = %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "taskloom.db")); err != nil {
		t.Fatalf("--data-dir was not used: %v", err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--colour"}, "unknown flag: --colour"},
		{[]string{"--http-addr"}, "flag needs an argument: --http-addr"},
		{[]string{"migrate", "--http-addr", "nowhere"}, "TASKLOOM_HTTP_ADDR"},
		{[]string{"version", "extra"}, `unknown command "extra"`},
	} {
		code, _, errOut := run(t, env, tt.args...)
		if code != app.ExitUsage || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") > 2 {
			t.Errorf("taskloom %s = %d %q; want %d and %q", strings.Join(tt.args, " "), code, errOut, app.ExitUsage, tt.want)
		}
	}
}
