package runner

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseCallRequest: any bytes give a request that passed every rule or an error; nothing
// panics, and an accepted request turns into a runtime request and back.
func FuzzParseCallRequest(f *testing.F) {
	hex := strings.Repeat("a", 64)
	f.Add([]byte(`{"runtime":"builtin","diffDigest":"` + hex + `","request":{"kind":"review","lenses":[{"Name":"secrets"}],"subject":{},"settings":{}}}`))
	f.Add([]byte(`{"run":"r1","runtime":"exec-x","diffDigest":"` + hex + `","budget":10,"request":{"kind":"triage","lenses":[],"subject":{"Number":3},"settings":{},"files":[{"newPath":"a","raw":"ZGlmZg=="}]},"workDir":[{"path":"title.txt","content":"eA=="},{"path":"d/e","content":""}]}`))
	f.Add([]byte(`{"runtime":"builtin","diffDigest":"` + hex + `","request":{"kind":"review"},"workDir":[{"path":"a","content":""},{"path":"a/b","content":""}]}`))
	f.Add([]byte(`{"runtime":"builtin","diffDigest":"` + hex + `","request":{"kind":"review"},"workDir":[{"path":"../x","content":""}]}`))
	f.Add([]byte(`{"runtime":"builtin"} {}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCallRequest(data)
		if err != nil {
			if c != nil {
				t.Fatal("a request and an error")
			}
			return
		}
		for _, w := range c.WorkDir {
			if !cleanRelative(w.Path) {
				t.Fatalf("accepted work file path %q", w.Path)
			}
		}
		req := c.Request.runtimeRequest()
		back := wireRequest(req)
		if len(back.Files) != len(c.Request.Files) || back.Kind != c.Request.Kind {
			t.Fatal("the request does not round-trip")
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("an accepted request does not encode: %v", err)
		}
	})
}

// FuzzParseObserveRequest: likewise for observe requests.
func FuzzParseObserveRequest(f *testing.F) {
	f.Add([]byte(`{"run":"r","receipt":"e30="}`))
	f.Add([]byte(`{"run":"r","receipt":"e30=","prior":["e30=","e30=","e30=","e30=","e30="]}`))
	f.Add([]byte(`{"run":"","receipt":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseObserveRequest(data)
		if err != nil {
			return
		}
		if o.Run == "" || len(o.Receipt) == 0 || len(o.Prior) > maxPrior || o.MaxBytes < 0 {
			t.Fatalf("accepted %+v", o)
		}
	})
}
