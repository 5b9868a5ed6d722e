package githubfake

import (
	"bytes"
	"strconv"
	"strings"
)

// FilesFromDiff splits a unified git diff into per-file entries whose Patch is the header-less
// hunk text GitHub serves in the files endpoint.
func FilesFromDiff(diff []byte) []File {
	var files []File
	var cur *File
	inHunks := false
	flush := func() {
		if cur != nil {
			cur.Patch = strings.TrimSuffix(cur.Patch, "\n")
			files = append(files, *cur)
		}
	}
	for _, line := range strings.SplitAfter(string(diff), "\n") {
		body := strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(body, "diff --git "):
			flush()
			cur = &File{Status: "modified"}
			inHunks = false
			if _, b, ok := strings.Cut(body, " b/"); ok {
				cur.Filename = b
			}
		case cur == nil:
		case !inHunks && strings.HasPrefix(body, "new file mode"):
			cur.Status = "added"
		case !inHunks && strings.HasPrefix(body, "deleted file mode"):
			cur.Status = "removed"
		case !inHunks && strings.HasPrefix(body, "rename from "):
			cur.Status = "renamed"
			cur.PreviousFilename = strings.TrimPrefix(body, "rename from ")
		case !inHunks && strings.HasPrefix(body, "rename to "):
			cur.Filename = strings.TrimPrefix(body, "rename to ")
		case !inHunks && strings.HasPrefix(body, "+++ "):
			if p := strings.TrimPrefix(body, "+++ "); p != "/dev/null" {
				cur.Filename = strings.TrimPrefix(p, "b/")
			}
		case strings.HasPrefix(body, "@@"):
			inHunks = true
			cur.Patch += line
		case inHunks:
			cur.Patch += line
		}
	}
	flush()
	for i := range files {
		files[i].Additions, files[i].Deletions = countChanges(files[i].Patch)
	}
	return files
}

// DiffFromFiles assembles a git diff from per-file patches.
func DiffFromFiles(files []File) []byte {
	var b bytes.Buffer
	for _, f := range files {
		old := f.Filename
		if f.PreviousFilename != "" {
			old = f.PreviousFilename
		}
		b.WriteString("diff --git a/" + old + " b/" + f.Filename + "\n")
		switch f.Status {
		case "added":
			b.WriteString("new file mode 100644\n--- /dev/null\n+++ b/" + f.Filename + "\n")
		case "removed":
			b.WriteString("deleted file mode 100644\n--- a/" + old + "\n+++ /dev/null\n")
		default:
			b.WriteString("--- a/" + old + "\n+++ b/" + f.Filename + "\n")
		}
		if f.Patch != "" {
			b.WriteString(f.Patch)
			if !strings.HasSuffix(f.Patch, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	return b.Bytes()
}

func countChanges(patch string) (add, del int) {
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
		case strings.HasPrefix(l, "+"):
			add++
		case strings.HasPrefix(l, "-"):
			del++
		}
	}
	return add, del
}

// patchLines is what a file's patch allows inline comments on.
type patchLines struct {
	right     map[int]bool // new-file line numbers shown in the diff (added or context)
	left      map[int]bool // old-file line numbers shown in the diff (removed or context)
	positions int          // number of addressable positions (lines after the first hunk header)
}

// parsePatch indexes a header-less patch. Lines it cannot parse address nothing.
func parsePatch(patch string) patchLines {
	pl := patchLines{right: map[int]bool{}, left: map[int]bool{}}
	var oldLn, newLn int
	started := false
	for _, l := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		if strings.HasPrefix(l, "@@") {
			o, n, ok := hunkStarts(l)
			if !ok {
				continue
			}
			if started {
				pl.positions++ // later hunk headers take a position
			}
			started = true
			oldLn, newLn = o, n
			continue
		}
		if !started {
			continue
		}
		pl.positions++
		switch {
		case strings.HasPrefix(l, "+"):
			pl.right[newLn] = true
			newLn++
		case strings.HasPrefix(l, "-"):
			pl.left[oldLn] = true
			oldLn++
		case strings.HasPrefix(l, `\`):
		default:
			pl.right[newLn] = true
			pl.left[oldLn] = true
			newLn++
			oldLn++
		}
	}
	return pl
}

// hunkStarts reads "@@ -a,b +c,d @@".
func hunkStarts(h string) (oldStart, newStart int, ok bool) {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	num := func(s string) (int, bool) {
		s, _, _ = strings.Cut(s[1:], ",")
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	o, ok1 := num(f[1])
	n, ok2 := num(f[2])
	return o, n, ok1 && ok2
}
