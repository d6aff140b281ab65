// Package evaluators holds the evaluators that run after a message has
// been handled — noticing that a message answers a question a waiting task
// asked, for one — one file each.
package evaluators
