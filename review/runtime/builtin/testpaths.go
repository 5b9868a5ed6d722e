package builtin

// IsTestPath reports whether a path follows a test-file convention of a common ecosystem, as
// the tests check recognises them.
func IsTestPath(path string) bool { return isTestPath(path) }

// IsCodePath reports whether a path is a source file whose behaviour tests are expected to
// cover.
func IsCodePath(path string) bool { return codeExts[ext(path)] }
