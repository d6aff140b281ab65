package deploy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/config"
)

// files is the deployment as read from disk: a path relative to deploy/
// (or "../go.mod") → its contents. The checks read only this map, so a
// test can hand them a broken copy.
type files map[string]string

// deployFiles are the files the checks read, besides kubernetes/*.yaml.
var deployFiles = []string{"Dockerfile", "compose.yaml", "compose.env.example", "prometheus.yml", "grafana/taskloom.json", "../go.mod"}

func readFiles(t *testing.T) files {
	t.Helper()
	names := slices.Clone(deployFiles)
	k8s, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(k8s) == 0 {
		t.Fatalf("no Kubernetes manifests in deploy/kubernetes (%v)", err)
	}
	names = append(names, k8s...)
	f := files{}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f[name] = string(b)
	}
	return f
}

// problems collects what is wrong with the deployment, one sentence each,
// starting with the file.
type problems []string

func (p *problems) add(file, format string, args ...any) {
	*p = append(*p, file+": "+fmt.Sprintf(format, args...))
}

// check runs every check on f.
func check(f files) problems {
	var p problems
	img := checkDockerfile(f, &p)
	composeVars := checkCompose(f, img, &p)
	checkKubernetes(f, img, composeVars, &p)
	checkGrafana(f, &p)
	return p
}

func TestDeployFiles(t *testing.T) {
	t.Parallel()
	for _, p := range check(readFiles(t)) {
		t.Error(p)
	}
}

