// Package config reads Taskloom's configuration from the environment
// (docs/configuration.md), in one place, and validates it: a bad value is one error
// naming the variable and what is wrong with it, so start-up can stop with
// one clear line.
package config
