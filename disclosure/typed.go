package disclosure

import (
	"github.com/lensgate/lensgate/disclosure/jcs"
)

// The typed reading of a statement. A receipt as emitters write it (canonical payload, every
// rule met) is decoded once, straight from the payload bytes into the few values the report
// needs, and each rule is checked as its member is read. Whatever this reading does not know
// (an unknown or out-of-order member, a value of another type, any broken rule, CAP-1
// coverage, a v0.1 receipt) stops it, and the receipt is judged by the general path over the
// parsed tree instead, which names every problem. So the typed reading only ever decides
// receipts that the general path finds without a structural issue, and it must report them
// exactly as that path does; the differential tests and FuzzTypedStatement hold it to that.

// tStatement is a statement read by decodeTyped.
type tStatement struct {
	version       Version
	predicateType string
	subjectName   string
	subjectDigest string
	predSpan      []byte // canonical bytes of the predicate
	scSpan        []byte // canonical bytes of predicate.subjectContext
	findingSpans  [][]byte
	findingsRoot  string
	hasRoot       bool
	// completed holds the values of the reviewCompleted time claims.
	completed []string
	signedAt  bool // times.signedAt is a timestamp
	status    string
	producer  []byte // canonical bytes of predicate.producer when it names a verifier
	// producerTree is producer parsed, for the verifier block's rules and report.
	producerTree map[string]any
}

// tSubject is what the typed reading keeps of subjectContext.
type tSubject struct {
	kind, repositoryID, prNode, issueNode, humanRef string
	seen                                            uint16 // the sc bits of the members present
	hasHumanRef                                     bool
}

// Members of subjectContext, as bits of tSubject.seen.
const (
	scBaseSha uint16 = 1 << iota
	scBodyCoreDigest
	scCommentNodeID
	scDisclosureCoreDigest
	scForge
	scHeadSha
	scHumanRef
	scIssueNodeID
	scKind
	scPullRequestNodeID
	scRenderedDisclosureDigest
	scRepositoryID
	scRevisedAt
	scReviewedDiffDigest
)

var (
	scPRAllowed = scKind | scForge | scRepositoryID | scPullRequestNodeID | scHeadSha | scBaseSha |
		scReviewedDiffDigest | scBodyCoreDigest | scRenderedDisclosureDigest | scHumanRef | scDisclosureCoreDigest
	scPRRequired = scKind | scForge | scRepositoryID | scPullRequestNodeID | scHeadSha | scBaseSha |
		scReviewedDiffDigest | scBodyCoreDigest | scDisclosureCoreDigest
	scIssueAllowed = scKind | scForge | scRepositoryID | scIssueNodeID | scBodyCoreDigest | scRevisedAt |
		scCommentNodeID | scRenderedDisclosureDigest | scHumanRef | scDisclosureCoreDigest
	scIssueRequired = scKind | scForge | scRepositoryID | scIssueNodeID | scBodyCoreDigest | scRevisedAt |
		scDisclosureCoreDigest
)

// typedReader decodes one payload; ok is cleared by the first thing it does not accept.
type typedReader struct {
	r  *jcs.Reader
	p  []byte
	st *tStatement
	sc tSubject
}

// decodeTyped reads a payload the typed way; ok is false when the general path must judge it.
func decodeTyped(payload []byte) (st *tStatement, ok bool) {
	t := typedReader{r: jcs.NewReader(payload, false), p: payload, st: &tStatement{}}
	t.r.ShareStrings()
	if !t.statement() || !t.r.End() {
		return nil, false
	}
	// A verifier block keeps its rules on the parsed tree; a broken one is the general
	// path's to name.
	if t.st.producer != nil {
		v, err := jcs.Parse(t.st.producer)
		t.st.producerTree, _ = v.(map[string]any)
		if err != nil || len(verifierBlockErrors(t.st.producerTree["verifier"])) > 0 {
			return nil, false
		}
	}
	return t.st, true
}

func (t *typedReader) object(member func(key string) bool) bool { return t.r.Object(member) }

func (t *typedReader) array(elem func(i int) bool) (int, bool) { return t.r.Array(elem) }

