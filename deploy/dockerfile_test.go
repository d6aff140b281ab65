package deploy

import (
	"encoding/json"
	"fmt"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/taskloom/taskloom/internal/app"
)

// image is what the Dockerfile's final stage gives a container.
type image struct {
	entrypoint []string
	cmd        []string
	env        map[string]string
	binary     string // where taskloom is in the image
}

// argv is the command line a container runs when nothing overrides it.
func (img *image) argv() []string { return containerArgv(img, nil, nil) }

// containerArgv is the command line of a container of img: entrypoint
// (Compose's entrypoint, Kubernetes' command) replaces the image's
// ENTRYPOINT and drops its CMD; args (Compose's command, Kubernetes' args)
// replaces CMD.
func containerArgv(img *image, entrypoint, args []string) []string {
	entry, cmd := img.entrypoint, img.cmd
	if len(entrypoint) > 0 {
		entry, cmd = entrypoint, nil
	}
	if len(args) > 0 {
		cmd = args
	}
	return append(slices.Clone(entry), cmd...)
}

type dockerInstr struct {
	line int
	cmd  string // FROM, RUN, … in upper case
	rest string // the arguments, continuation lines joined
}

type dockerStage struct {
	index  int
	name   string // after AS, or ""
	base   string
	instrs []dockerInstr
}

