package handlers_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// oldPullRequestEvent is how the pull_request handler once decoded its payload, kept as the
// reference its answers must still agree with.
type oldPullRequestEvent struct {
	Action      string `json:"action"`
	PullRequest *struct {
		Number int    `json:"number"`
		Draft  bool   `json:"draft"`
		State  string `json:"state"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
	Repository *struct {
		Name  string `json:"name"`
		Owner struct {
			Login string `json:"login"`
		} `json:"owner"`
	} `json:"repository"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Sender *struct {
		Login *string `json:"login"`
		Type  *string `json:"type"`
	} `json:"sender"`
	Changes *struct {
		Title json.RawMessage `json:"title"`
		Body  json.RawMessage `json:"body"`
		Base  json.RawMessage `json:"base"`
	} `json:"changes"`
}

func TestPullRequestPayloadShapes(t *testing.T) {
	e := newEnv(t)
	e.addFixturePR(readmeDiff)
	opened := fixture(t, "pull_request.opened.payload.json")
	set := func(edit func(m map[string]any)) []byte { return setJSON(t, opened, edit) }
	pr := func(m map[string]any) map[string]any { return m["pull_request"].(map[string]any) }

	bad := map[string][]byte{
		"number is a string":      set(func(m map[string]any) { pr(m)["number"] = "x" }),
		"number is a fraction":    set(func(m map[string]any) { pr(m)["number"] = 2.5 }),
		"draft is a string":       set(func(m map[string]any) { pr(m)["draft"] = "yes" }),
		"head sha is a number":    set(func(m map[string]any) { pr(m)["head"].(map[string]any)["sha"] = 5 }),
		"head is a number":        set(func(m map[string]any) { pr(m)["head"] = 5 }),
		"pull_request is a text":  set(func(m map[string]any) { m["pull_request"] = "x" }),
		"pull_request is null":    set(func(m map[string]any) { m["pull_request"] = nil }),
		"no pull_request":         set(func(m map[string]any) { delete(m, "pull_request") }),
		"repository is an array":  set(func(m map[string]any) { m["repository"] = []any{} }),
		"owner login is a number": set(func(m map[string]any) { m["repository"].(map[string]any)["owner"].(map[string]any)["login"] = 7 }),
		"installation id is text": set(func(m map[string]any) { m["installation"] = map[string]any{"id": "1"} }),
		"sender is a string":      set(func(m map[string]any) { m["sender"] = "someone" }),
		"changes is an array":     set(func(m map[string]any) { m["changes"] = []any{} }),
		"action is a bool":        set(func(m map[string]any) { m["action"] = true }),
		"truncated":               opened[:len(opened)-2],
		"trailing data":           append(append([]byte(nil), opened...), " x"...),
		"control character":       bytes.Replace(opened, []byte(`"opened"`), []byte("\"open\x01ed\""), 1),
		"top level array":         []byte(`[` + string(opened) + `]`),
		"top level null":          []byte(`null`),
	}
	for name, body := range bad {
		var old oldPullRequestEvent
		if err := json.Unmarshal(body, &old); err == nil && old.PullRequest != nil && old.Repository != nil {
			t.Fatalf("%s: the reference decoding accepts it", name)
		}
		if code, msg := e.send("pull_request", "bad-"+name, body); code != http.StatusBadRequest || msg != "malformed payload" {
			t.Errorf("%s: %d %q, want 400 malformed payload", name, code, msg)
		}
	}

	// Valid JSON written differently: other whitespace, escapes in the values read, a repeated
	// key whose last value counts, and nulls where a value is optional.
	odd := bytes.Replace(opened, []byte(`"action": "opened"`), []byte(`"action": "closed", "action"`+"\t:\r\n"+`"\u006fpened"`), 1)
	odd = bytes.ReplaceAll(odd, []byte(`"`+fixtureHead+`"`), []byte(`"\u0065`+fixtureHead[1:]+`"`))
	odd = bytes.ReplaceAll(odd, []byte(`"name": "Hello-World"`), []byte(`"name": "Hello\u002dWorld"`))
	odd = bytes.Replace(odd, []byte(`"draft": false`), []byte(`"draft": null`), 1)
	var indented bytes.Buffer
	if err := json.Indent(&indented, odd, "\r", " \t"); err != nil {
		t.Fatal(err)
	}
	var old oldPullRequestEvent
	if err := json.Unmarshal(indented.Bytes(), &old); err != nil || old.Action != "opened" || old.PullRequest.Head.SHA != fixtureHead || old.Repository.Name != "Hello-World" {
		t.Fatalf("reference decoding: %v %+v", err, old)
	}
	if code, msg := e.send("pull_request", "odd", indented.Bytes()); code != http.StatusAccepted {
		t.Fatalf("odd but valid payload: %d %q", code, msg)
	}
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 {
		t.Fatalf("%d publications, want 1", len(pubs))
	}
	j := pubs[0].Job
	if j.Reason != "pull_request.opened" || j.HeadSHA != fixtureHead || j.Owner != "Codertocat" || j.Repo != "Hello-World" || j.Number != fixturePR || j.InstallationID != 1 {
		t.Fatalf("job %+v", j)
	}

	// Nulls and absent optional fields are skipped as before, not refused.
	for name, body := range map[string][]byte{
		"installation is null": set(func(m map[string]any) { m["installation"] = nil }),
		"number is null":       set(func(m map[string]any) { pr(m)["number"] = nil }),
		"edit with null changes": set(func(m map[string]any) {
			m["action"] = "edited"
			m["changes"] = nil
		}),
	} {
		if code, msg := e.send("pull_request", "skip-"+name, body); code != http.StatusOK || !strings.HasPrefix(msg, "ignored") {
			t.Errorf("%s: %d %q, want ignored", name, code, msg)
		}
	}
}

func TestPushPayloadShapes(t *testing.T) {
	e := newEnv(t)
	valid := `{"ref":"refs/heads/main","repository":{"name":".github","default_branch":"main","owner":{"login":"Codertocat"}},"installation":{"id":1}}`
	for name, tt := range map[string]struct {
		body string
		code int
	}{
		"valid":                 {valid, http.StatusOK},
		"owner by name only":    {strings.Replace(valid, `"login"`, `"name"`, 1), http.StatusOK},
		"escaped and spaced":    {strings.ReplaceAll(strings.Replace(valid, `"main"`, `"m\u0061in"`, 1), ":", " :\n\t"), http.StatusOK},
		"ref is a number":       {strings.Replace(valid, `"refs/heads/main"`, `7`, 1), http.StatusBadRequest},
		"repository is a text":  {`{"ref":"x","repository":"x"}`, http.StatusBadRequest},
		"no repository":         {`{"ref":"x","repository":null}`, http.StatusBadRequest},
		"owner is an array":     {strings.Replace(valid, `{"login":"Codertocat"}`, `[]`, 1), http.StatusBadRequest},
		"installation id float": {strings.Replace(valid, `"id":1`, `"id":1.5`, 1), http.StatusBadRequest},
		"not JSON":              {valid[:len(valid)-1], http.StatusBadRequest},
	} {
		if code, msg := e.send("push", "push-"+name, []byte(tt.body)); code != tt.code {
			t.Errorf("%s: %d %q, want %d", name, code, msg, tt.code)
		}
	}
}