// TestChecksCatchBrokenFiles breaks one thing at a time and expects the
// checks to say so: a check that cannot fail proves nothing.
func TestChecksCatchBrokenFiles(t *testing.T) {
	t.Parallel()
	const (
		dockerfile = "Dockerfile"
		compose    = "compose.yaml"
		prometheus = "prometheus.yml"
		deployment = "kubernetes/deployment.yaml"
		job        = "kubernetes/migrate-job.yaml"
		pdb        = "kubernetes/pdb.yaml"
		service    = "kubernetes/service.yaml"
		secret     = "kubernetes/secret.yaml"
		configMap  = "kubernetes/configmap.yaml"
		grafana    = "grafana/taskloom.json"
	)
	cases := []struct {
		name     string
		file     string
		old, new string
		want     string // in one of the problems reported
	}{
		{"cgo on", dockerfile, "CGO_ENABLED=0 ", "", "CGO_ENABLED=0"},
		{"another package built", dockerfile, "./cmd/taskloom", "./cmd/other", "./cmd/taskloom"},
		{"root user", dockerfile, "USER 65532:65532", "USER 0", "USER"},
		{"named user", dockerfile, "USER 65532:65532", "USER nonroot", "numeric"},
		{"no user", dockerfile, "USER 65532:65532", "", "USER"},
		{"a runtime image with a shell", dockerfile, "FROM gcr.io/distroless/static-debian12:nonroot", "FROM debian:bookworm", "distroless"},
		{"old Go", dockerfile, "golang:1.26.8", "golang:1.22", "go.mod"},
		{"unknown default command", dockerfile, `CMD ["serve"]`, `CMD ["server"]`, `"server"`},
		{"loopback in the image", dockerfile, "TASKLOOM_HTTP_ADDR=0.0.0.0:8080", "TASKLOOM_HTTP_ADDR=127.0.0.1:8080", "loopback"},
		{"other port exposed", dockerfile, "EXPOSE 8080", "EXPOSE 9090", "EXPOSE"},
		{"data directory owned by root", dockerfile, "--chown=65532:65532 ", "", "TASKLOOM_DATA_DIR"},
		{"no revision passed", dockerfile, " -X github.com/taskloom/taskloom/internal/app.Revision=${REVISION}", "", "REVISION"},
		{"no version passed", dockerfile, "-X github.com/taskloom/taskloom/internal/app.Version=${VERSION} ", "", "VERSION"},
		{"revision argument not declared", dockerfile, "ARG REVISION=\n", "", "ARG REVISION"},
		{"binary copied elsewhere", dockerfile, "/out/taskloom /usr/local/bin/taskloom", "/out/taskloom /bin/taskloom", "ENTRYPOINT"},

		{"one replica", deployment, "replicas: 2", "replicas: 1", "replicas"},
		{"readiness path not served", deployment, "path: /readyz", "path: /ready", "/ready"},
		{"liveness on the readiness route", deployment, "path: /healthz", "path: /readyz", "/healthz"},
		{"probe on another port", deployment, "port: http\n            periodSeconds: 5", "port: 9000\n            periodSeconds: 5", "9000"},
		{"container port differs", deployment, "containerPort: 8080", "containerPort: 9000", "TASKLOOM_HTTP_ADDR"},
		{"listen port differs", deployment, "value: 0.0.0.0:8080", "value: 0.0.0.0:9000", "TASKLOOM_HTTP_ADDR"},
		{"listen on loopback", deployment, "value: 0.0.0.0:8080", "value: 127.0.0.1:8080", "loopback"},
		{"unknown subcommand", deployment, `args: ["serve"]`, `args: ["serv"]`, `"serv"`},
		{"unknown flag", deployment, `args: ["serve"]`, `args: ["serve", "--port=8080"]`, "--port"},
		{"no API token", deployment, "- name: TASKLOOM_API_TOKEN", "- name: TASKLOOM_TOKEN", "TASKLOOM_API_TOKEN"},
		{"token in the manifest", deployment, "- name: TASKLOOM_HTTP_ADDR\n", "- name: TASKLOOM_API_TOKEN\n              value: hunter2\n            - name: TASKLOOM_HTTP_ADDR\n", "Secret"},
		{"writable root", deployment, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem"},
		{"capabilities kept", deployment, `drop: ["ALL"]`, `drop: ["NET_RAW"]`, "ALL"},
		{"root allowed", deployment, "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot"},
		{"no memory limit", deployment, "memory: 512Mi", "ephemeral-storage: 1Gi", "memory"},
		{"data dir not mounted", deployment, "mountPath: /var/lib/taskloom", "mountPath: /data", "TASKLOOM_DATA_DIR"},
		{"secret key missing", deployment, "key: DATABASE_URL", "key: DB_URL", "DB_URL"},
		{"a Compose variable not in the Deployment", deployment, "            - name: OPENAI_MODEL\n              valueFrom:\n                configMapKeyRef:\n                  name: taskloom\n                  key: OPENAI_MODEL\n", "", "compose.yaml gives the replicas OPENAI_MODEL"},
		{"public URL written in the Deployment", deployment, "            - name: TASKLOOM_PUBLIC_URL\n              valueFrom:\n                configMapKeyRef:\n                  name: taskloom\n                  key: TASKLOOM_PUBLIC_URL\n", "            - name: TASKLOOM_PUBLIC_URL\n              value: https://taskloom.example.com\n", "TASKLOOM_PUBLIC_URL is written in the manifest"},
		{"an example host in the ConfigMap", configMap, `TASKLOOM_PUBLIC_URL: ""`, "TASKLOOM_PUBLIC_URL: https://taskloom.example.com", "leave it empty"},
		{"a credential in the ConfigMap", configMap, `TASKLOOM_ADMINS: ""`, "TASKLOOM_ADMINS: \"\"\n  OPENAI_API_KEY: REPLACE_ME", "keep it in the Secret"},
		{"a credential from the ConfigMap", deployment, "secretKeyRef:\n                  name: taskloom\n                  key: OPENAI_API_KEY", "configMapKeyRef:\n                  name: taskloom\n                  key: OPENAI_API_KEY", "comes from ConfigMap"},
		{"a ConfigMap key missing", deployment, "key: OPENAI_BASE_URL", "key: OPENAI_URL", "OPENAI_URL"},
		{"a misspelt ConfigMap key", configMap, `TASKLOOM_ADMINS: ""`, `TASKLOOM_ADMIN: ""`, "TASKLOOM_ADMIN is not a variable"},
		{"a misspelt Secret key", secret, `SLACK_APP_TOKEN: ""`, `SLACK_APPS_TOKEN: ""`, "SLACK_APPS_TOKEN is not a variable"},
		{"a misspelt variable in the Job", job, "- name: DATABASE_URL", "- name: DATABASE_URI", "DATABASE_URI is not a variable"},
		{"no ConfigMap", configMap, "kind: ConfigMap", "kind: ConfigMapList", "no ConfigMap"},
		{"PDB selects nothing", pdb, "component: server", "component: web", "selector"},
		{"PDB allows zero", pdb, "minAvailable: 1", "minAvailable: 0", "minAvailable"},
		{"Service selects nothing", service, "component: server", "component: api", "selector"},
		{"Service to a port not served", service, "targetPort: http", "targetPort: 9000", "targetPort"},
		{"Job does not migrate", job, `args: ["migrate"]`, `args: ["check"]`, "migrate"},
		{"Job misspelt", job, `args: ["migrate"]`, `args: ["migrat"]`, `"migrat"`},
		{"Job restarts forever", job, "restartPolicy: OnFailure", "restartPolicy: Always", "restartPolicy"},
		{"Job listens beyond loopback", job, "value: 127.0.0.1:8080", "value: 0.0.0.0:8080", "TASKLOOM_API_TOKEN"},
		{"a real-looking secret", secret, "REPLACE_ME_API_TOKEN", "b1946ac92492d2347c6235b4d2611184", "placeholder"},
		{"a placeholder token long enough to serve", secret, "REPLACE_ME_API_TOKEN", "REPLACE_ME_WITH_64_HEX_DIGITS_FROM_OPENSSL", "unchanged Secret is refused"},

		{"a dashboard that is not JSON", grafana, `"title": "Taskloom"`, `"title": Taskloom`, "invalid character"},
		{"a dashboard querying a series not exported", grafana, "taskloom_lease_losses_total", "taskloom_leases_lost_total", "queries taskloom_leases_lost_total,"},
		{"a histogram queried without its suffix", grafana, "taskloom_claim_duration_seconds_count", "taskloom_claim_duration_seconds", "queries taskloom_claim_duration_seconds,"},
		{"a runtime series misspelt", grafana, "go_goroutines{", "go_goroutine{", "queries go_goroutine,"},
		{"a series without a panel", grafana, "increase(taskloom_notifications_dead_total", "increase(taskloom_notifications_failed_total", "no panel queries taskloom_notifications_dead_total"},
		{"a panel without a query", grafana, `"expr": "go_goroutines{job=~\"$job\"}"`, `"expr": ""`, "no query"},
		{"a misspelt variable in compose", compose, "    TASKLOOM_ADMINS: ${TASKLOOM_ADMINS:-}", "    TASKLOOM_ADMIN: ${TASKLOOM_ADMINS:-}", "TASKLOOM_ADMIN is not a variable"},
		{"one replica in compose", compose, "  taskloom-2:\n    <<: *taskloom\n    command: [\"serve\"]", "  taskloom-2:\n    <<: *taskloom\n    command: [\"check\"]", "2 replicas"},
		{"compose token hard-coded", compose, "TASKLOOM_API_TOKEN: ${TASKLOOM_API_TOKEN:?set TASKLOOM_API_TOKEN in deploy/.env}", "TASKLOOM_API_TOKEN: s3cret", "hard-coded"},
		{"compose password hard-coded", compose, "taskloom:${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in deploy/.env}@", "taskloom:s3cret@", "hard-coded"},
		{"compose replicas on loopback", compose, "TASKLOOM_HTTP_ADDR: 0.0.0.0:8080", "TASKLOOM_HTTP_ADDR: 127.0.0.1:8080", "loopback"},
		{"migrate listens beyond loopback", compose, "TASKLOOM_HTTP_ADDR: 127.0.0.1:8080", "TASKLOOM_HTTP_ADDR: 0.0.0.0:8080", "TASKLOOM_API_TOKEN"},
		{"a required value not in the example", "compose.env.example", "\nTASKLOOM_API_TOKEN=", "\n# TASKLOOM_API_TOKEN=", "compose.env.example"},
		{"no database healthcheck", compose, "    healthcheck:", "    x-healthcheck:", "healthcheck"},
		{"replicas before the migration", compose, "condition: service_completed_successfully", "condition: service_started", "migrate"},
		{"migration before the database", compose, "      postgres:\n        condition: service_healthy\n\n  taskloom-1", "      postgres:\n        condition: service_started\n\n  taskloom-1", "postgres"},
		{"another Dockerfile", compose, "dockerfile: deploy/Dockerfile", "dockerfile: Dockerfile", "deploy/Dockerfile"},
		{"Prometheus config not mounted", compose, "./prometheus.yml:/etc/prometheus/prometheus.yml:ro", "./prom.yml:/etc/prometheus/prometheus.yml:ro", "prometheus.yml"},
		{"a replica without a hostname", compose, "    hostname: taskloom-2\n", "", "hostname"},
		{"a replica not scraped", prometheus, "          - taskloom-2:8080\n", "", "taskloom-2"},
		{"scraped on another port", prometheus, "taskloom-1:8080", "taskloom-1:9090", "taskloom-1"},
		{"metrics path not served", prometheus, "metrics_path: /metrics", "metrics_path: /prometheus", "/prometheus"},
	}
	orig := readFiles(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(orig[c.file], c.old) {
				t.Fatalf("%s no longer contains %q: update this case", c.file, c.old)
			}
			broken := maps.Clone(orig)
			broken[c.file] = strings.Replace(orig[c.file], c.old, c.new, 1)
			got := check(broken)
			for _, p := range got {
				if strings.Contains(p, c.want) {
					return
				}
			}
			t.Errorf("no problem mentions %q; got %d:\n%s", c.want, len(got), strings.Join(got, "\n"))
		})
	}
}

