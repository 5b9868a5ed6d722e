// Package githubfake is a stateful, in-memory stand-in for GitHub's REST API, served by an
// httptest server. Tests drive it with the real go-github v62 client and go-githubapp's client
// creator, then assert on the state it kept (comments, check runs, reviews, bodies, labels) and
// on the calls it counted.
//
// It behaves like GitHub where lensgate's correctness depends on it: installation tokens from a
// signed App JWT, 422 for check-run outputs over GitHub's limits and for review comments on lines
// outside the diff, the exact diff bytes for the diff media type, pagination with Link headers,
// and injected failures (403 secondary rate limit with Retry-After, 429, 5xx, delays). Routes it
// does not implement answer 404 and are recorded, so a test can assert none were called.
//
// By default it is as strict as github.com about freshness: every GET answer carries
// "Cache-Control: private, max-age=60, s-maxage=60", an ETag and Vary, and a 304 repeats them; a
// 304 does not count against the rate limit (X-RateLimit-Used); pull request reads lag pushes and
// edits by DefaultReadLag (WithReadLag, CatchUp); and more than DefaultContentLimit content-creating
// requests of one installation in a minute get the secondary rate limit (WithContentLimit).
package githubfake
