package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
)

// manifestServer answers GitHub's manifest conversion for one code.
func manifestServer(t *testing.T, code string) *httptest.Server {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/app-manifests/{code}/conversions", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("code") != code {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{
			"id": 4242, "slug": "lensgate-test", "name": "lensgate-test",
			"html_url":       "https://github.com/apps/lensgate-test",
			"webhook_secret": "whsec-from-github", "pem": keyPEM,
			"client_id": "Iv1.x", "client_secret": "client-secret-from-github",
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestSetupConvert(t *testing.T) {
	srv := manifestServer(t, "abc123")
	dir := filepath.Join(t.TempDir(), "conf")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"setup", "convert", "--code", "abc123", "--api-url", srv.URL + "/api/v3/", "--out", dir}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, secret := range []string{"whsec-from-github", "client-secret-from-github", "PRIVATE KEY"} {
		if strings.Contains(out.String()+errb.String(), secret) {
			t.Errorf("setup printed a secret (%s)", secret)
		}
	}
	for _, f := range []string{"lensgate.yml", "app-key.pem", "signing.key"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	s, err := config.LoadServer(filepath.Join(dir, "lensgate.yml"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("written config does not load: %v", err)
	}
	if s.GitHub.App.IntegrationID != 4242 || s.GitHub.App.WebhookSecret != "whsec-from-github" {
		t.Errorf("config holds id %d secret %q", s.GitHub.App.IntegrationID, s.GitHub.App.WebhookSecret)
	}
	if !strings.HasPrefix(s.GitHub.V3APIURL, srv.URL) || !strings.HasSuffix(s.GitHub.V4APIURL, "/api/graphql") {
		t.Errorf("enterprise URLs not derived: %q %q", s.GitHub.V3APIURL, s.GitHub.V4APIURL)
	}
	if !strings.Contains(out.String(), "installations/new") {
		t.Errorf("no install hint in %q", out.String())
	}

	// A second run never overwrites the keys it wrote.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"setup", "convert", "--code", "abc123", "--api-url", srv.URL + "/api/v3/", "--out", dir}, &out, &errb); code == 0 {
		t.Error("second setup overwrote existing files")
	}
}

func TestSetupConvertBadCode(t *testing.T) {
	srv := manifestServer(t, "right")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"setup", "convert", "--code", "wrong", "--api-url", srv.URL + "/api/v3/", "--out", t.TempDir()}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "manifest conversion") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

func TestAppManifest(t *testing.T) {
	tests := []struct {
		name, yml, url string
		wantErr        bool
	}{
		{"ok", "name: lensgate\ndefault_events: [pull_request]\n", "https://lg.example.com/", false},
		{"bad url", "name: x\n", "ftp://x", true},
		{"empty", "", "https://x", true},
		{"not yaml", "name: [", "https://x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := appManifest([]byte(tt.yml), tt.url, "", "")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if err == nil && m["hook_attributes"].(map[string]any)["url"] != "https://lg.example.com/api/github/hook" {
				t.Errorf("hook url %v", m["hook_attributes"])
			}
		})
	}
}
