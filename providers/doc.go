// Package providers holds the providers that compose the state a model
// call sees — the room's current tasks, for one — one file each.
package providers
