package deploy

import (
	"maps"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of the Compose specification the checks read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string        `yaml:"image"`
	Build       *composeBuild `yaml:"build"`
	Entrypoint  stringList    `yaml:"entrypoint"`
	Command     stringList    `yaml:"command"`
	Environment envMap        `yaml:"environment"`
	DependsOn   dependsOn     `yaml:"depends_on"`
	Healthcheck *struct {
		Test stringList `yaml:"test"`
	} `yaml:"healthcheck"`
	Hostname string     `yaml:"hostname"`
	ReadOnly bool       `yaml:"read_only"`
	Tmpfs    stringList `yaml:"tmpfs"`
	Volumes  []mount    `yaml:"volumes"`
	CapDrop  []string   `yaml:"cap_drop"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

func (b *composeBuild) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b.Context = n.Value
		return nil
	}
	type plain composeBuild
	return n.Decode((*plain)(b))
}

// stringList is a list, or a string split at white space (Compose's
// command, entrypoint, tmpfs and healthcheck test take either).
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = strings.Fields(n.Value)
		return nil
	}
	var s []string
	err := n.Decode(&s)
	*l = s
	return err
}

// envMap is environment as a mapping or as a list of KEY=VALUE.
type envMap map[string]string

func (e *envMap) UnmarshalYAML(n *yaml.Node) error {
	*e = envMap{}
	if n.Kind == yaml.SequenceNode {
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			(*e)[k] = v
		}
		return nil
	}
	var m map[string]*string // a null value is an empty one
	if err := n.Decode(&m); err != nil {
		return err
	}
	for k, v := range m {
		if v != nil {
			(*e)[k] = *v
		} else {
			(*e)[k] = ""
		}
	}
	return nil
}

// dependsOn maps a service to the condition waited for; the list form
// waits for service_started.
type dependsOn map[string]string

func (d *dependsOn) UnmarshalYAML(n *yaml.Node) error {
	*d = dependsOn{}
	if n.Kind == yaml.SequenceNode {
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		for _, s := range list {
			(*d)[s] = "service_started"
		}
		return nil
	}
	var m map[string]struct {
		Condition string `yaml:"condition"`
	}
	if err := n.Decode(&m); err != nil {
		return err
	}
	for s, c := range m {
		if c.Condition == "" {
			c.Condition = "service_started"
		}
		(*d)[s] = c.Condition
	}
	return nil
}

// mount is a volume in the short ("source:target[:mode]") or long syntax.
type mount struct{ Source, Target string }

func (m *mount) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		parts := strings.Split(n.Value, ":")
		switch len(parts) {
		case 1:
			m.Target = parts[0]
		default:
			m.Source, m.Target = parts[0], parts[1]
		}
		return nil
	}
	var long struct{ Source, Target string }
	err := n.Decode(&long)
	*m = mount(long)
	return err
}

// prometheusConfig is the part of prometheus.yml the checks read.
type prometheusConfig struct {
	ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
}

type scrapeConfig struct {
	JobName       string `yaml:"job_name"`
	MetricsPath   string `yaml:"metrics_path"`
	Scheme        string `yaml:"scheme"`
	StaticConfigs []struct {
		Targets []string `yaml:"targets"`
	} `yaml:"static_configs"`
}

func (s scrapeConfig) metricsPath() string {
	if s.MetricsPath == "" {
		return "/metrics"
	}
	return s.MetricsPath
}

func parsePrometheus(f files, p *problems) prometheusConfig {
	var c prometheusConfig
	if err := yaml.Unmarshal([]byte(f["prometheus.yml"]), &c); err != nil {
		p.add("prometheus.yml", "%v", err)
	}
	return c
}

// interpolation is one ${NAME}, ${NAME:-default} or ${NAME:?message}.
var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// exampleEnv reads compose.env.example: the variables it asks for, each
// given a stand-in of the form the file asks for.
func exampleEnv(f files) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(f["compose.env.example"], "\n") {
		line = strings.TrimSpace(line)
		if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = standIn(k)
		}
	}
	return env
}

// interpolate substitutes Compose's ${...} in s from env, reporting a
// required variable that env lacks.
func interpolate(s string, env map[string]string, p *problems) string {
	s = strings.ReplaceAll(s, "$$", "\x00") // an escaped dollar sign
	s = interpolation.ReplaceAllStringFunc(s, func(m string) string {
		sub := interpolation.FindStringSubmatch(m)
		name, op, arg := sub[1], sub[2], sub[3]
		v, ok := env[name]
		if ok && (v != "" || !strings.HasPrefix(op, ":")) {
			return v
		}
		switch op {
		case ":-", "-":
			return arg
		case ":?", "?":
			p.add("compose.yaml", "${%s} is required, but compose.env.example does not ask for it", name)
		}
		return ""
	})
	return strings.ReplaceAll(s, "\x00", "$")
}

// urlPassword finds the password in a URL that may hold ${...}.
var urlPassword = regexp.MustCompile(`^[a-z]+://[^:@/]*:(.*)@[^@]*$`)

// hardCoded says whether v, a credential's value in compose.yaml, is
// written out rather than taken from the environment.
func hardCoded(v string) bool {
	if v == "" {
		return false
	}
	m := interpolation.FindStringSubmatch(v)
	if m == nil || m[0] != v {
		return true
	}
	return (m[2] == ":-" || m[2] == "-") && m[3] != "" // a default is written out
}

// checkCompose checks compose.yaml and returns the variables its
// replicas are given.
func checkCompose(f files, img *image, p *problems) (replicaVars []string) {
	const file = "compose.yaml"
	var raw composeFile
	if err := yaml.Unmarshal([]byte(f[file]), &raw); err != nil {
		p.add(file, "%v", err)
		return
	}
	env := exampleEnv(f)

	// Services built from deploy/Dockerfile run taskloom.
	var taskloom, replicas []string
	var migrate, database, prometheus string
	for _, name := range slices.Sorted(maps.Keys(raw.Services)) {
		s := raw.Services[name]
		for k, v := range s.Environment {
			if secretName(k) && hardCoded(v) {
				p.add(file, "service %s: %s is hard-coded: take it from the environment (${%s})", name, k, k)
			}
			if m := urlPassword.FindStringSubmatch(v); k == "DATABASE_URL" && m != nil && hardCoded(m[1]) {
				p.add(file, "service %s: the password in DATABASE_URL is hard-coded: take it from the environment", name)
			}
		}
		switch {
		case s.Build != nil:
			df := s.Build.Dockerfile
			if df == "" {
				df = "Dockerfile"
			}
			if got := filepath.ToSlash(filepath.Clean(filepath.Join("deploy", s.Build.Context, df))); got != "deploy/Dockerfile" {
				p.add(file, "service %s is built from %s, not deploy/Dockerfile", name, got)
				continue
			}
			taskloom = append(taskloom, name)
		case strings.HasPrefix(s.Image, "postgres:"):
			database = name
		case strings.HasPrefix(s.Image, "prom/prometheus"):
			prometheus = name
		}
	}
	// A service may use the image another one builds.
	for _, name := range slices.Sorted(maps.Keys(raw.Services)) {
		s := raw.Services[name]
		if s.Build == nil && s.Image != "" && !slices.Contains(taskloom, name) {
			for _, t := range taskloom {
				if raw.Services[t].Image == s.Image {
					taskloom = append(taskloom, name)
					break
				}
			}
		}
	}
	if img == nil {
		return // the Dockerfile's problems are reported
	}
	if database == "" {
		p.add(file, "no PostgreSQL service (image postgres:…)")
	} else if hc := raw.Services[database].Healthcheck; hc == nil || !slices.ContainsFunc(hc.Test, func(s string) bool { return strings.Contains(s, "pg_isready") }) {
		p.add(file, "service %s has no healthcheck running pg_isready: nothing can wait for the database", database)
	}

	addrs := map[string]string{} // replica → TASKLOOM_HTTP_ADDR
	urls := map[string]string{}  // service → DATABASE_URL
	for _, name := range taskloom {
		s := raw.Services[name]
		argv := containerArgv(img, s.Entrypoint, s.Command)
		if len(argv) == 0 || argv[0] != img.binary {
			p.add(file, "service %s runs %q, not %s", name, argv, img.binary)
			continue
		}
		cenv := maps.Clone(img.env)
		for k, v := range s.Environment {
			cenv[k] = interpolate(v, env, p)
		}
		who := "service " + name
		for _, k := range slices.Sorted(maps.Keys(s.Environment)) {
			checkVarName(p, file, who, k)
		}
		sub := checkStarts(p, file, who, argv[1:], cenv)
		urls[name] = cenv["DATABASE_URL"]
		if s.ReadOnly {
			for _, dir := range []string{cenv["TASKLOOM_DATA_DIR"], "/tmp"} {
				if !mountedAt(s, dir) {
					p.add(file, "%s has a read-only root filesystem, but nothing is mounted at %s (TASKLOOM_DATA_DIR or /tmp)", who, dir)
				}
			}
		}
		switch sub {
		case "migrate":
			migrate = name
			if database != "" && s.DependsOn[database] != "service_healthy" {
				p.add(file, "%s does not wait for %s to be healthy (depends_on condition service_healthy)", who, database)
			}
		case "serve":
			replicas = append(replicas, name)
			for k := range s.Environment {
				if !slices.Contains(replicaVars, k) {
					replicaVars = append(replicaVars, k)
				}
			}
			addrs[name] = cenv["TASKLOOM_HTTP_ADDR"]
			checkListenAddr(p, file, who, cenv["TASKLOOM_HTTP_ADDR"], "")
		}
	}
	if len(replicas) != 2 {
		p.add(file, "%d replicas serve (%v): want 2 replicas sharing DATABASE_URL", len(replicas), replicas)
	}
	if migrate == "" {
		p.add(file, "no service runs taskloom migrate")
	}
	for _, r := range replicas {
		s := raw.Services[r]
		if migrate != "" && s.DependsOn[migrate] != "service_completed_successfully" {
			p.add(file, "replica %s does not wait for %s to finish (depends_on condition service_completed_successfully)", r, migrate)
		}
	}
	withURL := slices.Clone(replicas)
	if migrate != "" {
		withURL = append(withURL, migrate)
	}
	for _, name := range withURL {
		u, err := url.Parse(urls[name])
		if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
			p.add(file, "service %s: DATABASE_URL %q is not a postgres:// URL", name, urls[name])
			continue
		}
		if u.Hostname() != database {
			p.add(file, "service %s: DATABASE_URL names host %s, not the database service %s", name, u.Hostname(), database)
		}
		if len(replicas) > 0 && urls[name] != urls[replicas[0]] {
			p.add(file, "services %s and %s have different DATABASE_URLs", name, replicas[0])
		}
	}

	// Prometheus scrapes every replica, at a path the server serves.
	if prometheus == "" {
		p.add(file, "no Prometheus service (image prom/prometheus)")
		return
	}
	if !slices.ContainsFunc(raw.Services[prometheus].Volumes, func(m mount) bool {
		return path.Clean(m.Source) == "prometheus.yml" && m.Target == "/etc/prometheus/prometheus.yml"
	}) {
		p.add(file, "service %s does not mount ./prometheus.yml at /etc/prometheus/prometheus.yml", prometheus)
	}
	prom := parsePrometheus(f, p)
	var targets []string
	for _, sc := range prom.ScrapeConfigs {
		if !isServedGET(sc.metricsPath()) {
			p.add("prometheus.yml", "job %s scrapes %s, which taskloom does not serve", sc.JobName, sc.metricsPath())
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	// Prometheus names the replica in the Host header, and a replica
	// listening on a wildcard address answers only to loopback names, its
	// own addresses and its hostname: scrape it by the hostname it is
	// given.
	for _, r := range replicas {
		_, port, _ := net.SplitHostPort(addrs[r])
		host := raw.Services[r].Hostname
		if host == "" {
			p.add(file, "replica %s has no hostname: give it one and scrape it by that name", r)
			continue
		}
		if want := net.JoinHostPort(host, port); !slices.Contains(targets, want) {
			p.add("prometheus.yml", "replica %s is not scraped at %s (targets: %v)", r, want, targets)
		}
	}
	return replicaVars
}

// mountedAt says whether a volume or tmpfs of s holds dir.
func mountedAt(s composeService, dir string) bool {
	under := func(target string) bool {
		rel, err := filepath.Rel(target, dir)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	for _, t := range s.Tmpfs {
		t, _, _ = strings.Cut(t, ":")
		if under(t) {
			return true
		}
	}
	for _, m := range s.Volumes {
		if under(m.Target) {
			return true
		}
	}
	return false
}
