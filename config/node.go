package config

// node is a format-neutral, order-preserving view of a decoded YAML or TOML document, so that
// the policy rules are written once for every file format.
type node struct {
	kind    nodeKind
	str     string
	i       int64
	big     bool // kInt beyond int64 (TOML reads integers of any size); i is then 0
	b       bool
	quoted  bool    // a YAML scalar written in quotes
	entries []entry // kMap, in document order
	items   []*node // kList
	line    int     // position of the value
	col     int
}

type entry struct {
	key  string
	line int // position of the key
	col  int
	val  *node
}

type nodeKind int

const (
	kNull nodeKind = iota
	kString
	kInt
	kFloat
	kBool
	kMap
	kList
	kOther // timestamps and anything else no key accepts
)

func (k nodeKind) String() string {
	switch k {
	case kNull:
		return "null"
	case kString:
		return "a string"
	case kInt:
		return "an integer"
	case kFloat:
		return "a float"
	case kBool:
		return "a boolean"
	case kMap:
		return "a mapping"
	case kList:
		return "a list"
	}
	return "an unsupported value"
}

// get returns the entry for key, if present.
func (n *node) get(key string) (entry, bool) {
	if n == nil || n.kind != kMap {
		return entry{}, false
	}
	for _, e := range n.entries {
		if e.key == key {
			return e, true
		}
	}
	return entry{}, false
}
