package handlers_test

import (
	"os"
	"slices"
	"testing"

	"github.com/lensgate/lensgate/handlers/webhook"
	"go.yaml.in/yaml/v3"
)

// The manifest must ask for exactly the events the App handles and the least privilege it needs.
func TestAppManifest(t *testing.T) {
	data, err := os.ReadFile("../app.yml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name           string            `yaml:"name"`
		Permissions    map[string]string `yaml:"default_permissions"`
		Events         []string          `yaml:"default_events"`
		HookAttributes struct {
			URL string `yaml:"url"`
		} `yaml:"hook_attributes"`
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Events, webhook.SubscribedEvents()) {
		t.Fatalf("default_events %v, handled %v", m.Events, webhook.SubscribedEvents())
	}
	want := map[string]string{"contents": "read", "metadata": "read", "pull_requests": "write", "issues": "write", "checks": "write", "members": "read"}
	if len(m.Permissions) != len(want) {
		t.Fatalf("permissions %v, want exactly %v", m.Permissions, want)
	}
	for k, v := range want {
		if m.Permissions[k] != v {
			t.Fatalf("permission %s = %q, want %q", k, m.Permissions[k], v)
		}
	}
	if m.Name == "" || m.HookAttributes.URL == "" {
		t.Fatal("manifest without name or webhook URL")
	}
}
