// Package block handles the human disclosure block inside a pull request or issue body: the
// begin/end markers, the body core and disclosure core digests (which fail closed on ambiguous
// bodies), rendering the block lines, parsing them back, and splicing a block into a body
// without touching the author's text.
package block
