package githubfake

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-github/v62/github"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileOpenAPI compiles a schema trimmed from GitHub's OpenAPI description (testdata/openapi).
func compileOpenAPI(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "openapi", name))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rawAnswer is the fake's answer to one API request, as bytes.
func rawAnswer(t *testing.T, gh *github.Client, method, path string, body any) []byte {
	t.Helper()
	req, err := gh.NewRequest(method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := gh.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, err)
	}
	return b
}

// The fake's pull requests validate against GitHub's published schema of a pull request, for
// the properties lensgate reads: what the single read, the list and an edit answer, of a pull
// request from the repository itself and of one from a fork.
func TestPullRequestsMatchGitHubsSchema(t *testing.T) {
	f := setup(t)
	fork := f.s.AddPullRequest("acme/widgets", PullRequest{
		Title: "From a fork", Body: "", User: "mallory", HeadRepo: "mallory/widgets",
		HeadSHA: "cccc000000000000000000000000000000000001", BaseSHA: "bbbb000000000000000000000000000000000001", Diff: []byte(testDiff),
	})
	schema := compileOpenAPI(t, "pull-request.schema.json")
	check := func(what string, raw []byte) {
		t.Helper()
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("%s does not match GitHub's schema: %v", what, err)
		}
	}
	check("GET pull request", rawAnswer(t, f.gh, http.MethodGet, "repos/acme/widgets/pulls/1", nil))
	check("GET fork's pull request", rawAnswer(t, f.gh, http.MethodGet, "repos/acme/widgets/pulls/"+strconv.Itoa(fork.Number), nil))
	check("PATCH pull request", rawAnswer(t, f.gh, http.MethodPatch, "repos/acme/widgets/pulls/1", map[string]string{"body": "edited"}))
	list, _, err := f.gh.PullRequests.List(context.Background(), "acme", "widgets", nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	raw := rawAnswer(t, f.gh, http.MethodGet, "repos/acme/widgets/pulls", nil)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for i, item := range v.([]any) {
		if err := schema.Validate(item); err != nil {
			t.Errorf("list item %d does not match GitHub's schema: %v", i, err)
		}
	}
}

// The fake's team membership answers validate against GitHub's schema, and a non-member is a
// 404 as on GitHub.
func TestTeamMembershipMatchesGitHubsSchema(t *testing.T) {
	f := setup(t)
	f.s.SetTeamMember("acme", "infra", "octocat", "active")
	f.s.SetTeamMember("acme", "infra", "invitee", "pending")
	schema := compileOpenAPI(t, "team-membership.schema.json")
	for _, user := range []string{"octocat", "invitee"} {
		raw := rawAnswer(t, f.gh, http.MethodGet, "orgs/acme/teams/infra/memberships/"+user, nil)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("membership of %s does not match GitHub's schema: %v", user, err)
		}
	}
	m, _, err := f.gh.Teams.GetTeamMembershipBySlug(context.Background(), "ACME", "Infra", "OctoCat")
	if err != nil || m.GetState() != "active" || m.GetRole() != "member" {
		t.Fatalf("membership %+v, %v", m, err)
	}
	for _, path := range [][3]string{{"acme", "infra", "mallory"}, {"acme", "nobody", "octocat"}} {
		_, resp, err := f.gh.Teams.GetTeamMembershipBySlug(context.Background(), path[0], path[1], path[2])
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("%v: %v, want 404", path, err)
		}
	}
}
