package modelctx

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/lensgate/lensgate/review/diff"
)

// Span kinds.
const (
	// SpanFile is a small changed file given whole.
	SpanFile = "file"
	// SpanFunction is a Go function or method, found by go/parser.
	SpanFunction = "function"
	// SpanType is a Go type, const or var declaration, found by go/parser.
	SpanType = "declaration"
	// SpanBlock is the enclosing block another language's heuristic found.
	SpanBlock = "block"
)

// Limits of the enclosing code.
const (
	// SmallFileLines and SmallFileBytes: a changed file at most this large is given whole.
	SmallFileLines = 200
	SmallFileBytes = 12 << 10
	// maxSpanLines: an enclosing function or block longer than this is left out (the diff
	// already shows the hunk).
	maxSpanLines = 400
)

// span is a range of lines of one file, 1-based and inclusive.
type span struct {
	start, end int
	kind, name string
}

// changedLines are the lines of the new version a file's hunks touch: each added line, and for
// a deletion the line that now stands where the deleted lines were.
func changedLines(f *diff.File) []int {
	var out []int
	next := 0
	f.Walk(func(l diff.Line) bool {
		switch l.Kind {
		case '+':
			out = append(out, l.New)
			next = l.New + 1
		case '-':
			if next > 0 {
				out = append(out, next)
			}
		default:
			next = l.New + 1
		}
		return true
	})
	return out
}

// shownLines are the lines of the new version the diff shows (context and added lines).
func shownLines(f *diff.File) map[int]bool {
	out := map[int]bool{}
	f.Walk(func(l diff.Line) bool {
		if l.New > 0 {
			out[l.New] = true
		}
		return true
	})
	return out
}

// coveredBy reports whether every line of s is in shown.
func coveredBy(s span, shown map[int]bool) bool {
	for l := s.start; l <= s.end; l++ {
		if !shown[l] {
			return false
		}
	}
	return true
}

// enclosing returns the spans of src that enclose the changed lines: the whole file when it is
// small, else for Go the top-level declarations (go/parser; decls, when not nil, are the
// file's declarations parsed before), for other languages the block the indentation heuristic
// finds. Overlapping spans are merged.
func enclosing(p string, src []byte, lines []int, decls []span) []span {
	if len(lines) == 0 || len(src) == 0 {
		return nil
	}
	n := bytes.Count(src, []byte("\n"))
	if src[len(src)-1] != '\n' {
		n++
	}
	if n <= SmallFileLines && len(src) <= SmallFileBytes {
		return []span{{start: 1, end: n, kind: SpanFile}}
	}
	if strings.HasSuffix(p, ".go") {
		if decls == nil {
			decls, _ = goDecls(src)
		}
		if decls != nil {
			return merge(containing(decls, lines))
		}
	}
	if !heuristicLanguage(p) {
		return nil
	}
	var out []span
	text := strings.Split(string(src), "\n")
	for _, l := range lines {
		if s, ok := blockAround(text, l); ok {
			out = append(out, s)
		}
	}
	return merge(out)
}

