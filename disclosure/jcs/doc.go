// Package jcs parses JSON strictly and writes it in the RFC 8785 canonical form (JCS).
//
// The parser refuses what a signed payload must never contain: duplicate object keys, nesting
// deeper than MaxDepth, more than MaxNodes values, invalid UTF-8, lone surrogates, NaN and
// Infinity tokens and oversized integers. Numbers keep their literal so that an integer token
// stays exact and distinct from a float token, which the predicate rules depend on. ParseWith
// applies the same grammar under other limits (deeper nesting, longer integers, no value count,
// lone surrogates kept as BrokenString) for a format read as Python's json module reads it.
// Under Options.Objects the same parser returns each object as an Object, its members in
// document order, for a reader that looks up a few known members of a small document.
package jcs
