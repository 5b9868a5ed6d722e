package handlers_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/internal/githubfake"
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
	// The three valid pushes to the default branch of the organisation configuration repository
	// all reached the configuration loader.
	if got := e.metric("lensgate_webhook_events_total", map[string]string{"event": "push", "outcome": "logged"}); got != 3 {
		t.Fatalf("%v pushes logged, want 3", got)
	}
}

func TestIssuesPayloadShapes(t *testing.T) {
	e := newEnv(t)
	e.gh.AddRepo(githubfake.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: "master"})
	e.gh.AddIssue(fixtureRepo, githubfake.Issue{Number: 1, Title: "Spelling error in the README file", Body: "It looks like you accidently spelled 'commit' with two 't's.", User: "Codertocat"})
	e.gh.SetFile(fixtureRepo, "master", ".asdd.yml", "triage_labels: [bug]\n")
	opened := fixture(t, "issues.opened.with-installation.payload.json")
	set := func(edit func(m map[string]any)) []byte { return setJSON(t, opened, edit) }
	issue := func(m map[string]any) map[string]any { return m["issue"].(map[string]any) }
	for name, body := range map[string][]byte{
		"number is a string":       set(func(m map[string]any) { issue(m)["number"] = "1" }),
		"pull_request is a string": set(func(m map[string]any) { issue(m)["pull_request"] = "x" }),
		"issue is null":            set(func(m map[string]any) { m["issue"] = nil }),
		"repository is a number":   set(func(m map[string]any) { m["repository"] = 1 }),
		"default branch is a bool": set(func(m map[string]any) { m["repository"].(map[string]any)["default_branch"] = true }),
		"installation is a string": set(func(m map[string]any) { m["installation"] = "x" }),
		"sender type is a number":  set(func(m map[string]any) { m["sender"].(map[string]any)["type"] = 1 }),
		"truncated":                opened[:100],
	} {
		if code, msg := e.send("issues", "bad-"+name, body); code != http.StatusBadRequest || msg != "malformed payload" {
			t.Errorf("%s: %d %q, want 400 malformed payload", name, code, msg)
		}
	}
	for name, body := range map[string][]byte{
		"a pull request": set(func(m map[string]any) { issue(m)["pull_request"] = map[string]any{"url": "x"} }),
		"edited by a bot": set(func(m map[string]any) {
			m["action"] = "edited"
			m["sender"] = map[string]any{"login": "someone[bot]"}
		}),
	} {
		if code, msg := e.send("issues", "skip-"+name, body); code != http.StatusOK || !strings.HasPrefix(msg, "ignored") {
			t.Errorf("%s: %d %q, want ignored", name, code, msg)
		}
	}
	// Other whitespace and escapes in the fields read: triaged as before, on the default branch.
	odd := bytes.Replace(opened, []byte(`"default_branch": "master"`), []byte(`"default_branch": "m\u0061ster"`), 1)
	odd = bytes.Replace(odd, []byte(`"action": "opened"`), []byte(`"action":"\u006fpened"`), 1)
	var indented bytes.Buffer
	if err := json.Indent(&indented, odd, "", "\t"); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(indented.Bytes(), opened) || !bytes.Contains(indented.Bytes(), []byte(`m\u0061ster`)) {
		t.Fatal("payload not rewritten")
	}
	if code, msg := e.send("issues", "odd", indented.Bytes()); code != http.StatusAccepted {
		t.Fatalf("%d %q", code, msg)
	}
	e.drain()
	pubs := e.pub.all()
	if len(pubs) != 1 || pubs[0].Triage == nil || pubs[0].Job.Number != 1 || pubs[0].Config.Source != fixtureRepo+"@master" {
		t.Fatalf("publications %+v", pubs)
	}
}

