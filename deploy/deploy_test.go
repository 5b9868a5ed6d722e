package deploy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers"
)

// envNames is every environment variable the server reads.
func envNames(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, ev := range config.ServerEnvVars() {
		m[ev.Name] = ev.Key
	}
	return m
}

// writeAppKey writes a fresh RSA key in PEM and returns its path.
func writeAppKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "app.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// yamlKeys lists the dotted paths of every scalar or sequence leaf in a YAML mapping.
func yamlKeys(n *yaml.Node, prefix string, out *[]string) {
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			yamlKeys(c, prefix, out)
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		*out = append(*out, prefix)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if prefix != "" {
			k = prefix + "." + k
		}
		yamlKeys(n.Content[i+1], k, out)
	}
}

func TestExampleConfigDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile("lensgate.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for name, key := range envNames(t) {
		if !strings.Contains(text, "env: "+name) {
			t.Errorf("example config does not name env %s (key %s)", name, key)
		}
	}
	// Every key the server knows appears as a key (or a commented-out key) of the example.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	yamlKeys(&doc, "", &keys)
	for name, key := range envNames(t) {
		if slices.Contains(keys, key) {
			continue
		}
		leaf := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(text, "# "+leaf+":") {
			t.Errorf("example config lacks key %s (env %s)", key, name)
		}
	}
	// And the example names no variable the server does not read.
	for _, m := range regexp.MustCompile(`env: ([A-Z0-9_]+)`).FindAllStringSubmatch(text, -1) {
		if _, ok := envNames(t)[m[1]]; !ok {
			t.Errorf("example config names env %s, which the server does not read", m[1])
		}
	}
}

func TestExampleConfigLoads(t *testing.T) {
	key := writeAppKey(t)
	env := map[string]string{"LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE": key}
	s, err := config.LoadServer("lensgate.example.yml", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("example config does not load: %v", err)
	}
	if s.Listen != ":8080" || s.GitHub.App.IntegrationID != 123456 {
		t.Errorf("unexpected values: listen %q id %d", s.Listen, s.GitHub.App.IntegrationID)
	}
}

// k8s reads one manifest into a generic map.
func k8s(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// dig walks a generic YAML value by map keys and slice indexes.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not a mapping", p)
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("at %v: not a long enough sequence", p)
			}
			v = s[k]
		}
	}
	return v
}

func TestKubernetesBase(t *testing.T) {
	cm := k8s(t, "kubernetes/base/configmap.yaml")
	cfgText, _ := dig(t, cm, "data", "lensgate.yml").(string)
	cfgPath := filepath.Join(t.TempDir(), "lensgate.yml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GITHUB_APP_INTEGRATION_ID":            "1",
		"GITHUB_APP_WEBHOOK_SECRET":            "s",
		"LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE": writeAppKey(t),
	}
	srv, err := config.LoadServer(cfgPath, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("configmap lensgate.yml does not load: %v", err)
	}

	dep := k8s(t, "kubernetes/base/deployment.yaml")
	spec := dig(t, dep, "spec", "template", "spec")
	c := dig(t, spec, "containers", 0)
	if got := dig(t, c, "readinessProbe", "httpGet", "path"); got != "/readyz" {
		t.Errorf("readiness probe path %v", got)
	}
	if got := dig(t, c, "livenessProbe", "httpGet", "path"); got != "/healthz" {
		t.Errorf("liveness probe path %v", got)
	}
	port := dig(t, c, "ports", 0, "containerPort")
	if fmt.Sprintf(":%v", port) != srv.Listen {
		t.Errorf("container port %v does not match listen %q", port, srv.Listen)
	}
	if dig(t, c, "securityContext", "readOnlyRootFilesystem") != true {
		t.Error("root filesystem is not read-only")
	}
	if dig(t, spec, "securityContext", "runAsNonRoot") != true {
		t.Error("pod may run as root")
	}
	if dig(t, c, "resources", "requests") == nil {
		t.Error("no resource requests")
	}
	names := envNames(t)
	for _, e := range dig(t, c, "env").([]any) {
		n := dig(t, e, "name").(string)
		if _, ok := names[n]; !ok {
			t.Errorf("deployment sets env %s, which the server does not read", n)
		}
	}
	// The args point at the mounted config, and the secret files are where the config expects.
	args := dig(t, c, "args").([]any)
	mounts := map[string]string{}
	for _, m := range dig(t, c, "volumeMounts").([]any) {
		mounts[dig(t, m, "name").(string)] = dig(t, m, "mountPath").(string)
	}
	if want := filepath.Join(mounts["config"], "lensgate.yml"); args[len(args)-1] != want {
		t.Errorf("serve reads %v, config is mounted at %s", args[len(args)-1], want)
	}
	var secretFiles []string
	for _, v := range dig(t, spec, "volumes").([]any) {
		if dig(t, v, "name") == "secrets" {
			for _, it := range dig(t, v, "secret", "items").([]any) {
				secretFiles = append(secretFiles, filepath.Join(mounts["secrets"], dig(t, it, "path").(string)))
			}
		}
	}
	if !slices.Contains(secretFiles, srv.SigningKeyFile) {
		t.Errorf("signing key %s is not among the mounted secret files %v", srv.SigningKeyFile, secretFiles)
	}
	cfgKeyFile := regexp.MustCompile(`private_key_file: (\S+)`).FindStringSubmatch(cfgText)
	if cfgKeyFile == nil || !slices.Contains(secretFiles, cfgKeyFile[1]) {
		t.Errorf("App key file %v is not among the mounted secret files %v", cfgKeyFile, secretFiles)
	}

	svc := k8s(t, "kubernetes/base/service.yaml")
	if dig(t, svc, "spec", "ports", 0, "targetPort") != dig(t, c, "ports", 0, "name") {
		t.Error("service does not target the container's http port")
	}
	kus := k8s(t, "kubernetes/base/kustomization.yaml")
	for _, r := range dig(t, kus, "resources").([]any) {
		if _, err := os.Stat(filepath.Join("kubernetes/base", r.(string))); err != nil {
			t.Errorf("kustomization resource: %v", err)
		}
	}
}

