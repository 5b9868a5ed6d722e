package details_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/handlers/details"
	"github.com/lensgate/lensgate/review"
)

// proseReviewer is plantedReviewer with a model walkthrough and an answer to a question, each
// carrying markup.
type proseReviewer struct{ plantedReviewer }

func (p proseReviewer) Review(ctx context.Context, s *review.Subject, cfg *config.Repo) (*review.Decision, error) {
	d, err := p.plantedReviewer.Review(ctx, s, cfg)
	if err != nil {
		return nil, err
	}
	d.Walkthrough = &review.Walkthrough{Head: s.HeadSHA, Summary: "Adds a line <script>alert(1)</script>", SummaryModel: "m-7",
		SummaryHead: s.HeadSHA, SummaryTokens: &review.TokenCount{Prompt: 400, Completion: 40, Total: 440}}
	d.Answers = []review.QuestionAnswer{{CommentID: 5, User: "bob", Question: "why <b>this</b>?", Text: "Because of the flag.", Model: "m-7",
		Tokens: &review.TokenCount{Prompt: 300, Completion: 30, Total: 330}}}
	return d, nil
}

// TestWalkthroughAndAnswersOnThePage: the page lists what a model wrote beside the review and
// what each cost, escaped, apart from the findings.
func TestWalkthroughAndAnswersOnThePage(t *testing.T) {
	st := newStack(t, stackOptions{reviewer: proseReviewer{}})
	st.review(stackOptions{})
	cl := st.client()
	st.login(cl, reader)
	_, body, _ := get(t, cl, st.pageURL(""))
	i := strings.Index(body, `<table id="prose">`)
	if i < 0 {
		t.Fatalf("no walkthrough and answers on the page:\n%s", body)
	}
	prose := body[i : i+strings.Index(body[i:], "</table>")]
	for _, want := range []string{"walkthrough", "440 (400 in, 40 out)", "answer to <code>bob</code>: why &lt;b&gt;this&lt;/b&gt;?",
		"Because of the flag.", "330 (300 in, 30 out)", "Adds a line &lt;script&gt;"} {
		if !strings.Contains(prose, want) {
			t.Errorf("prose table lacks %q:\n%s", want, prose)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Fatal("model text unescaped")
	}
	findings := body[strings.Index(body, `id="findings-h"`):strings.Index(body, `id="lenses-h"`)]
	if strings.Contains(findings, "Because of the flag") || strings.Contains(findings, "Adds a line") {
		t.Fatal("prose listed among the findings")
	}
}

// TestRecordProseIsBounded: prose is cut to its bounds and gives way, last, before a record
// would not be written at all.
func TestRecordProseIsBounded(t *testing.T) {
	var r details.Record
	for i := 0; i < 10; i++ {
		r.Prose = append(r.Prose, details.Prose{Kind: "ask", Question: strings.Repeat("q", 5000), Text: strings.Repeat("a", 50_000)})
	}
	line, err := details.EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := details.ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Prose) != 4 || len(got.Prose[0].Text) > 900 || len(got.Prose[0].Question) > 400 || len(line) > details.MaxRecordBytes {
		t.Fatalf("%d prose entries, text %d bytes, line %d bytes", len(got.Prose), len(got.Prose[0].Text), len(line))
	}
}
