package builtin

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// plant is one planted secret: a file of a pull request and the values in it that must not
// reach a model (each line of a multi-line secret is a value of its own).
type plant struct {
	kind   string
	path   string
	lines  []string // the file's lines; the diff adds all of them unless hunk is set
	values []string
	// hunk, when set, is the whole diff section (a change in the middle of a file).
	hunk string
}

// gen makes synthetic secret values from a fixed seed: nothing secret-looking is committed, and
// every run plants the same corpus.
type gen struct{ r *rand.Rand }

func (g gen) from(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	hexLow  = "0123456789abcdef"
	b64     = alnum + "+/"
	lowerAl = "abcdefghijklmnopqrstuvwxyz"
)

func (g gen) alnum(n int) string { return g.from(alnum, n) }
func (g gen) hex(n int) string   { return g.from(hexLow, n) }
func (g gen) b64(n int) string   { return g.from(b64, n) }

// pemBody is n lines of 64 base64 characters and a shorter last line.
func (g gen) pemBody(n int) []string {
	var out []string
	for range n {
		out = append(out, g.b64(64))
	}
	return append(out, g.b64(40)+"==")
}

// corpus builds the 52 planted secrets: the kinds that reached a model before, and the common
// ones.
func corpus() []plant {
	g := gen{rand.New(rand.NewPCG(52, 2026))}
	var ps []plant
	add := func(kind, path string, lines []string, values ...string) {
		ps = append(ps, plant{kind: kind, path: path, lines: lines, values: values})
	}
	one := func(kind, path, before, value, after string) {
		add(kind, path, []string{before + value + after}, value)
	}
	// Cloud and forge tokens.
	one("aws-access-key-id", "app/settings.py", `AWS_ACCESS_KEY_ID = "`, "AKIA"+g.from(upper32, 16), `"`)
	one("aws-secret-access-key", "app/settings.py", `AWS_SECRET_ACCESS_KEY = "`, g.alnum(39)+"/", `"`)
	one("aws-secret-access-key", "deploy/env.sh", `export AWS_SECRET_ACCESS_KEY=`, g.alnum(39)+"+", ``)
	one("aws-secret-access-key", "config/aws.yml", `aws_secret_access_key: `, g.from(alnum+"/+", 40), ``)
	one("github-token", "scripts/release.sh", `GH_TOKEN=`, "ghp_"+g.alnum(36), ``)
	one("github-token", "tools/sync.go", `	token := "`, "github_pat_"+g.from(alnum+"_", 82), `"`)
	one("gitlab-token", "ci/gitlab.py", `GITLAB = "`, "glpat-"+g.from(alnum+"_-", 20), `"`)
	one("google-api-key", "web/maps.js", `const mapsKey = "`, "AIza"+g.from(alnum+"_-", 34)+"-", `";`)
	one("google-api-key", "android/app/config.xml", `<string name="maps">`, "AIza"+g.from(alnum+"_-", 35), `</string>`)
	// Chat, payments and mail.
	one("slack", "notify/config.js", `  botToken: "`, "xoxb-"+g.from("0123456789", 12)+"-"+g.from("0123456789", 13)+"-"+g.alnum(24), `",`)
	one("slack", "notify/app.py", `SLACK_APP = "`, "xapp-1-A"+g.from("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", 10)+"-"+g.from("0123456789", 13)+"-"+g.hex(64), `"`)
	one("slack", "notify/user.rb", `TOKEN = "`, "xoxp-"+g.from("0123456789", 12)+"-"+g.from("0123456789", 12)+"-"+g.from("0123456789", 13)+"-"+g.hex(32), `"`)
	one("slack-webhook", "notify/hooks.yaml", `webhook: https://hooks.slack.com/services/`, "T"+g.from(upper32, 8)+"/B"+g.from(upper32, 10)+"/"+g.alnum(24), ``)
	one("stripe", "billing/keys.js", `const stripe = require("stripe")("`, "sk_live_"+g.alnum(24), `");`)
	one("stripe", "billing/.env.production", `STRIPE_WEBHOOK_SECRET=`, "whsec_"+g.alnum(32), ``)
	one("sendgrid", "mail/send.py", `SENDGRID = "`, "SG."+g.from(alnum+"_-", 22)+"."+g.from(alnum+"_-", 43), `"`)
	one("twilio", "sms/client.go", `	apiKey := "`, "SK"+g.hex(32), `"`)
	one("mailgun", "mail/mailgun.rb", `MAILGUN_API_KEY = "`, "key-"+g.hex(32), `"`)
	one("shopify", "shop/admin.ts", `const shopToken = "`, "shpat_"+g.hex(32), `";`)
	// Model providers.
	one("openai", "ml/client.py", `client = OpenAI(api_key="`, "sk-proj-"+g.from(alnum+"_-", 40)+"T3BlbkFJ"+g.from(alnum+"_-", 40), `")`)
	one("anthropic", "ml/claude.ts", `const key = "`, "sk-ant-api03-"+g.from(alnum+"_-", 93)+"AA", `";`)
	one("huggingface", "ml/hub.py", `HF_TOKEN = "`, "hf_"+g.from(lowerAl, 34), `"`)
	// Tokens by structure.
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"`+g.alnum(12)+`","name":"svc","iat":1733400000}`)) + "." + g.from(alnum+"_-", 43)
	one("jwt", "api/fixtures.go", `const session = "`, jwt, `"`)
	one("npm", ".npmrc", `//registry.npmjs.org/:_authToken=`, g.alnum(8)+"-"+g.alnum(4)+"-"+g.alnum(4)+"-"+g.alnum(12), ``)
	one("npm", "web/.npmrc", `//npm.pkg.github.com/:_authToken=`, "npm_"+g.from(alnum, 36), ``)
	one("docker-auth", ".docker/config.json", `{"auths": {"registry.example.io": {"auth": "`, base64.StdEncoding.EncodeToString([]byte("deploy:"+g.alnum(20))), `"}}}`)
	one("http-auth", "scripts/fetch.sh", `curl -H "Authorization: Bearer `, g.alnum(40), `" https://api.internal/v1`)
	// Assignments whose key contains a secret word.
	one("django-secret-key", "mysite/settings.py", `SECRET_KEY = '`, g.from(lowerAl+"0123456789!@#%^&*(-_=+)", 50), `'`)
	one("quoted-password", "app/db.py", `DB_PASSWORD = "`, g.alnum(18), `"`)
	one("quoted-password", "src/config.ts", `  client_secret: "`, g.alnum(32), `",`)
	one("quoted-password", "app/oauth.py", `client_secret="`, g.alnum(40), `"`)
	one("env", ".env", `db_password=`, g.alnum(16), ``)
	one("env", ".env.local", `api_token=`, g.alnum(32), ``)
	one("env", "services/api/.env", `REDIS_PASSWORD=`, g.alnum(20), ``)
	one("yaml", "config/database.yml", `  password: `, g.alnum(20), ``)
	one("yaml", "helm/values.yaml", `  apiToken: `, g.alnum(32), ``)
	one("ini", "conf/app.ini", `password = `, g.alnum(18), ``)
	one("toml", "conf/settings.toml", `api_token = "`, g.alnum(32), `"`)
	one("properties", "src/main/resources/application.properties", `spring.datasource.password=`, g.alnum(20), ``)
	one("terraform", "infra/main.tf", `  access_key = "`, g.alnum(32), `"`)
	one("azure", "app/appsettings.json", `  "Storage": "DefaultEndpointsProtocol=https;AccountName=shop;AccountKey=`, g.b64(86)+"==", `;EndpointSuffix=core.windows.net"`)
	one("url-credentials", "deploy/compose.yml", `      DATABASE_URL: postgres://app:`, g.alnum(20), `@db:5432/shop`)
	// A Kubernetes Secret's values.
	k1, k2 := base64.StdEncoding.EncodeToString([]byte(g.alnum(12))), base64.StdEncoding.EncodeToString([]byte(g.alnum(24)))
	add("kubernetes-secret", "deploy/k8s/secret.yaml", []string{"apiVersion: v1", "kind: Secret", "metadata:", "  name: app", "type: Opaque", "data:", "  username: " + k1, "  password: " + k2}, k1, k2)
	// Private keys.
	rsa := g.pemBody(24)
	add("private-key", "deploy/id_rsa", append(append([]string{"-----BEGIN RSA PRIVATE KEY-----"}, rsa...), "-----END RSA PRIVATE KEY-----"), rsa...)
	ssh := g.pemBody(6)
	add("private-key", "deploy/ed25519", append(append([]string{"-----BEGIN OPENSSH PRIVATE KEY-----"}, ssh...), "-----END OPENSSH PRIVATE KEY-----"), ssh...)
	inline := g.pemBody(12)
	one("private-key", "gcp/service-account.json", `  "private_key": "-----BEGIN PRIVATE KEY-----\n`, strings.Join(inline, `\n`), `\n-----END PRIVATE KEY-----\n",`)
	ps[len(ps)-1].values = inline
	yamlKey := g.pemBody(8)
	lines := []string{"deploy:", "  ssh_key: |", "    -----BEGIN EC PRIVATE KEY-----"}
	for _, l := range yamlKey {
		lines = append(lines, "    "+l)
	}
	add("private-key", "ansible/vars.yml", append(lines, "    -----END EC PRIVATE KEY-----"), yamlKey...)
	// 8 of 25 lines of a key edited in the middle: the hunk has no BEGIN line.
	ps = append(ps, midKeyEdit(g))
	ppk := []string{g.b64(64), g.b64(20)}
	add("putty", "keys/deploy.ppk", []string{"PuTTY-User-Key-File-3: ssh-rsa", "Encryption: none", "Comment: deploy", "Public-Lines: 1", "AAAAB3NzaC1yc2E" + g.b64(49),
		"Private-Lines: 2", ppk[0], ppk[1], "Private-MAC: " + g.hex(64)}, ppk...)
	one("generic-api-key", "src/payments.java", `    private static final String API_KEY = "`, g.alnum(32), `";`)
	one("generic-api-key", "lib/heroku.rb", `HEROKU_API_KEY = "`, g.hex(8)+"-"+g.hex(4)+"-"+g.hex(4)+"-"+g.hex(4)+"-"+g.hex(12), `"`)
	one("generic-api-key", "monitoring/datadog.yaml", `api_key: `, g.hex(32), ``)
	return ps
}

