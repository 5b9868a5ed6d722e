package config

// ApprovalRequirement is what protected_paths_require asks of a change to a protected path.
type ApprovalRequirement string

// The values of protected_paths_require.
const (
	// RequireNone keeps protected paths advisory: the builtin runtime notes the changed files
	// and nothing is required (the default; "" reads the same).
	RequireNone ApprovalRequirement = "none"
	// RequireCodeOwnerApproval makes the gate wait for an approving review, on the head, by a
	// code owner (CODEOWNERS of the base branch) of each changed protected file.
	RequireCodeOwnerApproval ApprovalRequirement = "code_owner_approval"
)

// CodeOwnerApproval reports whether the gate requires a code owner's approval of changed
// protected paths.
func (r *Repo) CodeOwnerApproval() bool {
	return r != nil && r.ProtectedPathsRequire == RequireCodeOwnerApproval && len(r.ProtectedPaths) > 0
}

// protectedRequireField is the protected_paths_require key.
var protectedRequireField = strField("protected_paths_require", false,
	[]string{string(RequireNone), string(RequireCodeOwnerApproval)},
	func(r *Repo, v string) { r.ProtectedPathsRequire = ApprovalRequirement(v) })
