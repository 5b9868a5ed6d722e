// Package lensgate carries files of the repository root into the binary: app.yml, the GitHub
// App manifest, so that `lensgate setup` registers the App from any directory. go:embed reaches
// only files at or below the embedding package, hence this package at the root.
package lensgate

import (
	"bytes"
	_ "embed"
)

//go:embed app.yml
var appManifest []byte

// AppManifest returns app.yml as built into the binary (a copy: callers may change it).
func AppManifest() []byte { return bytes.Clone(appManifest) }