func TestKubernetesOverlay(t *testing.T) {
	kus := k8s(t, "kubernetes/overlays/example/kustomization.yaml")
	for _, r := range dig(t, kus, "resources").([]any) {
		if _, err := os.Stat(filepath.Join("kubernetes/overlays/example", r.(string))); err != nil {
			t.Errorf("overlay resource: %v", err)
		}
	}
	patch := k8s(t, "kubernetes/overlays/example/deployment-patch.yaml")
	names := envNames(t)
	for _, e := range dig(t, patch, "spec", "template", "spec", "containers", 0, "env").([]any) {
		if n := dig(t, e, "name").(string); names[n] == "" {
			t.Errorf("overlay sets env %s, which the server does not read", n)
		}
	}
}

func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("systemd/lensgate.service")
	if err != nil {
		t.Fatal(err)
	}
	names := envNames(t)
	text := string(unit)
	for _, m := range regexp.MustCompile(`(?m)^Environment=([A-Z0-9_]+)=`).FindAllStringSubmatch(text, -1) {
		if names[m[1]] == "" {
			t.Errorf("unit sets env %s, which the server does not read", m[1])
		}
	}
	for _, want := range []string{"ExecStart=/usr/local/bin/lensgate serve --config /etc/lensgate/lensgate.yml", "NoNewPrivileges=yes", "ProtectSystem=strict", "EnvironmentFile=/etc/lensgate/lensgate.env"} {
		if !strings.Contains(text, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	envFile, err := os.ReadFile("systemd/lensgate.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^#? ?([A-Z][A-Z0-9_]+)=`).FindAllStringSubmatch(string(envFile), -1) {
		if names[m[1]] == "" {
			t.Errorf("env file sets %s, which the server does not read", m[1])
		}
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if regexp.MustCompile(`(?m)^HEALTHCHECK`).MatchString(text) {
		t.Error("the image must leave probes to the orchestrator")
	}
	if !strings.Contains(text, "RUN deploy/build.sh ") {
		t.Error("the image must build with deploy/build.sh, the build the tests run")
	}
	if !regexp.MustCompile(`(?m)^USER [1-9][0-9]*`).MatchString(text) {
		t.Error("the image must run as a non-root numeric user")
	}
	def := config.DefaultServer()
	if !strings.Contains(text, "EXPOSE "+strings.TrimPrefix(def.Listen, ":")) {
		t.Errorf("EXPOSE does not match the default listen address %s", def.Listen)
	}
	build, err := os.ReadFile("build.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version="} {
		if !strings.Contains(string(build), want) {
			t.Errorf("build.sh lacks %q", want)
		}
	}
}

// writablePaths are the files the server writes, from a loaded configuration: the audit
// ledger and a SQLite queue.
func writablePaths(t *testing.T, s *config.Server) []string {
	t.Helper()
	var out []string
	if !s.DryRun {
		out = append(out, s.AuditFile)
	}
	if p, ok := strings.CutPrefix(s.Queue.DSN, "sqlite://"); ok {
		out = append(out, p)
	}
	for _, p := range out {
		if !filepath.IsAbs(p) {
			t.Errorf("%s: deployments should name absolute paths", p)
		}
	}
	return out
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, strings.TrimRight(d, "/")+"/") {
			return true
		}
	}
	return false
}