func (t *typedReader) str() (string, bool) { return t.r.Str() }

func (t *typedReader) nonEmpty() bool {
	s, ok := t.r.Str()
	return ok && s != ""
}

func (t *typedReader) hex(n int) bool {
	s, ok := t.r.Str()
	return ok && len(s) == n && lowerHex(s)
}

func (t *typedReader) oneOf(allowed ...string) (string, bool) {
	s, ok := t.r.Str()
	return s, ok && oneOf(s, allowed...)
}

// digestRef reads {"sha256": <64 hex>} (other members go to the general path).
func (t *typedReader) digestRef() bool {
	seen := false
	return t.object(func(k string) bool {
		seen = k == "sha256" && t.hex(64)
		return seen
	}) && seen
}

// nullOr reads null or what read accepts.
func (t *typedReader) nullOr(read func() bool) bool { return t.r.Null() || read() }

// stringList reads an array of strings, each non-empty when nonEmpty; n is its length.
func (t *typedReader) stringList(nonEmpty bool) (n int, ok bool) {
	return t.array(func(int) bool {
		s, ok := t.r.Str()
		return ok && (!nonEmpty || s != "")
	})
}

func (t *typedReader) statement() bool {
	var typ, pred, pt, subj bool
	ok := t.object(func(k string) bool {
		switch k {
		case "_type":
			s, ok := t.str()
			typ = ok && s == StatementType
			return typ
		case "predicate":
			start := t.r.Pos()
			pred = t.predicate()
			t.st.predSpan = t.p[start:t.r.Pos()]
			return pred
		case "predicateType":
			s, ok := t.str()
			v, known := versionOfType(s)
			pt = ok && known && v != V01
			t.st.version, t.st.predicateType = v, s
			return pt
		case "subject":
			subj = t.subject()
			return subj
		}
		return false
	})
	if !ok || !typ || !pred || !pt || !subj {
		return false
	}
	// producer.verifier is a v0.3 member.
	if t.st.producer != nil && t.st.version != V03 {
		return false
	}
	name, derivable := t.sc.name()
	return derivable && name == t.st.subjectName
}

// subject reads the one subject entry: {"digest": {"sha256": <64 hex>}, "name": <non-empty>}.
func (t *typedReader) subject() bool {
	n, ok := t.array(func(i int) bool {
		var digest, name bool
		return i == 0 && t.object(func(k string) bool {
			switch k {
			case "digest":
				digest = t.object(func(k string) bool {
					if k != "sha256" {
						return false
					}
					s, ok := t.str()
					t.st.subjectDigest = s
					return ok && len(s) == 64 && lowerHex(s)
				}) && t.st.subjectDigest != ""
				return digest
			case "name":
				s, ok := t.str()
				t.st.subjectName = s
				name = ok && s != ""
				return name
			}
			return false
		}) && digest && name
	})
	return ok && n == 1
}

// name is SubjectName over the typed subjectContext.
func (sc *tSubject) name() (string, bool) {
	if sc.hasHumanRef && sc.humanRef != "" {
		return sc.humanRef, true
	}
	k := "github-issue"
	if sc.kind == KindPullRequest {
		k = "github-pr"
	}
	node := sc.prNode
	if node == "" {
		node = sc.issueNode
	}
	derivable := (sc.kind == KindPullRequest || sc.kind == KindIssue) && sc.repositoryID != "" && node != ""
	return k + ":" + sc.repositoryID + ":" + node, derivable
}

