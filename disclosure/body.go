package disclosure

import "github.com/lensgate/lensgate/disclosure/block"

// BodyCoreDigest is the SHA-256 of the body with its disclosure block replaced by the token.
// Ambiguous bodies (unbalanced or duplicated markers, end before begin) are refused.
func BodyCoreDigest(body string) (string, error) { return block.BodyCoreDigest(body) }

// DisclosureCoreDigest is the SHA-256 of the block's own text with the receipt digest masked;
// a body without exactly one block is refused.
func DisclosureCoreDigest(body string) (string, error) { return block.DisclosureCoreDigest(body) }

// PrepareBody adds an empty block to a body that has none, so the body core is fixed before
// the receipt exists. Sign BodyCoreDigest(PrepareBody(body)) and later Splice the real block.
func PrepareBody(body string) (string, error) { return block.Prepare(body) }

// Splice inserts block into body (replacing an existing one) without changing author text or
// the body core digest of the prepared body.
func Splice(body, blk string) (string, error) { return block.Splice(body, blk) }
