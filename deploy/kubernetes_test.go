package deploy

import (
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/taskloom/taskloom/internal/config"
)

// The parts of the Kubernetes objects the checks read.

type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec       yaml.Node         `yaml:"spec"`
	StringData map[string]string `yaml:"stringData"` // Secret
	Data       map[string]string `yaml:"data"`       // Secret (base64), ConfigMap
}

type labelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []yaml.Node       `yaml:"matchExpressions"`
}

type podTemplate struct {
	Metadata struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec podSpec `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy   string          `yaml:"restartPolicy"`
	SecurityContext securityContext `yaml:"securityContext"`
	Containers      []container     `yaml:"containers"`
	Volumes         []volume        `yaml:"volumes"`
}

type volume struct {
	Name string `yaml:"name"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env            []envVar `yaml:"env"`
	ReadinessProbe *probe   `yaml:"readinessProbe"`
	LivenessProbe  *probe   `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext securityContext `yaml:"securityContext"`
	VolumeMounts    []volumeMount   `yaml:"volumeMounts"`
}

type envVar struct {
	Name      string  `yaml:"name"`
	Value     *string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
		ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
	} `yaml:"valueFrom"`
}

// keyRef is a value taken from a key of a Secret or a ConfigMap.
type keyRef struct {
	Name     string `yaml:"name"`
	Key      string `yaml:"key"`
	Optional bool   `yaml:"optional"`
}

// fromSecret and fromConfigMap say where e's value comes from.
func (e envVar) fromSecret() *keyRef {
	if e.ValueFrom == nil {
		return nil
	}
	return e.ValueFrom.SecretKeyRef
}

func (e envVar) fromConfigMap() *keyRef {
	if e.ValueFrom == nil {
		return nil
	}
	return e.ValueFrom.ConfigMapKeyRef
}

type probe struct {
	HTTPGet *struct {
		Path string      `yaml:"path"`
		Port intOrString `yaml:"port"`
	} `yaml:"httpGet"`
}

// intOrString is a port given by number or by name.
type intOrString string

func (v *intOrString) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want a number or a name")
	}
	*v = intOrString(n.Value)
	return nil
}

type deploymentSpec struct {
	Replicas *int          `yaml:"replicas"`
	Selector labelSelector `yaml:"selector"`
	Template podTemplate   `yaml:"template"`
}

type jobSpec struct {
	Template podTemplate `yaml:"template"`
}

type serviceSpec struct {
	Selector map[string]string `yaml:"selector"`
	Ports    []struct {
		Port       int         `yaml:"port"`
		TargetPort intOrString `yaml:"targetPort"`
	} `yaml:"ports"`
}

type pdbSpec struct {
	MinAvailable *intOrString  `yaml:"minAvailable"`
	Selector     labelSelector `yaml:"selector"`
}

// kube is the manifests in deploy/kubernetes: one of each kind.
type kube struct {
	file       map[string]string // kind → the file that holds it
	name       map[string]string // kind → its name
	deployment *deploymentSpec
	job        *jobSpec
	service    *serviceSpec
	pdb        *pdbSpec
	secrets    map[string]map[string]string // name → key → value
	configMaps map[string]map[string]string // name → key → value
}

func parseKubernetes(f files, p *problems) *kube {
	k := &kube{file: map[string]string{}, name: map[string]string{}, secrets: map[string]map[string]string{}, configMaps: map[string]map[string]string{}}
	for _, file := range slices.Sorted(maps.Keys(f)) {
		if !strings.HasPrefix(file, "kubernetes/") {
			continue
		}
		dec := yaml.NewDecoder(strings.NewReader(f[file]))
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				p.add(file, "%v", err)
				break
			}
			if o.Kind == "" {
				continue // an empty document
			}
			if o.Kind != "Secret" && o.Kind != "ConfigMap" && k.file[o.Kind] != "" {
				p.add(file, "a second %s (the first is in %s): the checks expect one", o.Kind, k.file[o.Kind])
				continue
			}
			k.file[o.Kind], k.name[o.Kind] = file, o.Metadata.Name
			var spec any
			switch o.Kind {
			case "Deployment":
				k.deployment = &deploymentSpec{}
				spec = k.deployment
			case "Job":
				k.job = &jobSpec{}
				spec = k.job
			case "Service":
				k.service = &serviceSpec{}
				spec = k.service
			case "PodDisruptionBudget":
				k.pdb = &pdbSpec{}
				spec = k.pdb
			case "Secret":
				values := maps.Clone(o.StringData)
				if values == nil {
					values = map[string]string{}
				}
				for key, b64 := range o.Data {
					b, err := base64.StdEncoding.DecodeString(b64)
					if err != nil {
						p.add(file, "Secret %s: data.%s is not base64", o.Metadata.Name, key)
					}
					values[key] = string(b)
				}
				k.secrets[o.Metadata.Name] = values
			case "ConfigMap":
				values := maps.Clone(o.Data)
				if values == nil {
					values = map[string]string{}
				}
				k.configMaps[o.Metadata.Name] = values
			}
			if spec != nil {
				if err := o.Spec.Decode(spec); err != nil {
					p.add(file, "%s %s: %v", o.Kind, o.Metadata.Name, err)
				}
			}
		}
	}
	return k
}

// env is the environment of container c of img: the image's ENV, then
// the container's, with values from Secrets and ConfigMaps looked up in
// the manifests (a value that is a REPLACE_ME placeholder as a whole is
// given a stand-in).
func (k *kube) env(img *image, c container, p *problems) map[string]string {
	env := maps.Clone(img.env)
	for _, e := range c.Env {
		switch {
		case e.Value != nil:
			if isSecret(e.Name) {
				p.add(k.fileOf(c), "container %s: %s is written in the manifest: take it from the Secret (valueFrom.secretKeyRef)", c.Name, e.Name)
			}
			env[e.Name] = *e.Value
		case e.fromConfigMap() != nil:
			ref := e.fromConfigMap()
			if isSecret(e.Name) {
				p.add(k.fileOf(c), "container %s: %s comes from ConfigMap %s: take it from the Secret (valueFrom.secretKeyRef)", c.Name, e.Name, ref.Name)
			}
			env[e.Name] = k.lookup(p, c, e.Name, "ConfigMap", k.configMaps, ref)
		case e.fromSecret() != nil:
			v := k.lookup(p, c, e.Name, "Secret", k.secrets, e.fromSecret())
			if strings.HasPrefix(v, "REPLACE_ME") {
				// Whoever applies the Secret puts a real value here.
				v = standIn(e.Name)
			}
			env[e.Name] = v
		default:
			p.add(k.fileOf(c), "container %s: %s has neither a value nor a secretKeyRef", c.Name, e.Name)
		}
	}
	return env
}

// lookup finds the value of variable name of container c in the key ref
// names of one of objs, the manifests' Secrets or ConfigMaps.
func (k *kube) lookup(p *problems, c container, name, kind string, objs map[string]map[string]string, ref *keyRef) string {
	obj, ok := objs[ref.Name]
	v, found := obj[ref.Key]
	switch {
	case ref.Optional && !found:
	case !ok:
		p.add(k.fileOf(c), "container %s: %s comes from %s %s, which is not among the manifests", c.Name, name, kind, ref.Name)
	case !found:
		p.add(k.fileOf(c), "container %s: %s comes from key %s of %s %s, which has no such key", c.Name, name, ref.Key, kind, ref.Name)
	}
	return v
}

// fileOf names the manifest that holds container c.
func (k *kube) fileOf(c container) string {
	if k.job != nil && len(k.job.Template.Spec.Containers) > 0 && k.job.Template.Spec.Containers[0].Name == c.Name {
		return k.file["Job"]
	}
	return k.file["Deployment"]
}

// podArgv is the command line of container c of img.
func podArgv(img *image, c container) []string { return containerArgv(img, c.Command, c.Args) }

// portOf resolves a port given by number or by name to c's port number.
func portOf(c container, port intOrString) (int, bool) {
	if n, err := strconv.Atoi(string(port)); err == nil {
		return n, true
	}
	for _, cp := range c.Ports {
		if cp.Name == string(port) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// checkKubernetes checks the manifests; composeVars are the variables
// Compose gives its replicas, which the Deployment must give too.
func checkKubernetes(f files, img *image, composeVars []string, p *problems) {
	k := parseKubernetes(f, p)
	for _, kind := range []string{"Deployment", "Service", "Secret", "ConfigMap", "PodDisruptionBudget", "Job"} {
		if k.file[kind] == "" {
			p.add("kubernetes/", "no %s", kind)
		}
	}
	if img == nil || k.deployment == nil {
		return // reported
	}

	// The Deployment: two replicas of taskloom serve.
	d, file := k.deployment, k.file["Deployment"]
	who := "Deployment " + k.name["Deployment"]
	if d.Replicas == nil || *d.Replicas != 2 {
		got := "unset (1)"
		if d.Replicas != nil {
			got = strconv.Itoa(*d.Replicas)
		}
		p.add(file, "%s: replicas is %s, want 2", who, got)
	}
	podLabels := d.Template.Metadata.Labels
	sel := d.Selector.MatchLabels
	if len(sel) == 0 || !subset(sel, podLabels) {
		p.add(file, "%s: selector %v does not match its pod labels %v", who, sel, podLabels)
	}
	if len(d.Template.Spec.Containers) != 1 {
		p.add(file, "%s: %d containers, want 1", who, len(d.Template.Spec.Containers))
		return
	}
	c := d.Template.Spec.Containers[0]
	if len(c.Ports) != 1 {
		p.add(file, "%s: %d container ports, want 1 (TASKLOOM_HTTP_ADDR)", who, len(c.Ports))
		return
	}
	port := c.Ports[0].ContainerPort
	env := k.env(img, c, p)
	k.checkSettings(p, c, composeVars)
	if sub := checkContainer(p, file, who, img, d.Template.Spec, c, env); sub != "serve" {
		p.add(file, "%s runs taskloom %s, want serve", who, sub)
	}
	checkListenAddr(p, file, who, env["TASKLOOM_HTTP_ADDR"], strconv.Itoa(port))
	for _, pr := range []struct {
		kind, want string
		probe      *probe
	}{
		{"readiness", "/readyz", c.ReadinessProbe},
		{"liveness", "/healthz", c.LivenessProbe},
	} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			p.add(file, "%s: no HTTP %s probe (GET %s)", who, pr.kind, pr.want)
			continue
		}
		get := pr.probe.HTTPGet
		if !isServedGET(get.Path) {
			p.add(file, "%s: the %s probe asks for %s, which taskloom does not serve", who, pr.kind, get.Path)
		}
		if get.Path != pr.want {
			p.add(file, "%s: the %s probe asks for %s: want %s", who, pr.kind, get.Path, pr.want)
		}
		if n, ok := portOf(c, get.Port); !ok || n != port {
			p.add(file, "%s: the %s probe's port %s is not the container port %d", who, pr.kind, get.Port, port)
		}
	}
	if len(c.Resources.Requests["cpu"]) == 0 || len(c.Resources.Requests["memory"]) == 0 {
		p.add(file, "%s: want cpu and memory requests", who)
	}
	if len(c.Resources.Limits["memory"]) == 0 {
		p.add(file, "%s: no memory limit", who)
	}

	// The Service and the PodDisruptionBudget pick the Deployment's pods.
	if s := k.service; s != nil {
		sfile := k.file["Service"]
		if len(s.Selector) == 0 || !subset(s.Selector, podLabels) {
			p.add(sfile, "Service %s: selector %v does not match the Deployment's pod labels %v", k.name["Service"], s.Selector, podLabels)
		}
		for _, sp := range s.Ports {
			if n, ok := portOf(c, sp.TargetPort); !ok || n != port {
				p.add(sfile, "Service %s: targetPort %s is not the container port %d", k.name["Service"], sp.TargetPort, port)
			}
		}
	}
	if b := k.pdb; b != nil {
		bfile := k.file["PodDisruptionBudget"]
		if b.MinAvailable == nil || *b.MinAvailable != "1" {
			p.add(bfile, "PodDisruptionBudget %s: want minAvailable 1", k.name["PodDisruptionBudget"])
		}
		if len(b.Selector.MatchLabels) == 0 || len(b.Selector.MatchExpressions) > 0 || !maps.Equal(b.Selector.MatchLabels, sel) {
			p.add(bfile, "PodDisruptionBudget %s: selector %v is not the Deployment's %v", k.name["PodDisruptionBudget"], b.Selector.MatchLabels, sel)
		}
	}

	// Secrets hold placeholders, never a real credential.
	for name, values := range k.secrets {
		for key, v := range values {
			if v != "" && !strings.Contains(v, "REPLACE_ME") {
				p.add(k.file["Secret"], "Secret %s: %s looks like a real value: keep placeholders (REPLACE_ME…) or empty values in the repository", name, key)
			}
			// Applied unchanged, the Secret must not start a server
			// whose token everyone can read here.
			if key == "TASKLOOM_API_TOKEN" && len(v) >= config.MinAPITokenLength {
				p.add(k.file["Secret"], "Secret %s: the placeholder of %s is %d characters, long enough to be accepted: keep it under %d so that an unchanged Secret is refused", name, key, len(v), config.MinAPITokenLength)
			}
		}
	}

	// The Job migrates, with the same image.
	if j := k.job; j != nil {
		jfile, jwho := k.file["Job"], "Job "+k.name["Job"]
		if len(j.Template.Spec.Containers) != 1 {
			p.add(jfile, "%s: %d containers, want 1", jwho, len(j.Template.Spec.Containers))
			return
		}
		jc := j.Template.Spec.Containers[0]
		for _, e := range jc.Env {
			checkVarName(p, jfile, jwho, e.Name)
		}
		if sub := checkContainer(p, jfile, jwho, img, j.Template.Spec, jc, k.env(img, jc, p)); sub != "migrate" {
			p.add(jfile, "%s runs taskloom %s, want migrate", jwho, sub)
		}
		if jc.Image != c.Image {
			p.add(jfile, "%s: image %s is not the Deployment's %s", jwho, jc.Image, c.Image)
		}
		if rp := j.Template.Spec.RestartPolicy; rp != "OnFailure" && rp != "Never" {
			p.add(jfile, "%s: restartPolicy %q: a Job's pods want OnFailure or Never", jwho, rp)
		}
	}
}

// checkSettings checks where the Deployment's container c takes its
// settings from: every variable Compose gives its replicas (composeVars)
// is given here too; each is one taskloom reads; a credential comes from
// the Secret, never from the ConfigMap; the ConfigMap and the Secret hold
// only variables taskloom reads; and TASKLOOM_PUBLIC_URL is the
// ConfigMap's to set, empty in the repository, since any host written
// here would make the API refuse every other name (421).
func (k *kube) checkSettings(p *problems, c container, composeVars []string) {
	file, who := k.file["Deployment"], "Deployment "+k.name["Deployment"]
	byName := map[string]envVar{}
	for _, e := range c.Env {
		checkVarName(p, file, who, e.Name)
		byName[e.Name] = e
	}
	for _, name := range slices.Sorted(slices.Values(composeVars)) {
		e, ok := byName[name]
		switch {
		case !ok:
			p.add(file, "%s: compose.yaml gives the replicas %s, the Deployment does not: take it from the %s", who, name, map[bool]string{true: "Secret", false: "ConfigMap"}[isSecret(name)])
		case isSecret(name) && e.fromSecret() == nil:
			p.add(file, "%s: %s is a credential: take it from the Secret", who, name)
		}
	}
	switch e, ok := byName["TASKLOOM_PUBLIC_URL"]; {
	case !ok:
		// Reported above: Compose passes it.
	case e.fromConfigMap() == nil:
		p.add(file, "%s: TASKLOOM_PUBLIC_URL is written in the manifest: take it from the ConfigMap, where the operator sets it", who)
	default:
		ref := e.fromConfigMap()
		if v := k.configMaps[ref.Name][ref.Key]; v != "" {
			p.add(k.file["ConfigMap"], "ConfigMap %s: TASKLOOM_PUBLIC_URL is %q: leave it empty for the operator to set, since any other host would be refused (421)", ref.Name, v)
		}
	}
	for name, values := range k.configMaps {
		for _, key := range slices.Sorted(maps.Keys(values)) {
			checkVarName(p, k.file["ConfigMap"], "ConfigMap "+name, key)
			if isSecret(key) {
				p.add(k.file["ConfigMap"], "ConfigMap %s: %s is a credential: keep it in the Secret", name, key)
			}
		}
	}
	for name, values := range k.secrets {
		for _, key := range slices.Sorted(maps.Keys(values)) {
			checkVarName(p, k.file["Secret"], "Secret "+name, key)
		}
	}
}

// checkContainer checks what the Deployment's and the Job's containers
// share — the command, the security settings, writable directories — and
// returns the subcommand.
func checkContainer(p *problems, file, who string, img *image, pod podSpec, c container, env map[string]string) string {
	if c.Image == "" {
		p.add(file, "%s: no image", who)
	}
	argv := podArgv(img, c)
	if len(argv) == 0 || argv[0] != img.binary {
		p.add(file, "%s runs %q, not %s", who, argv, img.binary)
		return ""
	}
	sub := checkStarts(p, file, who, argv[1:], env)

	sc, psc := c.SecurityContext, pod.SecurityContext
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = psc.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		p.add(file, "%s: want securityContext runAsNonRoot: true", who)
	}
	for _, uid := range []*int64{sc.RunAsUser, psc.RunAsUser} {
		if uid != nil && *uid == 0 {
			p.add(file, "%s: runAsUser 0 is root", who)
		}
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		p.add(file, "%s: want securityContext allowPrivilegeEscalation: false", who)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		p.add(file, "%s: want securityContext readOnlyRootFilesystem: true", who)
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		p.add(file, "%s: want securityContext capabilities drop [ALL], not %v", who, sc.Capabilities.Drop)
	}

	// With a read-only root, taskloom writes only to mounted volumes.
	if sub == "serve" {
		for _, dir := range []struct{ what, path string }{{"TASKLOOM_DATA_DIR", env["TASKLOOM_DATA_DIR"]}, {"the temporary directory", "/tmp"}} {
			if !slices.ContainsFunc(c.VolumeMounts, func(m volumeMount) bool { return m.MountPath == dir.path }) {
				p.add(file, "%s: the root filesystem is read-only, but no volume is mounted at %s (%s)", who, dir.path, dir.what)
			}
		}
	}
	for _, m := range c.VolumeMounts {
		if !slices.ContainsFunc(pod.Volumes, func(v volume) bool { return v.Name == m.Name }) {
			p.add(file, "%s: volume mount %s names no volume of the pod", who, m.Name)
		}
	}
	return sub
}

// subset says whether every label of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