func (t *typedReader) predicate() bool {
	var cov, decl, codes, lims, sc, times, schema, review bool
	var total, listed int
	var gaps bool
	ok := t.object(func(k string) bool {
		switch k {
		case "coverage":
			cov, gaps = t.coverage()
			return cov
		case "declaration":
			decl, total, listed = t.declaration()
			return decl
		case "limitationCodes":
			codes = t.limitationCodes()
			return codes
		case "limitations":
			n, ok := t.stringList(true)
			lims = ok && n > 0
			return lims
		case "observations":
			// No witness exists: only an empty list is accepted.
			return t.r.Enter('[') && !t.r.Next(']', 0) && !t.r.Failed()
		case "planRef":
			return t.digestRef()
		case "producer":
			return t.producer()
		case "reviewId":
			review = t.nonEmpty()
			return review
		case "schemaVersion":
			s, ok := t.str()
			schema = ok && schemaVersionOK(s)
			return schema
		case "subjectContext":
			start := t.r.Pos()
			sc = t.subjectContext()
			t.st.scSpan = t.p[start:t.r.Pos()]
			return sc
		case "supersession":
			return t.supersession()
		case "times":
			times = t.times()
			return times
		}
		return false
	})
	// An unlisted finding must be named as a gap.
	return ok && cov && decl && codes && lims && sc && times && schema && review && (total <= listed || gaps)
}

