// Package prompts holds the text Taskloom sends to models, as template
// files embedded in the binary. Keeping them as files makes a prompt change
// a reviewable diff of prose rather than of Go string literals.
package prompts
