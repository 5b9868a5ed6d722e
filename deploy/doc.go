// Package deploy holds the container image, Kubernetes manifests, systemd unit and example server
// configuration. Its tests check that they agree with the code: setting names, environment
// variables, ports, probe paths and the build the image runs.
package deploy