// schemaVersionOK is reSchema for ASCII digits; other digits go to the general path.
func schemaVersionOK(s string) bool {
	const prefix = "0.1."
	if len(s) <= len(prefix) || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (t *typedReader) subjectContext() bool {
	sc := &t.sc
	ok := t.object(func(k string) bool {
		var bit uint16
		var ok bool
		switch k {
		case "baseSha":
			bit, ok = scBaseSha, t.hex(40)
		case "bodyCoreDigest":
			bit, ok = scBodyCoreDigest, t.hex(64)
		case "commentNodeId":
			bit, ok = scCommentNodeID, t.nonEmpty()
		case "disclosureCoreDigest":
			_, ok = t.str()
			bit = scDisclosureCoreDigest
		case "forge":
			bit, ok = scForge, t.nonEmpty()
		case "headSha":
			bit, ok = scHeadSha, t.hex(40)
		case "humanRef":
			bit = scHumanRef
			sc.humanRef, ok = t.str()
			sc.hasHumanRef = ok
		case "issueNodeId":
			bit = scIssueNodeID
			sc.issueNode, ok = t.str()
			ok = ok && sc.issueNode != ""
		case "kind":
			bit = scKind
			sc.kind, ok = t.oneOf(KindPullRequest, KindIssue)
		case "pullRequestNodeId":
			bit = scPullRequestNodeID
			sc.prNode, ok = t.str()
			ok = ok && sc.prNode != ""
		case "renderedDisclosureDigest":
			bit, ok = scRenderedDisclosureDigest, t.hex(64)
		case "repositoryId":
			bit = scRepositoryID
			sc.repositoryID, ok = t.str()
			ok = ok && sc.repositoryID != ""
		case "revisedAt":
			s, isStr := t.str()
			bit, ok = scRevisedAt, isStr && isTimestamp(s)
		case "reviewedDiffDigest":
			bit, ok = scReviewedDiffDigest, t.hex(64)
		}
		sc.seen |= bit
		return ok
	})
	if !ok {
		return false
	}
	allowed, required := scIssueAllowed, scIssueRequired
	if sc.kind == KindPullRequest {
		allowed, required = scPRAllowed, scPRRequired
	}
	return sc.seen&^allowed == 0 && sc.seen&required == required
}

// coverage reads a coverage without CAP-1 members; gaps is whether knownGaps names any.
func (t *typedReader) coverage() (ok, gaps bool) {
	var status, method, window string
	var sources, gapCount int
	var hasObs, hasExp bool
	var obs, exp int64
	runs := func(has *bool, n *int64) bool {
		if t.r.Null() {
			return true
		}
		v, ok := t.r.Int()
		*has, *n = ok, v
		return ok && v >= 0
	}
	ok = t.object(func(k string) bool {
		var ok bool
		switch k {
		case "collectionMethod":
			method, ok = t.str()
		case "expectedRuns":
			ok = runs(&hasExp, &exp)
		case "knownGaps":
			gapCount, ok = t.stringList(false)
		case "observedRuns":
			ok = runs(&hasObs, &obs)
		case "sources":
			sources, ok = t.stringList(false)
		case "status":
			status, ok = t.oneOf(CoverageComplete, CoveragePartial, CoverageUnknown)
		case "window":
			window, ok = t.str()
		}
		return ok
	})
	gaps = gapCount > 0
	t.st.status = status
	switch {
	case !ok || status == "":
		return false, gaps
	case status == CoverageComplete:
		ok = hasObs && hasExp && obs >= exp && exp != 0 && !gaps && sources > 0 && window != "" && method != ""
	case status == CoveragePartial:
		ok = gaps
	}
	return ok, gaps
}

// declaration reads the declaration; total is findingsTotal and listed the findings' count.
func (t *typedReader) declaration() (ok bool, total, listed int) {
	var authoring, findings, hasTotal, nonClaims, runs bool
	var total64 int64
	ok = t.object(func(k string) bool {
		switch k {
		case "authoring":
			_, authoring = t.array(func(int) bool { return t.assured() })
			return authoring
		case "findings":
			findings = t.findings()
			return findings
		case "findingsRoot":
			t.st.findingsRoot, t.st.hasRoot = t.str()
			return t.st.hasRoot && len(t.st.findingsRoot) == 64 && lowerHex(t.st.findingsRoot)
		case "findingsTotal":
			total64, hasTotal = t.r.Int()
			return hasTotal && total64 >= 0
		case "nonClaims":
			n, ok := t.stringList(true)
			nonClaims = ok && n > 0
			return nonClaims
		case "reviewRuns":
			_, runs = t.array(func(int) bool { return t.assured() })
			return runs
		case "timeClaims":
			_, ok := t.array(func(int) bool { return t.timeClaim() })
			return ok
		}
		return false
	})
	listed = len(t.st.findingSpans)
	ok = ok && authoring && findings && hasTotal && nonClaims && runs &&
		total64 >= int64(listed) && (t.st.hasRoot || listed == 0)
	return ok, int(min(total64, 1<<53)), listed
}

// assured reads an authoring or reviewRuns entry: a selfDeclared assurance, who asserts it,
// and optionally observedBy and evidenceRef.
func (t *typedReader) assured() bool {
	var assertedBy, assurance bool
	return t.object(func(k string) bool {
		switch k {
		case "assertedBy":
			assertedBy = t.nonEmpty()
			return assertedBy
		case "assurance":
			s, ok := t.str()
			assurance = ok && s == SelfDeclared
			return assurance
		case "evidenceRef":
			return t.nullOr(t.digestRef)
		case "observedBy":
			return t.nullOr(func() bool { _, ok := t.str(); return ok })
		}
		return false
	}) && assertedBy && assurance
}

func (t *typedReader) findings() bool {
	var idBuf [16]string
	ids := idBuf[:0]
	t.st.findingSpans = make([][]byte, 0, 8)
	var seen map[string]bool
	_, ok := t.array(func(int) bool {
		start := t.r.Pos()
		var id, title, disposition, reason string
		var hasID, hasSeverity, hasTitle, hasDisposition, hasFix bool
		ok := t.object(func(k string) bool {
			var ok bool
			switch k {
			case "disposition":
				disposition, ok = t.oneOf(Dispositions...)
				hasDisposition = ok
			case "evidenceRef":
				ok = t.nullOr(t.digestRef)
			case "fixCommit":
				// A v0.2/v0.3 fixCommit is a full commit id or null.
				if !t.r.Null() {
					ok = t.hex(40)
					hasFix = ok
				} else {
					ok = !t.r.Failed()
				}
			case "id":
				id, ok = t.str()
				hasID = ok && id != ""
				ok = hasID
			case "reason":
				reason, ok = t.str()
			case "severity":
				_, ok = t.oneOf(Severities...)
				hasSeverity = ok
			case "title":
				title, ok = t.str()
				hasTitle = ok && title != ""
				ok = hasTitle
			}
			return ok
		})
		if !ok || !hasID || !hasSeverity || !hasTitle || !hasDisposition {
			return false
		}
		switch disposition {
		case "fixed":
			if !hasFix {
				return false
			}
		case "dismissed":
			if reason == "" {
				return false
			}
		}
		// Ids are unique; a long list is checked through a set.
		if seen == nil && len(ids) < len(idBuf) {
			for _, prev := range ids {
				if prev == id {
					return false
				}
			}
			ids = append(ids, id)
		} else {
			if seen == nil {
				seen = make(map[string]bool, 2*len(ids))
				for _, prev := range ids {
					seen[prev] = true
				}
			}
			if seen[id] {
				return false
			}
			seen[id] = true
		}
		t.st.findingSpans = append(t.st.findingSpans, t.p[start:t.r.Pos()])
		return true
	})
	return ok
}

func (t *typedReader) timeClaim() bool {
	var kind, value string
	var assertedBy, assurance bool
	ok := t.object(func(k string) bool {
		var ok bool
		switch k {
		case "assertedBy":
			assertedBy = t.nonEmpty()
			ok = assertedBy
		case "assurance":
			s, isStr := t.str()
			assurance = isStr && s == SelfDeclared
			ok = assurance
		case "evidenceRef":
			ok = t.nullOr(t.digestRef)
		case "kind":
			kind, ok = t.oneOf(TimeClaimKinds...)
		case "value":
			value, ok = t.str()
			ok = ok && value != ""
		}
		return ok
	})
	if !ok || kind == "" || value == "" || !assertedBy || !assurance {
		return false
	}
	if kind == "reviewCompleted" {
		t.st.completed = append(t.st.completed, value)
	}
	return true
}

func (t *typedReader) limitationCodes() bool {
	var buf [16]string
	seen := buf[:0]
	_, ok := t.array(func(int) bool {
		s, ok := t.str()
		if !ok || !limitationCodeSet[s] {
			return false
		}
		for _, prev := range seen {
			if prev == s {
				return false
			}
		}
		seen = append(seen, s)
		return true
	})
	return ok
}

// producer reads id and keyId; a verifier block is kept as bytes for the general rules.
func (t *typedReader) producer() bool {
	start := t.r.Pos()
	verifier := false
	ok := t.object(func(k string) bool {
		switch k {
		case "id", "keyId":
			_, ok := t.str()
			return ok
		case "verifier":
			verifier = true
			return t.skipVerifier()
		}
		return false
	})
	if ok && verifier {
		t.st.producer = t.p[start:t.r.Pos()]
	}
	return ok
}

// skipVerifier reads over a verifier block of the shape the v0.3 format gives it; its rules
// are applied later on its parsed tree.
func (t *typedReader) skipVerifier() bool {
	var value func(depth int) bool
	value = func(depth int) bool {
		if depth > 3 {
			return false
		}
		switch t.r.Peek() {
		case '{':
			return t.object(func(string) bool { return value(depth + 1) })
		case '"':
			_, ok := t.str()
			return ok
		case 't', 'f':
			_, ok := t.r.Bool()
			return ok
		case 'n':
			return t.r.Null()
		default:
			_, ok := t.r.Int()
			return ok
		}
	}
	return t.r.Peek() == '{' && value(0)
}

func (t *typedReader) supersession() bool {
	return t.object(func(k string) bool {
		switch k {
		case "corrects", "supersedes", "withdraws":
		default:
			return false
		}
		_, ok := t.array(func(int) bool {
			var prior, reason bool
			return t.object(func(k string) bool {
				switch k {
				case "priorDigest":
					prior = t.digestRef()
					return prior
				case "reason":
					reason = t.nonEmpty()
					return reason
				}
				return false
			}) && prior && reason
		})
		return ok
	})
}

func (t *typedReader) times() bool {
	declared := false
	return t.object(func(k string) bool {
		switch k {
		case "anchoredAt", "observedAt":
			// anchoredAt must be null; a v0.2/v0.3 observedAt needs observations.
			return t.r.Null()
		case "declaredAt":
			declared = true
			return t.r.Null() || t.timestamp()
		case "signedAt":
			if t.r.Null() {
				return true
			}
			t.st.signedAt = t.timestamp()
			return t.st.signedAt
		}
		return false
	}) && declared
}

func (t *typedReader) timestamp() bool {
	s, ok := t.str()
	return ok && isTimestamp(s)
}
