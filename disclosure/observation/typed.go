package observation

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lensgate/lensgate/disclosure/jcs"
)

// The typed reading of an observation statement. An observation as the runner writes it is
// read once, straight from the canonical payload into a Statement, and every rule of
// parseStatement is checked as its member is read. Anything it does not accept (a broken
// rule, a member out of place, a float) stops it, and parseStatement over the parsed tree
// judges the payload instead and names the problem. It accepts only what parseStatement
// accepts, with the same Statement; the differential tests hold it to that.

// decodeTyped reads a payload the typed way; ok is false when parseStatement must judge it.
func decodeTyped(payload []byte) (*Statement, bool) {
	r := jcs.NewReader(payload, false)
	r.ShareStrings()
	t := &typed{r: r}
	s := &Statement{}
	if !t.statement(s) || !r.End() {
		return nil, false
	}
	return s, true
}

type typed struct {
	r *jcs.Reader
	// The predicate comes before predicateType in canonical order, so what depends on the
	// version is noted while reading and checked at the end.
	schema      string
	interpreter bool // a runtime names an interpreter (a v0.2 member)
}

// str is reader.str for a member that is present: non-empty, at most max bytes, clean UTF-8.
func (t *typed) str(max int) (string, bool) {
	s, ok := t.r.Str()
	return s, ok && s != "" && len(s) <= max && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func (t *typed) hex64() (string, bool) {
	s, ok := t.r.Str()
	return s, ok && isHex64(s)
}

func (t *typed) integer(min, max int64) (int64, bool) {
	n, ok := t.r.Int()
	return n, ok && n >= min && n <= max
}

func (t *typed) time() (time.Time, bool) {
	s, ok := t.str(len(TimeLayout))
	if !ok {
		return time.Time{}, false
	}
	v, err := time.Parse(TimeLayout, s)
	return v, err == nil && v.Format(TimeLayout) == s
}

// digest reads {"sha256": <64 hex>}.
func (t *typed) digest() (string, bool) {
	var d string
	var ok bool
	return d, t.r.Object(func(k string) bool {
		if k != "sha256" {
			return false
		}
		d, ok = t.hex64()
		return ok
	}) && ok
}

func (t *typed) statement(s *Statement) bool {
	var typ, pt, subj, pred bool
	return t.r.Object(func(k string) bool {
		switch k {
		case "_type":
			v, ok := t.r.Str()
			typ = ok && v == StatementType
			return typ
		case "predicate":
			pred = t.predicate(s)
			return pred
		case "predicateType":
			v, ok := t.r.Str()
			switch {
			case ok && v == PredicateType:
				pt = t.schema == SchemaVersion && !t.interpreter
			case ok && v == PredicateTypeV02:
				pt = t.schema == SchemaVersionV02
			}
			return pt
		case "subject":
			n, ok := t.r.Array(func(i int) bool {
				var name, digest bool
				return i == 0 && t.r.Object(func(k string) bool {
					switch k {
					case "digest":
						s.SubjectDigest, digest = t.digest()
						return digest
					case "name":
						s.SubjectName, name = t.str(MaxStringBytes)
						return name
					}
					return false
				}) && name && digest
			})
			subj = ok && n == 1
			return subj
		}
		return false
	}) && typ && pt && subj && pred
}

func (t *typed) predicate(s *Statement) bool {
	var binds, calls, findings, runner, schema, window bool
	ok := t.r.Object(func(k string) bool {
		switch k {
		case "binds":
			binds = t.binds(s)
			return binds
		case "calls":
			_, calls = t.r.Array(func(i int) bool {
				if i >= MaxCalls {
					return false
				}
				c, ok := t.call()
				s.Calls = append(s.Calls, c)
				return ok
			})
			return calls
		case "findings":
			findings = t.findings(s)
			return findings
		case "runner":
			var id, version bool
			runner = t.r.Object(func(k string) bool {
				switch k {
				case "id":
					s.Runner.ID, id = t.str(64)
					return id
				case "version":
					s.Runner.Version, version = t.str(128)
					return version
				}
				return false
			}) && id && version
			return runner
		case "schemaVersion":
			t.schema, schema = t.r.Str()
			return schema
		case "window":
			var started, finished bool
			window = t.r.Object(func(k string) bool {
				switch k {
				case "finished":
					s.Finished, finished = t.time()
					return finished
				case "started":
					s.Started, started = t.time()
					return started
				}
				return false
			}) && started && finished && !s.Finished.Before(s.Started)
			return window
		}
		return false
	})
	if !ok || !binds || !calls || !findings || !runner || !schema || !window {
		return false
	}
	// Calls come before the window in canonical order: their times are checked after.
	for _, c := range s.Calls {
		if c.Started.Before(s.Started) || c.Finished.After(s.Finished) {
			return false
		}
	}
	return true
}

func (t *typed) binds(s *Statement) bool {
	var receipt, diff bool
	return t.r.Object(func(k string) bool {
		var ok bool
		switch k {
		case "plan":
			s.PlanDigest, ok = t.digest()
		case "receipt":
			s.ReceiptDigest, receipt = t.digest()
			ok = receipt
		case "reviewedDiffDigest":
			s.ReviewedDiffDigest, diff = t.hex64()
			ok = diff
		}
		return ok
	}) && receipt && diff
}

func (t *typed) findings(s *Statement) bool {
	var listed, root, total bool
	var n int64
	ok := t.r.Object(func(k string) bool {
		switch k {
		case "listed":
			_, listed = t.r.Array(func(i int) bool {
				if i >= MaxFindings {
					return false
				}
				var f Finding
				var id, lens, sev bool
				ok := t.r.Object(func(k string) bool {
					switch k {
					case "id":
						f.ID, id = t.str(256)
						return id
					case "lens":
						f.Lens, lens = t.str(256)
						return lens
					case "severity":
						f.Severity, sev = t.str(16)
						_, known := severityRank[f.Severity]
						return sev && known
					}
					return false
				})
				s.Findings = append(s.Findings, f)
				return ok && id && lens && sev
			})
			return listed
		case "root":
			s.FindingsRoot, root = t.hex64()
			return root
		case "total":
			n, total = t.integer(0, 1<<31-1)
			s.FindingsTotal = int(n)
			return total
		}
		return false
	})
	if !ok || !listed || !root || !total || len(s.Findings) > s.FindingsTotal {
		return false
	}
	return len(s.Findings) != s.FindingsTotal || FindingsRoot(s.Findings) == s.FindingsRoot
}

func (t *typed) call() (Call, bool) {
	var c Call
	var exchanges, files, finished, lenses, outcomes, runtime, started bool
	ok := t.r.Object(func(k string) bool {
		var ok bool
		switch k {
		case "error":
			c.Error, ok = t.str(MaxErrorBytes)
		case "exchanges":
			_, exchanges = t.r.Array(func(i int) bool {
				e, ok := t.exchange()
				c.Exchanges = append(c.Exchanges, e)
				return ok && i < MaxExchanges
			})
			ok = exchanges
		case "files":
			var digest, count bool
			files = t.r.Object(func(k string) bool {
				switch k {
				case "count":
					var n int64
					n, count = t.integer(0, 1<<31-1)
					c.Files.Count = int(n)
					return count
				case "digest":
					c.Files.Digest, digest = t.hex64()
					return digest
				}
				return false
			}) && digest && count
			ok = files
		case "finished":
			c.Finished, finished = t.time()
			ok = finished
		case "lenses":
			_, lenses = t.r.Array(func(i int) bool {
				l, ok := t.r.Str()
				c.Lenses = append(c.Lenses, l)
				return ok && l != "" && len(l) <= 256 && i < MaxLensesPerCall
			})
			ok = lenses && len(c.Lenses) > 0
		case "outcomes":
			_, outcomes = t.r.Array(func(i int) bool {
				var o Outcome
				var lens, outcome bool
				ok := t.r.Object(func(k string) bool {
					switch k {
					case "lens":
						o.Lens, lens = t.str(256)
						return lens
					case "outcome":
						o.Outcome, outcome = t.str(16)
						return outcome && (o.Outcome == "passed" || o.Outcome == "failed" || o.Outcome == "pending")
					}
					return false
				})
				c.Outcomes = append(c.Outcomes, o)
				return ok && lens && outcome && i < MaxLensesPerCall
			})
			ok = outcomes
		case "reviewDigest":
			c.ReviewDigest, ok = t.hex64()
		case "runtime":
			c.Runtime, runtime = t.runtime()
			ok = runtime
		case "started":
			c.Started, started = t.time()
			ok = started
		case "tokens":
			var in, out bool
			c.Tokens = &Tokens{}
			ok = t.r.Object(func(k string) bool {
				switch k {
				case "input":
					c.Tokens.Input, in = t.integer(0, 1<<53-1)
					return in
				case "output":
					c.Tokens.Output, out = t.integer(0, 1<<53-1)
					return out
				}
				return false
			}) && in && out
		}
		return ok
	})
	ok = ok && exchanges && files && finished && lenses && outcomes && runtime && started &&
		!c.Finished.Before(c.Started) && (c.ReviewDigest != "" || c.Error != "")
	return c, ok
}

func (t *typed) exchange() (Exchange, bool) {
	var e Exchange
	var request bool
	ok := t.r.Object(func(k string) bool {
		switch k {
		case "request":
			e.Request, request = t.blob()
			return request
		case "response":
			b, ok := t.blob()
			e.Response = &b
			return ok
		case "status":
			n, ok := t.integer(100, 599)
			e.Status = int(n)
			return ok
		}
		return false
	})
	return e, ok && request
}

func (t *typed) blob() (Blob, bool) {
	var b Blob
	var digest, size bool
	return b, t.r.Object(func(k string) bool {
		switch k {
		case "sha256":
			b.SHA256, digest = t.hex64()
			return digest
		case "size":
			b.Size, size = t.integer(0, 1<<53-1)
			return size
		}
		return false
	}) && digest && size
}

// Runtime members, as bits.
const (
	rtEndpointHost = 1 << iota
	rtExecutable
	rtExitStatus
	rtInterpreter
	rtKind
	rtModelRequested
	rtModelResponded
	rtName
	rtVersion
)

func (t *typed) runtime() (Runtime, bool) {
	var rt Runtime
	var seen int
	ok := t.r.Object(func(k string) bool {
		var bit int
		var ok bool
		switch k {
		case "endpointHost":
			bit = rtEndpointHost
			rt.EndpointHost, ok = t.str(255)
		case "executableSha256":
			bit = rtExecutable
			rt.ExecutableSHA256, ok = t.hex64()
		case "exitStatus":
			bit = rtExitStatus
			var n int64
			n, ok = t.integer(-1, 255)
			status := int(n)
			rt.ExitStatus = &status
		case "interpreter":
			bit = rtInterpreter
			var path, digest bool
			ok = t.r.Object(func(k string) bool {
				switch k {
				case "path":
					rt.InterpreterPath, path = t.str(MaxStringBytes)
					return path && strings.HasPrefix(rt.InterpreterPath, "/")
				case "sha256":
					rt.InterpreterSHA256, digest = t.hex64()
					return digest
				}
				return false
			}) && path && digest
			t.interpreter = true
		case "kind":
			bit = rtKind
			rt.Kind, ok = t.str(16)
		case "modelRequested":
			bit = rtModelRequested
			rt.ModelRequested, ok = t.str(256)
		case "modelResponded":
			bit = rtModelResponded
			rt.ModelResponded, ok = t.str(256)
		case "name":
			bit = rtName
			rt.Name, ok = t.str(64)
		case "version":
			bit = rtVersion
			rt.Version, ok = t.str(128)
		}
		seen |= bit
		return ok
	})
	if !ok || seen&(rtKind|rtName) != rtKind|rtName {
		return rt, false
	}
	// Each kind takes its own members, and requires some of them.
	var allowed, required int
	switch rt.Kind {
	case KindBuiltin:
		allowed, required = rtVersion|rtExecutable, rtVersion|rtExecutable
	case KindExec:
		allowed, required = rtExecutable|rtExitStatus|rtInterpreter, rtExecutable
	case KindOpenAI:
		allowed, required = rtEndpointHost|rtModelRequested|rtModelResponded, rtEndpointHost|rtModelRequested
	case KindOther:
		allowed = rtVersion
	default:
		return rt, false
	}
	allowed |= rtKind | rtName
	return rt, seen&^allowed == 0 && seen&required == required
}
