// Command testsummary reads `go test -json` on standard input and prints what a reader of a CI
// log needs: the package lines as go test prints them, the whole output of every failed test,
// every skipped test with the reason it gave, and the counts at the end. It exits 1 when any
// test or package failed, so a pipeline keeps go test's verdict.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

type summary struct {
	out             map[key][]string // output of tests still running
	failed, skipped map[key][]string
	counts          map[string]int
	pkgFailed       bool
}

func main() {
	s := summary{out: map[key][]string{}, failed: map[key][]string{}, skipped: map[key][]string{}, counts: map[string]int{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Println(sc.Text()) // build errors and other plain lines
			continue
		}
		s.add(e)
	}
	s.print()
	if s.pkgFailed || s.counts["fail"] > 0 {
		os.Exit(1)
	}
}

func (s *summary) add(e event) {
	k := key{e.Package, e.Test}
	if e.Test == "" {
		switch {
		case e.Action == "fail":
			s.pkgFailed = true
		case e.Action == "output" && !strings.HasPrefix(e.Output, "=== ") && strings.TrimSpace(e.Output) != "PASS":
			fmt.Print(e.Output) // "ok …", "FAIL …", build failures
		}
		return
	}
	switch e.Action {
	case "output":
		s.out[k] = append(s.out[k], e.Output)
	case "pass", "fail", "skip":
		s.counts[e.Action]++
		switch e.Action {
		case "fail":
			s.failed[k] = s.out[k]
		case "skip":
			s.skipped[k] = s.out[k]
		}
		delete(s.out, k)
	}
}

func (s *summary) print() {
	if len(s.skipped) > 0 {
		fmt.Println("\n== skipped tests, with their reasons")
	}
	for _, k := range sorted(s.skipped) {
		fmt.Printf("%s %s:", k.pkg, k.test)
		for _, l := range s.skipped[k] {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- SKIP") {
				fmt.Printf(" %s", t)
			}
		}
		fmt.Println()
	}
	for _, k := range sorted(s.failed) {
		fmt.Printf("\n== FAIL %s %s\n%s", k.pkg, k.test, strings.Join(s.failed[k], ""))
	}
	fmt.Printf("\ntests: %d passed, %d failed, %d skipped\n", s.counts["pass"], s.counts["fail"], s.counts["skip"])
}

func sorted(m map[key][]string) []key {
	ks := make([]key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].pkg != ks[j].pkg {
			return ks[i].pkg < ks[j].pkg
		}
		return ks[i].test < ks[j].test
	})
	return ks
}
