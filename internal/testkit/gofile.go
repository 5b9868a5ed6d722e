package testkit

import (
	"fmt"
	"strings"
)

// LargeGoFile is a Go file of package pkg too large for a model to be given whole: 60 filler
// functions, then Handle, whose last statement is body. A change to body shows whether a
// model is given the enclosing function rather than the file.
func LargeGoFile(pkg, body string) string {
	var b strings.Builder
	b.WriteString("package " + pkg + "\n\n")
	for i := range 60 {
		fmt.Fprintf(&b, "// Helper%d is filler.\nfunc Helper%d() int {\n\treturn %d\n}\n\n", i, i, i)
	}
	b.WriteString("// Handle serves one request.\nfunc Handle(user string) bool {\n\tif user == \"\" {\n\t\treturn false\n\t}\n\t" + body + "\n}\n")
	return b.String()
}
