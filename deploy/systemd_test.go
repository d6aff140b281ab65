package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/config"
)

// systemdEnv reads an environment file as systemd's EnvironmentFile= does
// (systemd.exec(5)): a line starting with # or ; is a comment; otherwise
// NAME=VALUE, the value stripped of the white space around it and kept
// whole inside, a "#" after it included; a value in double or single
// quotes loses them. commented gives the assignments a reader would
// uncomment as well: the example lines "# NAME=value".
func systemdEnv(text string, commented bool) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			if !commented {
				continue
			}
			line = strings.TrimSpace(strings.TrimLeft(line, "#;"))
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok || !envName.MatchString(name) {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		env[name] = value
	}
	return env
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// checkEnvExample finds what systemd would take into a value that the
// reader did not mean as one: a comment after a value, white space inside
// one. Every assignment counts, the commented examples too, since they are
// there to be uncommented.
func checkEnvExample(text string) []string {
	var p []string
	for name, value := range systemdEnv(text, true) {
		if strings.ContainsAny(value, "# \t") {
			p = append(p, name+" would be "+strconv.Quote(value)+": systemd keeps a comment after a value, and white space inside it")
		}
	}
	return p
}

// TestEnvironmentFileAsSystemdReadsIt: the example environment file gives,
// read the way systemd reads it, values Taskloom starts with — the token
// line of an earlier example, with its comment after the value, became
// part of the token, and every client holding the real one got 401.
func TestEnvironmentFileAsSystemdReadsIt(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("taskloom.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkEnvExample(string(b)) {
		t.Error("taskloom.env.example: " + p)
	}
	env := systemdEnv(string(b), false)
	if _, err := config.Load(func(k string) string { return env[k] }); err != nil {
		t.Errorf("taskloom.env.example as it is: %v", err)
	}
	// The same check on the line that was there before finds it.
	if p := checkEnvExample("# TASKLOOM_API_TOKEN=                   # at least 32 characters\n"); len(p) != 1 {
		t.Errorf("a comment after a value is not caught: %v", p)
	}
	// And Taskloom refuses such a token at start-up, naming the variable.
	bad := systemdEnv("TASKLOOM_API_TOKEN="+strings.Repeat("ab", 32)+"     # at least 32 characters\n", false)
	if _, err := config.Load(func(k string) string { return bad[k] }); err == nil || !strings.Contains(err.Error(), "TASKLOOM_API_TOKEN") {
		t.Errorf("a token with a comment after it: %v, want it refused naming TASKLOOM_API_TOKEN", err)
	}
}

// TestSystemdUnitOnAFreshHost: the unit needs nothing the host lacks —
// systemd makes its user and its state directory — keeps its data where
// the example environment file says, and passes systemd-analyze verify
// where systemd is installed.
func TestSystemdUnitOnAFreshHost(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("taskloom.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	keys := map[string]string{}
	for _, line := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = v
		}
	}
	if keys["User"] != "" && keys["DynamicUser"] != "yes" {
		t.Errorf("User=%s: nothing on a fresh host creates that user; use DynamicUser=yes", keys["User"])
	}
	env, _ := os.ReadFile("taskloom.env.example")
	dataDir := systemdEnv(string(env), false)["TASKLOOM_DATA_DIR"]
	if keys["StateDirectory"] == "" || "/var/lib/"+keys["StateDirectory"] != dataDir {
		t.Errorf("StateDirectory=%q, want the directory of TASKLOOM_DATA_DIR=%s made by systemd", keys["StateDirectory"], dataDir)
	}
	if keys["WorkingDirectory"] != dataDir {
		t.Errorf("WorkingDirectory=%q, want %s", keys["WorkingDirectory"], dataDir)
	}
	if !strings.HasSuffix(keys["ExecStart"], "taskloom serve") || !strings.HasSuffix(keys["ExecStartPre"], "taskloom migrate") {
		t.Errorf("ExecStartPre=%q ExecStart=%q, want taskloom migrate then taskloom serve", keys["ExecStartPre"], keys["ExecStart"])
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit is not verified by systemd")
		return
	}
	// The binary is not installed here: verify a copy that runs /bin/true.
	dir := t.TempDir()
	copied := filepath.Join(dir, "taskloom.service")
	if err := os.WriteFile(copied, []byte(strings.ReplaceAll(unit, "/usr/local/bin/taskloom", "/bin/true")), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(analyze, "verify", copied)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.Contains(out.String(), "taskloom.service") {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out.String())
	}
}