// containing are the declarations that hold one of the lines, and are not too long.
func containing(decls []span, lines []int) []span {
	var out []span
	for _, s := range decls {
		for _, l := range lines {
			if l >= s.start && l <= s.end && s.end-s.start < maxSpanLines {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// goDecls lists the top-level declarations of a Go file (imports aside) with their doc
// comments. It returns nil when the file does not parse (the heuristic is used instead), and
// an empty, non-nil list for a file without declarations.
func goDecls(src []byte) ([]span, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	out := []span{}
	for _, d := range f.Decls {
		s := span{start: fset.Position(d.Pos()).Line, end: fset.Position(d.End()).Line}
		switch t := d.(type) {
		case *ast.FuncDecl:
			s.kind, s.name = SpanFunction, t.Name.Name
			if t.Recv != nil && len(t.Recv.List) > 0 {
				s.name = recvName(t.Recv.List[0].Type) + "." + t.Name.Name
			}
			if t.Doc != nil {
				s.start = fset.Position(t.Doc.Pos()).Line
			}
		case *ast.GenDecl:
			if t.Tok == token.IMPORT {
				continue
			}
			s.kind = SpanType
			if len(t.Specs) == 1 {
				if ts, ok := t.Specs[0].(*ast.TypeSpec); ok {
					s.name = ts.Name.Name
				}
			}
			if t.Doc != nil {
				s.start = fset.Position(t.Doc.Pos()).Line
			}
		}
		out = append(out, s)
	}
	return out, true
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "(*" + recvName(t.X) + ")"
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	}
	return "?"
}

// heuristicLanguage reports whether the indentation heuristic is used for a file: languages
// whose functions and classes are blocks marked by braces or by indentation.
func heuristicLanguage(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".py", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".java", ".kt", ".kts", ".scala", ".cs", ".c", ".h",
		".cc", ".cpp", ".cxx", ".hpp", ".hh", ".rs", ".swift", ".php", ".rb", ".dart", ".groovy", ".go":
		return true
	}
	return false
}

// defRE recognises a line that starts a function, method, class or similar definition in the
// common languages.
var defRE = regexp.MustCompile(`^(?:(?:export|default|public|private|protected|internal|static|final|abstract|async|override|open|pub(?:\([a-z]+\))?|unsafe|extern|inline|virtual|const|fun|suspend|sealed|data|partial)\s+)*` +
	`(?:def|class|func|fn|function|interface|struct|enum|trait|impl|object|module|record|namespace|type|void|[A-Za-z_][\w<>\[\],.?*& ]*\s+[A-Za-z_]\w*\s*\(|[A-Za-z_]\w*\s*\([^;]*\)\s*(?:\{|=>|:)|[A-Za-z_]\w*\s*=\s*(?:async\s*)?(?:function|\())`)

// blockAround finds the definition enclosing line l (1-based) by indentation, the heuristic
// used for languages without a parser here:
//
//  1. From l, walk up to the nearest non-blank line indented less than l's block; repeat from
//     there (each step is one enclosing block) until a line that starts a definition (defRE)
//     or a line at column 0.
//  2. The block ends before the next non-blank line indented no deeper than that header;
//     when that line closes the block ("}", "end", ")" or "]") it is part of it.
//
// It relies on code being indented as its nesting, which formatters of these languages keep.
// It is hand-written because the maintained parsers for these languages (tree-sitter's Go
// bindings and grammars) need cgo, and lensgate's binary is built without it.
func blockAround(lines []string, l int) (span, bool) {
	if l < 1 || l > len(lines) {
		return span{}, false
	}
	cur := l - 1
	for cur >= 0 && blank(lines[cur]) {
		cur--
	}
	if cur < 0 {
		return span{}, false
	}
	level := indent(lines[cur])
	header := -1
	for i := cur - 1; i >= 0 && level > 0; i-- {
		if blank(lines[i]) || indent(lines[i]) >= level {
			continue
		}
		level = indent(lines[i])
		if isDefinition(lines[i]) || level == 0 {
			header = i
			break
		}
	}
	if header < 0 {
		if isDefinition(lines[cur]) {
			header = cur
		} else {
			return span{}, false
		}
	}
	hi := indent(lines[header])
	end := len(lines) - 1
	for i := header + 1; i < len(lines); i++ {
		if blank(lines[i]) || indent(lines[i]) > hi {
			continue
		}
		end = i - 1
		if closes(strings.TrimSpace(lines[i])) {
			end = i
		}
		break
	}
	for end > header && blank(lines[end]) {
		end--
	}
	if end < l-1 || end-header+1 > maxSpanLines {
		return span{}, false
	}
	name := strings.TrimSpace(lines[header])
	return span{start: header + 1, end: end + 1, kind: SpanBlock, name: bounded(name, 120)}, true
}

// controlRE recognises a control-flow header, which defRE's "name(...) {" form would otherwise
// take for a function.
var controlRE = regexp.MustCompile(`^(?:\}\s*)?(?:if|else|for|foreach|while|switch|case|catch|try|do|with|elif|except|finally|unless|until|when|match|loop|return|synchronized)\b`)

// isDefinition reports whether a line starts a function, method, class or similar definition.
func isDefinition(line string) bool {
	t := strings.TrimSpace(line)
	return !controlRE.MatchString(t) && defRE.MatchString(t)
}

func closes(t string) bool {
	return strings.HasPrefix(t, "}") || t == "end" || strings.HasPrefix(t, "end ") || strings.HasPrefix(t, ")") || strings.HasPrefix(t, "]")
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// indent is the width of a line's leading white space, a tab counting as four.
func indent(s string) int {
	n := 0
	for _, c := range s {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// merge joins overlapping or touching spans; a merged span keeps the first one's kind and name.
func merge(spans []span) []span {
	if len(spans) == 0 {
		return nil
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := []span{spans[0]}
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start <= last.end+1 {
			if s.end > last.end {
				last.end = s.end
				if s.name != last.name {
					last.name = ""
				}
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// linesOf returns lines start..end (1-based, inclusive) of src, each with its line end.
func linesOf(src []byte, start, end int) string {
	line, from := 1, 0
	for line < start {
		i := bytes.IndexByte(src[from:], '\n')
		if i < 0 {
			return ""
		}
		from += i + 1
		line++
	}
	to := from
	for ; line <= end && to < len(src); line++ {
		i := bytes.IndexByte(src[to:], '\n')
		if i < 0 {
			to = len(src)
			break
		}
		to += i + 1
	}
	return string(src[from:to])
}

func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	out, _ := boundText(s, n)
	return out + "…"
}