// parseDockerfile splits a Dockerfile into stages of instructions. It
// knows what this repository's Dockerfile uses: comments, continuation
// lines, FROM … AS.
func parseDockerfile(text string) ([]dockerStage, error) {
	var (
		stages  []dockerStage
		logical strings.Builder
		start   int
	)
	lines := strings.Split(text, "\n")
	for i, raw := range lines {
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && logical.Len() == 0) {
			continue // comments go, even inside a continued instruction
		}
		if logical.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(strings.TrimRight(raw, " \t\r"), `\`); ok {
			logical.WriteString(cont)
			continue
		}
		logical.WriteString(raw)
		cmd, rest, _ := strings.Cut(strings.TrimSpace(logical.String()), " ")
		logical.Reset()
		in := dockerInstr{line: start, cmd: strings.ToUpper(cmd), rest: strings.TrimSpace(rest)}
		if in.cmd == "FROM" {
			var words []string
			for _, w := range strings.Fields(in.rest) {
				if !strings.HasPrefix(w, "--") {
					words = append(words, w)
				}
			}
			if len(words) == 0 {
				return nil, fmt.Errorf("line %d: FROM names no image", in.line)
			}
			st := dockerStage{index: len(stages), base: words[0]}
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				st.name = words[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd == "ARG" {
				continue // an ARG before FROM only parameterises FROM
			}
			return nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	if logical.Len() > 0 {
		return nil, fmt.Errorf("line %d: the file ends inside a continued instruction", start)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("no FROM")
	}
	return stages, nil
}

// shellWords splits s at unquoted white space, removing quotes and
// backslash escapes, as Docker reads ENV and COPY arguments.
func shellWords(s string) []string {
	var (
		words []string
		w     strings.Builder
		in    bool // inside a word
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != '\'' && r == '\\' && i+1 < len(rs):
			i++
			w.WriteRune(rs[i])
			in = true
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// parseEnv reads ENV's arguments: KEY=VALUE pairs, or the old "KEY VALUE".
func parseEnv(rest string) (map[string]string, error) {
	words := shellWords(rest)
	if len(words) == 0 {
		return nil, fmt.Errorf("ENV sets nothing")
	}
	if !strings.Contains(words[0], "=") {
		return map[string]string{words[0]: strings.Join(words[1:], " ")}, nil
	}
	env := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return nil, fmt.Errorf("ENV %q: want KEY=VALUE", w)
		}
		env[k] = v
	}
	return env, nil
}

// execForm reads the JSON array form of ENTRYPOINT and CMD.
func execForm(rest string) ([]string, bool) {
	var argv []string
	if err := json.Unmarshal([]byte(rest), &argv); err != nil {
		return nil, false
	}
	return argv, true
}

// copyArgs reads COPY's flags, sources and destination.
func copyArgs(rest string) (flags map[string]string, srcs []string, dest string) {
	words := shellWords(rest)
	flags = map[string]string{}
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		k, v, _ := strings.Cut(strings.TrimPrefix(words[0], "--"), "=")
		flags[k] = v
		words = words[1:]
	}
	if len(words) < 2 {
		return flags, nil, ""
	}
	return flags, words[:len(words)-1], words[len(words)-1]
}

var goDirective = regexp.MustCompile(`(?m)^go\s+(\S+)`)

// atLeast says whether version tag (1.26 or 1.26.8) provides version min;
// a tag without a patch number is the newest of its minor version.
func atLeast(tag, min string) bool {
	t, m := strings.Split(tag, "."), strings.Split(min, ".")
	for i := range t {
		if i >= len(m) {
			return true
		}
		a, errA := strconv.Atoi(t[i])
		b, errB := strconv.Atoi(m[i])
		if errA != nil || errB != nil {
			return false
		}
		if a != b {
			return a > b
		}
	}
	return true
}

// checkDockerfile checks the image and returns what it gives a container,
// or nil when the file cannot be read.
func checkDockerfile(f files, p *problems) *image {
	const file = "Dockerfile"
	stages, err := parseDockerfile(f[file])
	if err != nil {
		p.add(file, "%v", err)
		return nil
	}
	if len(stages) < 2 {
		p.add(file, "one stage: want a build stage and a minimal runtime stage")
		return nil
	}

	// The build stage: go build ./cmd/taskloom, static.
	var (
		build *dockerStage
		out   string
	)
	for i := range stages {
		st := &stages[i]
		cgoOff := false
		for _, in := range st.instrs {
			if in.cmd == "ENV" {
				env, _ := parseEnv(in.rest)
				cgoOff = cgoOff || env["CGO_ENABLED"] == "0"
			}
			if in.cmd != "RUN" || !strings.Contains(in.rest, "go build") {
				continue
			}
			build = st
			words := strings.Fields(in.rest)
			for j, w := range words {
				if w == "-o" && j+1 < len(words) {
					out = words[j+1]
				}
				if w == "CGO_ENABLED=0" {
					cgoOff = true
				}
			}
			if !containsAny(words, "./cmd/taskloom", "github.com/taskloom/taskloom/cmd/taskloom") {
				p.add(file, "line %d: the go build does not build ./cmd/taskloom", in.line)
			}
			if !cgoOff {
				p.add(file, "line %d: the go build does not set CGO_ENABLED=0: the binary would need the C library of the build image", in.line)
			}
			if out == "" {
				p.add(file, "line %d: the go build names no output (-o)", in.line)
			}
			checkVersionFlags(p, file, *st, in)
		}
	}
	if build == nil {
		p.add(file, "no stage runs go build ./cmd/taskloom")
		return nil
	}
	if tag, ok := strings.CutPrefix(build.base, "golang:"); !ok {
		p.add(file, "the build stage is FROM %s: want an official golang image", build.base)
	} else if m := goDirective.FindStringSubmatch(f["../go.mod"]); m != nil {
		ver, _, _ := strings.Cut(tag, "-")
		if !atLeast(ver, m[1]) {
			// The golang images set GOTOOLCHAIN=local: an older Go stops.
			p.add(file, "the build stage is FROM %s, older than go.mod's go %s", build.base, m[1])
		}
	}

	// The runtime stage.
	final := stages[len(stages)-1]
	if final.index == build.index {
		p.add(file, "the final stage is the build stage: want a minimal runtime stage after it")
		return nil
	}
	if final.base != "scratch" && !strings.Contains(final.base, "distroless/static") {
		p.add(file, "the runtime stage is FROM %s: want distroless static or scratch (no shell, no package manager)", final.base)
	}
	img := &image{env: map[string]string{}}
	var user string
	var exposed []string
	for _, in := range final.instrs {
		switch in.cmd {
		case "ENV":
			env, err := parseEnv(in.rest)
			if err != nil {
				p.add(file, "line %d: %v", in.line, err)
			}
			for k, v := range env {
				img.env[k] = v
			}
		case "USER":
			user = in.rest
		case "EXPOSE":
			for _, port := range strings.Fields(in.rest) {
				port, _, _ = strings.Cut(port, "/")
				exposed = append(exposed, port)
			}
		case "ENTRYPOINT", "CMD":
			argv, ok := execForm(in.rest)
			if !ok {
				p.add(file, "line %d: %s %s is in shell form, which needs a shell: use the JSON form", in.line, in.cmd, in.rest)
			}
			if in.cmd == "ENTRYPOINT" {
				img.entrypoint, img.cmd = argv, nil // ENTRYPOINT resets CMD
			} else {
				img.cmd = argv
			}
		case "COPY":
			flags, srcs, dest := copyArgs(in.rest)
			if flags["from"] != build.name && flags["from"] != strconv.Itoa(build.index) {
				continue
			}
			for _, src := range srcs {
				if src == out {
					img.binary = dest
					if strings.HasSuffix(dest, "/") {
						img.binary = path.Join(dest, path.Base(src))
					}
				}
			}
		}
	}

	uid, _, _ := strings.Cut(user, ":")
	switch n, err := strconv.Atoi(uid); {
	case user == "":
		p.add(file, "the runtime stage sets no USER: the container would run as root")
	case err != nil:
		p.add(file, "USER %s: want a numeric uid, so that Kubernetes can verify runAsNonRoot", user)
	case n == 0:
		p.add(file, "USER %s is root", user)
	}
	if img.binary == "" {
		p.add(file, "the runtime stage does not COPY --from=%s the binary built at %s", build.name, out)
	}
	argv := img.argv()
	if len(argv) == 0 || argv[0] != img.binary {
		p.add(file, "ENTRYPOINT and CMD %q do not start the binary copied to %s", argv, img.binary)
		return img
	}

	addr := img.env["TASKLOOM_HTTP_ADDR"]
	if addr == "" {
		p.add(file, "no ENV TASKLOOM_HTTP_ADDR: taskloom would listen on 127.0.0.1, unreachable from outside the container")
	} else {
		checkListenAddr(p, file, "the image", addr, "")
		if _, port, _ := net.SplitHostPort(addr); !containsAny(exposed, port) {
			p.add(file, "EXPOSE %v does not include the port of TASKLOOM_HTTP_ADDR %q", exposed, addr)
		}
	}
	if dir := img.env["TASKLOOM_DATA_DIR"]; !path.IsAbs(dir) {
		p.add(file, "ENV TASKLOOM_DATA_DIR %q: want an absolute directory the user may write", dir)
	} else if !chownedTo(final, dir, uid) {
		p.add(file, "TASKLOOM_DATA_DIR %s is not created for the runtime user (COPY --chown=%s … %s)", dir, uid, dir)
	}

	// The image needs TASKLOOM_API_TOKEN from whoever runs it: with one,
	// the default command must be one taskloom accepts.
	env := map[string]string{"TASKLOOM_API_TOKEN": standIn("TASKLOOM_API_TOKEN")}
	for k, v := range img.env {
		env[k] = v
	}
	checkStarts(p, file, "the default command", argv[1:], env)
	return img
}

// The variables `taskloom version` prints when the build sets them: the
// build sees no .git, so it records no VCS revision of its own.
var _ = []*string{&app.Version, &app.Revision}

// versionVars are the build arguments the go build passes to -X, and the
// variables of internal/app they set.
var versionVars = []struct{ arg, variable string }{
	{"VERSION", "github.com/taskloom/taskloom/internal/app.Version"},
	{"REVISION", "github.com/taskloom/taskloom/internal/app.Revision"},
}

// checkVersionFlags reports a problem unless the go build run by in, in
// stage st, sets internal/app's Version and Revision from build
// arguments declared in the stage before it.
func checkVersionFlags(p *problems, file string, st dockerStage, in dockerInstr) {
	for _, v := range versionVars {
		if want := "-X " + v.variable + "=${" + v.arg + "}"; !strings.Contains(in.rest, want) {
			p.add(file, "line %d: the go build does not pass the %s build argument to the binary (-ldflags \"%s\")", in.line, v.arg, want)
		}
		declared := false
		for _, a := range st.instrs {
			if a.line >= in.line {
				break
			}
			name, _, _ := strings.Cut(a.rest, "=")
			declared = declared || (a.cmd == "ARG" && strings.TrimSpace(name) == v.arg)
		}
		if !declared {
			p.add(file, "line %d: the build stage declares no ARG %s before the go build: ${%s} would be empty", in.line, v.arg, v.arg)
		}
	}
}

// chownedTo says whether the stage copies a directory to dir owned by uid.
func chownedTo(st dockerStage, dir, uid string) bool {
	for _, in := range st.instrs {
		if in.cmd != "COPY" {
			continue
		}
		flags, _, dest := copyArgs(in.rest)
		owner, _, _ := strings.Cut(flags["chown"], ":")
		if path.Clean(dest) == path.Clean(dir) && owner == uid {
			return true
		}
	}
	return false
}

func containsAny(list []string, want ...string) bool {
	for _, s := range list {
		for _, w := range want {
			if s == w {
				return true
			}
		}
	}
	return false
}