func TestReviewCommentPayloadShapes(t *testing.T) {
	e := newEnv(t)
	valid := `{"action":"created","pull_request":{"number":2},"repository":{"name":"Hello-World","owner":{"login":"Codertocat"}},"comment":{"body":"thanks","user":{"login":"someone"}},"installation":{"id":1}}`
	for name, tt := range map[string]struct {
		body string
		code int
	}{
		"not a command":          {valid, http.StatusOK},
		"escaped and spaced":     {strings.ReplaceAll(strings.Replace(valid, `"created"`, `"cr\u0065ated"`, 1), ",", " ,\r\n "), http.StatusOK},
		"not created":            {strings.Replace(valid, `"created"`, `"edited"`, 1), http.StatusOK},
		"number is a string":     {strings.Replace(valid, `"number":2`, `"number":"2"`, 1), http.StatusBadRequest},
		"body is a number":       {strings.Replace(valid, `"body":"thanks"`, `"body":5`, 1), http.StatusBadRequest},
		"user is a string":       {strings.Replace(valid, `{"login":"someone"}`, `"someone"`, 1), http.StatusBadRequest},
		"comment is null":        {strings.Replace(valid, `{"body":"thanks","user":{"login":"someone"}}`, `null`, 1), http.StatusBadRequest},
		"no pull request":        {strings.Replace(valid, `"pull_request"`, `"pull_requests"`, 1), http.StatusBadRequest},
		"owner login is a bool":  {strings.Replace(valid, `"login":"Codertocat"`, `"login":false`, 1), http.StatusBadRequest},
		"invalid escape in body": {strings.Replace(valid, `"thanks"`, `"th\anks"`, 1), http.StatusBadRequest},
	} {
		code, msg := e.send("pull_request_review_comment", "rc-"+name, []byte(tt.body))
		why := "ignored: not a command"
		if name == "not created" {
			why = "ignored: only new comments are commands"
		}
		if code != tt.code || tt.code == http.StatusOK && msg != why {
			t.Errorf("%s: %d %q, want %d", name, code, msg, tt.code)
		}
	}
}

func TestPullRequestReviewPayloadShapes(t *testing.T) {
	e := newEnv(t)
	valid := `{"action":"submitted","pull_request":{"number":2,"state":"open","head":{"sha":"` + fixtureHead + `"}},` +
		`"repository":{"name":"Hello-World","owner":{"login":"Codertocat"}},` +
		`"review":{"id":9,"user":{"login":"someone","id":3},"state":"commented","commit_id":"` + fixtureHead + `","body":"ok","submitted_at":"2026-01-02T03:04:05Z"},` +
		`"installation":{"id":1}}`
	for name, tt := range map[string]struct {
		body string
		code int
	}{
		// A person's review may change code-owner approval: it is queued (the worker drops it
		// when the repository requires none).
		"a person's review":       {valid, http.StatusAccepted},
		"unix time, no user":      {strings.Replace(strings.Replace(valid, `"2026-01-02T03:04:05Z"`, `1767322800`, 1), `{"login":"someone","id":3}`, `null`, 1), http.StatusAccepted},
		"escaped and spaced":      {strings.ReplaceAll(strings.Replace(valid, `"submitted"`, `"subm\u0069tted"`, 1), `":`, "\"\t: "), http.StatusAccepted},
		"edited":                  {strings.Replace(valid, `"submitted"`, `"edited"`, 1), http.StatusAccepted},
		"a bot's review":          {strings.Replace(valid, `"login":"someone"`, `"login":"ci[bot]"`, 1), http.StatusOK},
		"closed pull request":     {strings.Replace(valid, `"state":"open"`, `"state":"closed"`, 1), http.StatusOK},
		"review id is a string":   {strings.Replace(valid, `"id":9`, `"id":"9"`, 1), http.StatusBadRequest},
		"user id is a fraction":   {strings.Replace(valid, `"id":3`, `"id":3.5`, 1), http.StatusBadRequest},
		"submitted_at is no time": {strings.Replace(valid, `"2026-01-02T03:04:05Z"`, `"yesterday"`, 1), http.StatusBadRequest},
		"head is a string":        {strings.Replace(valid, `{"sha":"`+fixtureHead+`"}`, `"x"`, 1), http.StatusBadRequest},
		"no review":               {strings.Replace(valid, `"review":`, `"reviews":`, 1), http.StatusBadRequest},
		"trailing comma":          {strings.Replace(valid, `"body":"ok",`, `"body":"ok",,`, 1), http.StatusBadRequest},
	} {
		code, msg := e.send("pull_request_review", "rv-"+name, []byte(tt.body))
		why := map[string]string{"a bot's review": "ignored: a bot's review approves no protected path",
			"closed pull request": "ignored: pull request is closed"}[name]
		if tt.code == http.StatusAccepted {
			why = "queued Codertocat/Hello-World#2"
		}
		if code != tt.code || tt.code != http.StatusBadRequest && msg != why {
			t.Errorf("%s: %d %q, want %d %q", name, code, msg, tt.code, why)
		}
	}
}