// midKeyEdit is a 25-line key of which lines 9–16 are replaced: the hunk shows three context
// lines, the 8 removed and the 8 added lines, and three more context lines.
func midKeyEdit(g gen) plant {
	old := g.pemBody(24)
	added := make([]string, 8)
	for i := range added {
		added[i] = g.b64(64)
	}
	var b strings.Builder
	b.WriteString("diff --git a/certs/server.key b/certs/server.key\nindex 1111111..2222222 100644\n--- a/certs/server.key\n+++ b/certs/server.key\n@@ -6,22 +6,22 @@\n")
	var values []string
	for _, l := range old[5:8] {
		b.WriteString(" " + l + "\n")
		values = append(values, l)
	}
	for _, l := range old[8:16] {
		b.WriteString("-" + l + "\n")
		values = append(values, l)
	}
	for _, l := range added {
		b.WriteString("+" + l + "\n")
		values = append(values, l)
	}
	for _, l := range old[16:19] {
		b.WriteString(" " + l + "\n")
		values = append(values, l)
	}
	return plant{kind: "private-key-mid-edit", path: "certs/server.key", hunk: b.String(), values: values}
}

func (p plant) diff() string {
	if p.hunk != "" {
		return p.hunk
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", p.path, p.path, p.path, len(p.lines))
	for _, l := range p.lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// corpusKept redacts the corpus as one pull request's diff, as the model view does, and counts
// per kind the planted secrets none of whose values reaches the model.
func corpusKept(t *testing.T) (kept, total map[string]int) {
	t.Helper()
	ps := corpus()
	var all strings.Builder
	for _, p := range ps {
		all.WriteString(p.diff())
	}
	out := string(testRedactor(t).Diff([]byte(all.String())))
	kept, total = map[string]int{}, map[string]int{}
	for _, p := range ps {
		total[p.kind]++
		leaked := false
		for _, v := range p.values {
			if strings.Contains(out, v) {
				leaked = true
				t.Logf("reaches the model: %s in %s", p.kind, p.path)
				break
			}
		}
		if !leaked {
			kept[p.kind]++
		}
	}
	return kept, total
}

// TestPlantedSecretsKeptFromTheModel measures how many of the 52 planted secrets the redaction
// keeps from a model, per kind (run with -v for the table). The goal is at least 50.
func TestPlantedSecretsKeptFromTheModel(t *testing.T) {
	if n := len(corpus()); n != 52 {
		t.Fatalf("the corpus has %d secrets, want 52", n)
	}
	kept, total := corpusKept(t)
	var kinds []string
	sumKept, sumTotal := 0, 0
	for k := range total {
		kinds = append(kinds, k)
		sumKept += kept[k]
		sumTotal += total[k]
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Logf("%-24s %d/%d", k, kept[k], total[k])
	}
	t.Logf("kept from the model: %d of %d", sumKept, sumTotal)
	if sumKept < 50 {
		t.Fatalf("only %d of %d planted secrets kept from the model, want at least 50", sumKept, sumTotal)
	}
}

// BenchmarkRedactCorpus redacts the planted corpus 40 times over, each time next to a file of
// 200 lines of ordinary code, as one diff.
func BenchmarkRedactCorpus(b *testing.B) {
	var all strings.Builder
	for range 40 {
		for _, p := range corpus() {
			all.WriteString(p.diff())
		}
		all.WriteString("diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,0 +1,200 @@\n")
		for range 200 {
			all.WriteString("+\tif err := doSomething(ctx, value, other); err != nil { return fmt.Errorf(\"wrap: %w\", err) }\n")
		}
	}
	in := []byte(all.String())
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		testRedactor(b).Diff(in)
	}
}