// TestProbesAnswer runs taskloom as the Deployment configures it — on
// SQLite and a free port, since neither the cluster's database nor its
// port is here — and asks it for every path the Kubernetes probes and
// Prometheus use: each must answer 200.
func TestProbesAnswer(t *testing.T) {
	t.Parallel()
	f := readFiles(t)
	var p problems
	img := checkDockerfile(f, &p)
	k := parseKubernetes(f, &p)
	prom := parsePrometheus(f, &p)
	if len(p) > 0 || k.deployment == nil {
		t.Fatalf("cannot read the deployment files: %v", p)
	}
	c := k.deployment.Template.Spec.Containers[0]
	argv := podArgv(img, c)
	env := k.env(img, c, &p)
	env["DATABASE_URL"] = ""
	env["TASKLOOM_DATA_DIR"] = t.TempDir()
	env["TASKLOOM_HTTP_ADDR"] = "127.0.0.1:0"
	env["TASKLOOM_CONSOLE"] = "false"

	paths := map[string]string{
		c.ReadinessProbe.HTTPGet.Path: "readiness probe",
		c.LivenessProbe.HTTPGet.Path:  "liveness probe",
	}
	for _, sc := range prom.ScrapeConfigs {
		paths[sc.metricsPath()] = "Prometheus job " + sc.JobName
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	addr := make(chan string, 1)
	exited := make(chan int, 1)
	go func() {
		exited <- app.Main(ctx, app.Options{Args: argv[1:], Getenv: envOf(env), Stdout: io.Discard, Stderr: &stderr,
			OnListen: func(a string) { addr <- a }})
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case code := <-exited:
		t.Fatalf("taskloom %v exited %d before listening:\n%s", argv[1:], code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("taskloom %v not listening after 30s:\n%s", argv[1:], stderr.String())
	}
	for path, who := range paths {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the %s's GET %s answered %s", who, path, resp.Status)
		}
	}
	cancel()
	select {
	case code := <-exited:
		if code != app.ExitOK {
			t.Errorf("taskloom exited %d after SIGTERM:\n%s", code, stderr.String())
		}
	case <-time.After(app.ShutdownTimeout + 5*time.Second):
		t.Error("taskloom did not stop in time")
	}
}

// servedGETPaths are the literal GET paths the real server mounts: the
// probes from httpapi.New, the API, dashboard and /metrics from
// httpapi.API.Mount, as internal/app wires them.
var servedGETPaths = sync.OnceValue(func() map[string]bool {
	log := slog.New(slog.DiscardHandler)
	srv := httpapi.New(log, nil)
	httpapi.NewAPI(httpapi.APIOptions{Logger: log, Metrics: http.NotFoundHandler()}).Mount(srv)
	paths := map[string]bool{}
	for _, p := range srv.Patterns() {
		method, path, ok := strings.Cut(p, " ")
		if ok && method == http.MethodGet && !strings.Contains(path, "{") {
			paths[path] = true
		}
	}
	return paths
})

// isServedGET says whether GET path reaches a route of its own.
func isServedGET(path string) bool { return servedGETPaths()[path] }

// runTaskloom runs taskloom's Main in this process as a container would
// start it — args after the binary's name, env as the container's
// environment — with "-h" appended, so that serve, migrate and check stop
// once they have read their configuration and flags. It returns the exit
// code and what was printed on stderr.
func runTaskloom(args []string, env map[string]string) (int, string) {
	// The environment as the service reads and checks it at start (-h
	// alone prints the help without reading it), then the arguments.
	if _, err := config.Load(envOf(env)); err != nil {
		return app.ExitUsage, err.Error()
	}
	var stderr bytes.Buffer
	code := app.Main(context.Background(), app.Options{
		Args:   append(slices.Clone(args), "-h"),
		Getenv: envOf(env),
		Stdout: io.Discard,
		Stderr: &stderr,
	})
	return code, strings.TrimSpace(stderr.String())
}

// checkStarts reports a problem unless taskloom accepts args with env,
// and returns the subcommand args name ("serve" when none is given).
func checkStarts(p *problems, file, who string, args []string, env map[string]string) string {
	if code, stderr := runTaskloom(args, env); code != app.ExitOK {
		first, _, _ := strings.Cut(stderr, "\n")
		p.add(file, "%s: taskloom %q exits %d with this environment: %s", who, args, code, first)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "serve"
	}
	return args[0]
}

// checkListenAddr reports a problem unless addr (TASKLOOM_HTTP_ADDR) is
// reachable from outside the container, on port when port is not "".
func checkListenAddr(p *problems, file, who, addr, port string) {
	host, got, err := net.SplitHostPort(addr)
	if err != nil {
		p.add(file, "%s: TASKLOOM_HTTP_ADDR %q is not host:port", who, addr)
		return
	}
	if host != "" && config.IsLoopback(host) {
		p.add(file, "%s: TASKLOOM_HTTP_ADDR %q is a loopback address: nothing outside the container can reach it", who, addr)
	}
	if port != "" && got != port {
		p.add(file, "%s: TASKLOOM_HTTP_ADDR %q listens on port %s, but the container port is %s", who, addr, got, port)
	}
}

// secretName says whether an environment variable holds a credential.
func secretName(name string) bool {
	for _, s := range []string{"TOKEN", "PASSWORD", "SECRET", "_KEY"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// isSecret says whether variable name must come from a secret store,
// never be written in a manifest or a ConfigMap: a credential, or
// DATABASE_URL, which holds the database's password.
func isSecret(name string) bool { return secretName(name) || name == "DATABASE_URL" }

// serviceVars are the names of the environment variables taskloom reads.
var serviceVars = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, v := range config.Vars {
		names[v.Name] = true
	}
	return names
})

// checkVarName reports name, a variable a file gives taskloom, unless
// taskloom reads it: a misspelt name would be set and silently ignored.
func checkVarName(p *problems, file, who, name string) {
	if !serviceVars()[name] {
		p.add(file, "%s: %s is not a variable taskloom reads (config.Vars; taskloom serve --help lists them)", who, name)
	}
}

// standIn is a value for the variable name of the form the deployment
// files ask operators to generate (openssl rand -hex 32): 64 hexadecimal
// digits, long enough for TASKLOOM_API_TOKEN and fit for a password in
// a URL.
func standIn(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// syncBuffer is a bytes.Buffer safe to read while Main writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
