// Package docs holds Taskloom's guides (the Markdown files beside this one)
// and the HTTP API's contract, openapi.yaml. It has no code: its test
// keeps the README and the guides honest — the README short, every
// relative link pointing at a file (and heading) in the repository, and no
// reference to a document the repository does not hold.
package docs
