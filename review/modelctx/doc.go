// Package modelctx builds the context a model call reads besides the diff: the repository's
// own instruction files (AGENTS.md, CLAUDE.md, REVIEW.md, Copilot's and Cursor's rule files)
// read from a trusted revision, the enclosing function, method or class of each changed hunk,
// and the issues the pull request says it closes. It holds no I/O of its own: a Tree reads a
// revision of the repository and an IssueReader reads issues, so the App (through GitHub's API)
// and `lensgate review` (through git) gather the same material the same way.
//
// Gather reads the material once per review; Build selects, for one model request, the
// instructions that apply to its files and the code and issues that fit its token budget; the
// Context it returns renders the trusted rules (RenderRules) and the untrusted data
// (RenderData) for a prompt, and says in its Manifest exactly what was given, with digests a
// reader can recompute from the repository.
package modelctx