// TestKubernetesWritablePaths: with a read-only root filesystem, every file the server writes
// must be on a writable volume, and a SQLite queue allows one pod at a time.
func TestKubernetesWritablePaths(t *testing.T) {
	cm := k8s(t, "kubernetes/base/configmap.yaml")
	cfgPath := filepath.Join(t.TempDir(), "lensgate.yml")
	if err := os.WriteFile(cfgPath, []byte(dig(t, cm, "data", "lensgate.yml").(string)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "s", "LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE": writeAppKey(t)}
	srv, err := config.LoadServer(cfgPath, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	dep := k8s(t, "kubernetes/base/deployment.yaml")
	spec := dig(t, dep, "spec", "template", "spec")
	c := dig(t, spec, "containers", 0)
	writableVolumes := map[string]bool{}
	for _, v := range dig(t, spec, "volumes").([]any) {
		vm := v.(map[string]any)
		if vm["emptyDir"] != nil || vm["persistentVolumeClaim"] != nil {
			writableVolumes[vm["name"].(string)] = true
		}
	}
	var writable []string
	for _, m := range dig(t, c, "volumeMounts").([]any) {
		mm := m.(map[string]any)
		if writableVolumes[mm["name"].(string)] && mm["readOnly"] != true {
			writable = append(writable, mm["mountPath"].(string))
		}
	}
	paths := writablePaths(t, srv)
	if len(paths) == 0 {
		t.Fatal("the ConfigMap names no audit file")
	}
	for _, p := range paths {
		if !underAny(p, writable) {
			t.Errorf("%s is not on a writable volume (writable: %v)", p, writable)
		}
	}
	if strings.HasPrefix(srv.Queue.DSN, "sqlite://") {
		// Queued reviews must survive the pod being replaced: the SQLite file needs a claim.
		claims := map[string]bool{}
		for _, v := range dig(t, spec, "volumes").([]any) {
			vm := v.(map[string]any)
			if vm["persistentVolumeClaim"] != nil {
				claims[vm["name"].(string)] = true
			}
		}
		var onClaim []string
		for _, m := range dig(t, c, "volumeMounts").([]any) {
			mm := m.(map[string]any)
			if claims[mm["name"].(string)] {
				onClaim = append(onClaim, mm["mountPath"].(string))
			}
		}
		if !underAny(srv.SQLitePath(), onClaim) {
			t.Errorf("SQLite queue %s is not on a PersistentVolumeClaim: a new pod would lose queued reviews", srv.SQLitePath())
		}
		if r := dig(t, dep, "spec", "replicas"); r != 1 {
			t.Errorf("SQLite queue with %v replicas", r)
		}
		if s := dig(t, dep, "spec", "strategy", "type"); s != "Recreate" {
			t.Errorf("SQLite queue with rollout strategy %v: two pods would share the file", s)
		}
	}

	// The overlay runs several replicas, so it must move the queue to PostgreSQL.
	patch := k8s(t, "kubernetes/overlays/example/deployment-patch.yaml")
	if r, _ := dig(t, patch, "spec", "replicas").(int); r > 1 {
		set := false
		for _, e := range dig(t, patch, "spec", "template", "spec", "containers", 0, "env").([]any) {
			set = set || dig(t, e, "name") == "LENSGATE_QUEUE_DSN"
		}
		if !set {
			t.Errorf("overlay runs %d replicas without a shared queue (LENSGATE_QUEUE_DSN)", r)
		}
	}
}

// TestSystemdWritablePaths: under ProtectSystem=strict only the state directory is writable,
// so the example configuration (installed as /etc/lensgate/lensgate.yml) must write there.
func TestSystemdWritablePaths(t *testing.T) {
	unit, err := os.ReadFile("systemd/lensgate.service")
	if err != nil {
		t.Fatal(err)
	}
	var writable []string
	for _, m := range regexp.MustCompile(`(?m)^(StateDirectory|RuntimeDirectory|CacheDirectory|LogsDirectory)=(\S+)`).FindAllStringSubmatch(string(unit), -1) {
		root := map[string]string{"StateDirectory": "/var/lib/", "RuntimeDirectory": "/run/", "CacheDirectory": "/var/cache/", "LogsDirectory": "/var/log/"}[m[1]]
		writable = append(writable, root+m[2])
	}
	env := map[string]string{"LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE": writeAppKey(t)}
	srv, err := config.LoadServer("lensgate.example.yml", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range writablePaths(t, srv) {
		if !underAny(p, writable) {
			t.Errorf("%s is outside the unit's writable directories %v", p, writable)
		}
	}
	wd := regexp.MustCompile(`(?m)^WorkingDirectory=(\S+)`).FindStringSubmatch(string(unit))
	if wd == nil || !slices.Contains(writable, wd[1]) {
		t.Errorf("WorkingDirectory %v is not writable (relative paths would fail)", wd)
	}
}

// TestDocsListEveryVariable: the operator docs (the configuration table in docs/operations.md,
// docs/deploy.md) name every variable the server reads and no variable it does not, and
// docs/deploy.md links the example configuration.
func TestDocsListEveryVariable(t *testing.T) {
	var text string
	for _, f := range []string{"../docs/operations.md", "../docs/deploy.md"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text += string(data)
	}
	names := envNames(t)
	for name, key := range names {
		if !strings.Contains(text, "`"+name+"`") || !strings.Contains(text, "`"+key+"`") {
			t.Errorf("the docs lack %s (%s)", name, key)
		}
	}
	for _, m := range regexp.MustCompile("`((?:LENSGATE|GITHUB)_[A-Z0-9_]+)").FindAllStringSubmatch(text, -1) {
		if names[m[1]] == "" && m[1] != "LENSGATE_CONFIG" && m[1] != "LENSGATE_ROLE" && !strings.HasPrefix(m[1], "LENSGATE_TEST_") {
			t.Errorf("the docs name %s, which the server does not read", m[1])
		}
	}
	deployDoc, _ := os.ReadFile("../docs/deploy.md")
	for _, link := range []string{"../deploy/lensgate.example.yml", "operations.md#configuration", "runtimes.md", "keys.md", "troubleshooting.md", "metrics-and-logs.md"} {
		if !strings.Contains(string(deployDoc), "("+link) {
			t.Errorf("docs/deploy.md does not link %s", link)
		}
	}
}

// slug is GitHub's anchor for a Markdown heading.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestOperatorDocLinks: every relative link in the operator docs reaches a file, and every
// #anchor into a Markdown file reaches a heading.
func TestOperatorDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile("(?m)^#+ (.+)$")
	for _, doc := range []string{"deploy.md", "keys.md", "troubleshooting.md", "metrics-and-logs.md"} {
		path := filepath.Join("..", "docs", doc)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if file == "" {
				file = doc
			}
			tp := filepath.Join("..", "docs", file)
			body, err := os.ReadFile(tp)
			if err != nil {
				t.Errorf("%s: link %s: %v", doc, target, err)
				continue
			}
			if anchor == "" {
				continue
			}
			found := false
			for _, h := range heading.FindAllStringSubmatch(string(body), -1) {
				found = found || slug(h[1]) == anchor
			}
			if !found {
				t.Errorf("%s: link %s: no heading with that anchor in %s", doc, target, file)
			}
		}
	}
}

// loadConfigMapServer loads the base ConfigMap's lensgate.yml as serve would.
func loadConfigMapServer(t *testing.T) (*config.Server, string) {
	t.Helper()
	cm := k8s(t, "kubernetes/base/configmap.yaml")
	text := dig(t, cm, "data", "lensgate.yml").(string)
	p := filepath.Join(t.TempDir(), "lensgate.yml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GITHUB_APP_INTEGRATION_ID": "1", "GITHUB_APP_WEBHOOK_SECRET": "s", "LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE": writeAppKey(t)}
	srv, err := config.LoadServer(p, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return srv, text
}

// checkPodSpec holds a full pod spec to the rules of the base: probes, non-root, read-only root,
// requests, known variables, the config and key files where the ConfigMap names them.
func checkPodSpec(t *testing.T, name string, spec any, srv *config.Server, cfgText string) {
	t.Helper()
	c := dig(t, spec, "containers", 0)
	if dig(t, c, "readinessProbe", "httpGet", "path") != "/readyz" || dig(t, c, "livenessProbe", "httpGet", "path") != "/healthz" {
		t.Errorf("%s: probes must be /readyz and /healthz", name)
	}
	if fmt.Sprintf(":%v", dig(t, c, "ports", 0, "containerPort")) != srv.Listen {
		t.Errorf("%s: container port does not match listen %q", name, srv.Listen)
	}
	if dig(t, c, "securityContext", "readOnlyRootFilesystem") != true || dig(t, spec, "securityContext", "runAsNonRoot") != true {
		t.Errorf("%s: must run non-root on a read-only root filesystem", name)
	}
	if dig(t, c, "resources", "requests") == nil {
		t.Errorf("%s: no resource requests", name)
	}
	names := envNames(t)
	for _, e := range dig(t, c, "env").([]any) {
		if n := dig(t, e, "name").(string); names[n] == "" {
			t.Errorf("%s: sets env %s, which the server does not read", name, n)
		}
	}
	mounts := map[string]string{}
	for _, m := range dig(t, c, "volumeMounts").([]any) {
		mounts[dig(t, m, "name").(string)] = dig(t, m, "mountPath").(string)
	}
	args := dig(t, c, "args").([]any)
	if !slices.Contains(args, any(filepath.Join(mounts["config"], "lensgate.yml"))) {
		t.Errorf("%s: args %v do not read the mounted config", name, args)
	}
	var files []string
	for _, v := range dig(t, spec, "volumes").([]any) {
		if dig(t, v, "name") == "secrets" {
			for _, it := range dig(t, v, "secret", "items").([]any) {
				files = append(files, filepath.Join(mounts["secrets"], dig(t, it, "path").(string)))
			}
		}
	}
	keyFile := regexp.MustCompile(`private_key_file: (\S+)`).FindStringSubmatch(cfgText)
	if !slices.Contains(files, srv.SigningKeyFile) || keyFile == nil || !slices.Contains(files, keyFile[1]) {
		t.Errorf("%s: key files %v are not where the config names them", name, files)
	}
}

// roleOf returns the --role in a container's args ("all" when absent).
func roleOf(args []any) string {
	for i, a := range args {
		if a == "--role" && i+1 < len(args) {
			return fmt.Sprint(args[i+1])
		}
	}
	return handlers.RoleAll
}

// TestKubernetesSplitRoles: the split-roles overlay runs web replicas behind the Service and
// worker replicas beside them, both on the shared PostgreSQL queue.
func TestKubernetesSplitRoles(t *testing.T) {
	dir := "kubernetes/overlays/split-roles"
	kus := k8s(t, filepath.Join(dir, "kustomization.yaml"))
	for _, r := range dig(t, kus, "resources").([]any) {
		if _, err := os.Stat(filepath.Join(dir, r.(string))); err != nil {
			t.Errorf("resource: %v", err)
		}
	}
	srv, cfgText := loadConfigMapServer(t)
	hasDSN := func(c any) bool {
		for _, e := range dig(t, c, "env").([]any) {
			if dig(t, e, "name") == "LENSGATE_QUEUE_DSN" {
				return true
			}
		}
		return false
	}

	web := k8s(t, filepath.Join(dir, "web-patch.yaml"))
	wc := dig(t, web, "spec", "template", "spec", "containers", 0)
	if dig(t, web, "metadata", "name") != dig(t, k8s(t, "kubernetes/base/deployment.yaml"), "metadata", "name") {
		t.Error("the web patch does not patch the base Deployment")
	}
	if r := roleOf(dig(t, wc, "args").([]any)); r != handlers.RoleWeb || !hasDSN(wc) {
		t.Errorf("web: role %s, queue DSN set %v", r, hasDSN(wc))
	}

	worker := k8s(t, filepath.Join(dir, "worker.yaml"))
	spec := dig(t, worker, "spec", "template", "spec")
	checkPodSpec(t, "worker", spec, srv, cfgText)
	c := dig(t, spec, "containers", 0)
	if r := roleOf(dig(t, c, "args").([]any)); r != handlers.RoleWorker || !hasDSN(c) {
		t.Errorf("worker: role %s, queue DSN set %v", r, hasDSN(c))
	}
	sel := dig(t, worker, "spec", "selector", "matchLabels").(map[string]any)
	labels := dig(t, worker, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("worker selector %v does not match its pod labels %v", sel, labels)
		}
	}
	// The Service must not send webhooks to workers, which do not serve the webhook route.
	svcSel := dig(t, k8s(t, "kubernetes/base/service.yaml"), "spec", "selector").(map[string]any)
	matches := true
	for k, v := range svcSel {
		matches = matches && labels[k] == v
	}
	if matches {
		t.Errorf("the Service selector %v selects worker pods", svcSel)
	}
}

// TestDockerignoreKeepsTheBuild: the image's build context still holds everything the build
// compiles (every Go and embedded file of the binary's packages, go.mod, go.sum, build.sh).
func TestDockerignoreKeepsTheBuild(t *testing.T) {
	data, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.TrimPrefix(l, "/"))
		}
	}
	excluded := func(p string) bool {
		for _, pat := range patterns {
			if strings.HasPrefix(pat, "**/") {
				if ok, _ := filepath.Match(strings.TrimPrefix(pat, "**/"), filepath.Base(p)); ok {
					return true
				}
				continue
			}
			if ok, _ := filepath.Match(pat, p); ok || strings.HasPrefix(p, pat+"/") {
				return true
			}
		}
		return false
	}
	needed := []string{"go.mod", "go.sum", "deploy/build.sh"}
	// Each line: the package directory, then its Go and embedded files.
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{if not .Standard}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{"\n"}}{{end}}`, "../cmd/lensgate").Output()
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("..")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		rel, err := filepath.Rel(root, f[0])
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module dependency, fetched by go mod download
		}
		for _, name := range f[1:] {
			needed = append(needed, filepath.Join(rel, name))
		}
	}
	if len(needed) < 20 {
		t.Fatalf("found only %d files the build needs", len(needed))
	}
	for _, p := range needed {
		if excluded(p) {
			t.Errorf("%s is excluded from the image's build context", p)
		}
	}
}

// TestGracePeriodsOutlastShutdown: the orchestrator must wait longer than the server's own
// shutdown_timeout, or running reviews are killed instead of finished or handed back.
func TestGracePeriodsOutlastShutdown(t *testing.T) {
	srv, _ := loadConfigMapServer(t)
	for _, f := range []string{"kubernetes/base/deployment.yaml", "kubernetes/overlays/split-roles/worker.yaml"} {
		g, ok := dig(t, k8s(t, f), "spec", "template", "spec", "terminationGracePeriodSeconds").(int)
		if !ok || time.Duration(g)*time.Second <= srv.ShutdownTimeout {
			t.Errorf("%s: terminationGracePeriodSeconds %v does not outlast shutdown_timeout %s", f, g, srv.ShutdownTimeout)
		}
	}
	unit, err := os.ReadFile("systemd/lensgate.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)`).FindStringSubmatch(string(unit))
	env := map[string]string{"LENSGATE_GITHUB_APP_PRIVATE_KEY_FILE": writeAppKey(t)}
	ex, err := config.LoadServer("lensgate.example.yml", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		t.Fatal("unit has no TimeoutStopSec")
	}
	d, err := time.ParseDuration(m[1])
	if err != nil || d <= ex.ShutdownTimeout {
		t.Errorf("TimeoutStopSec=%s does not outlast shutdown_timeout %s", m[1], ex.ShutdownTimeout)
	}
}

// TestEveryManifestParsesAndIsUsed: every YAML file under deploy/ parses, and every Kubernetes
// file is listed by the kustomization of its directory (a forgotten file would never deploy).
func TestEveryManifestParsesAndIsUsed(t *testing.T) {
	used := map[string]bool{}
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) || strings.HasPrefix(p, "testdata") {
			return err
		}
		files = append(files, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil || doc == nil {
			t.Errorf("%s: does not parse as one YAML mapping: %v", p, err)
			return nil
		}
		if filepath.Base(p) == "kustomization.yaml" {
			dir := filepath.Dir(p)
			used[p] = true
			for _, field := range []string{"resources", "patches"} {
				list, _ := doc[field].([]any)
				for _, it := range list {
					ref, _ := it.(string)
					if m, ok := it.(map[string]any); ok {
						ref, _ = m["path"].(string)
					}
					if ref != "" {
						used[filepath.Join(dir, ref)] = true
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d YAML files", len(files))
	}
	for _, f := range files {
		if strings.HasPrefix(f, "kubernetes/") && !used[f] {
			t.Errorf("%s is not listed by any kustomization", f)
		}
	}
}
