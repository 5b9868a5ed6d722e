package handlers

import (
	"errors"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/lensgate/lensgate/config"
)

// locateTOML gives YAGA policy problems the line they are about. The TOML policy validator
// reports problems by key path only, while a failing gate names file:line as it does for
// .asdd.yml; a syntax error takes the decoder's own position.
func locateTOML(path string, data []byte, probs config.Problems) config.Problems {
	var lines map[string]int
	prefix := ""
	if path == PyprojectPath {
		prefix = "tool.yaga."
	}
	for i, p := range probs {
		if p.Line > 0 {
			continue
		}
		if p.Key == "" {
			if strings.HasPrefix(p.Message, "invalid Agent review policy TOML") {
				var pe toml.ParseError
				var v map[string]any
				if _, err := toml.Decode(string(data), &v); errors.As(err, &pe) {
					probs[i].Line, probs[i].Column = pe.Position.Line, pe.Position.Col
				}
			}
			continue
		}
		if lines == nil {
			lines = tomlKeyLines(string(data))
		}
		// The key itself, else the nearest enclosing table or key that is written down (a
		// missing key is reported at its table).
		for k := prefix + p.Key; k != ""; {
			if n, ok := lines[k]; ok {
				probs[i].Line = n
				break
			}
			j := strings.LastIndexByte(k, '.')
			if j < 0 {
				break
			}
			k = k[:j]
		}
	}
	return probs
}

// tomlKeyLines maps every dotted key path written in a TOML document, and each of its
// prefixes, to the first line that writes it. It reads headers and key/value lines only and
// skips multi-line strings; it is a locator for messages, not a decoder.
func tomlKeyLines(doc string) map[string]int {
	lines := map[string]int{}
	record := func(path []string, n int) {
		for i := 1; i <= len(path); i++ {
			k := strings.Join(path[:i], ".")
			if _, ok := lines[k]; !ok {
				lines[k] = n
			}
		}
	}
	var table []string
	inString := "" // the delimiter of the multi-line string being skipped
	for i, l := range strings.Split(doc, "\n") {
		n := i + 1
		if inString != "" {
			if strings.Count(l, inString)%2 == 1 {
				inString = ""
			}
			continue
		}
		t := strings.TrimSpace(l)
		switch {
		case t == "" || t[0] == '#':
			continue
		case strings.HasPrefix(t, "[["):
			if end := strings.Index(t, "]]"); end > 0 {
				table = splitKey(t[2:end])
				record(table, n)
			}
		case t[0] == '[':
			if end := strings.IndexByte(t, ']'); end > 0 {
				table = splitKey(t[1:end])
				record(table, n)
			}
		default:
			eq := strings.IndexByte(t, '=')
			if eq <= 0 {
				continue
			}
			record(append(append([]string(nil), table...), splitKey(t[:eq])...), n)
			for _, delim := range []string{`"""`, `'''`} {
				if strings.Count(t[eq:], delim)%2 == 1 {
					inString = delim
				}
			}
		}
	}
	return lines
}

// splitKey splits a dotted TOML key into its parts, unquoting simple quoted parts.
func splitKey(k string) []string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && (p[0] == '"' && p[len(p)-1] == '"' || p[0] == '\'' && p[len(p)-1] == '\'') {
			p = p[1 : len(p)-1]
		}
		parts[i] = p
	}
	return parts
}
